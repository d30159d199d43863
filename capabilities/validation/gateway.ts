/**
 * Rules for Gateway and ListenerSet listeners: values no proxy of ours can run, whatever else
 * is in the cluster. Admission refuses them; the translator (translate/listeners.ts) calls the
 * same function and marks such a listener Accepted=False (PortUnavailable for a reserved port,
 * UnsupportedValue otherwise).
 *
 * Not checked here (the spec wants them in listener status): conflicts between listeners,
 * missing or unusable certificates, unsupported protocols and route kinds, refused
 * ListenerSets.
 */
import { RESERVED_PORTS } from "./ports";
import { Collector, items } from "./budget";
import { ACME_ISSUER_OPTION, acmeIssuerOf } from "./acme";
import { FieldProblem, display, truncate } from "./regex";
import { ListenerFiltersLike, listenerFilterProblems } from "./listenerfilters";

export interface ListenerLike {
  readonly name?: string;
  readonly port?: number;
  readonly protocol?: string;
  readonly tls?: { readonly options?: Readonly<Record<string, string>> };
  readonly filters?: ListenerFiltersLike;
}
export interface GatewayLike {
  readonly spec?: { readonly listeners?: readonly ListenerLike[] };
}

/** The problems of one listener at `at` (e.g. `spec.listeners[0]`). */
export function listenerProblems(at: string, l: ListenerLike, c = new Collector()): FieldProblem[] {
  if (typeof l?.port === "number" && RESERVED_PORTS.includes(l.port)) {
    c.add([
      {
        path: `${at}.port`,
        value: String(l.port),
        message: `is reserved by the Kengine proxy pod (${RESERVED_PORTS.join(", ")}: Caddy's default admin port, management and readiness): choose another port`,
      },
    ]);
  }
  const options = l?.tls?.options;
  if (options && typeof options === "object") {
    for (const key of Object.keys(options).slice(0, 64)) {
      if (!c.spend(`${at}.tls.options`)) break;
      // automatic HTTPS (validation/acme.ts): the one option we understand
      if (key === ACME_ISSUER_OPTION && acmeIssuerOf(l as ListenerLike & { protocol: string }))
        continue;
      c.add([
        {
          path: `${at}.tls.options[${JSON.stringify(truncate(key, 48))}]`,
          value: display(options[key] ?? ""),
          message:
            key === ACME_ISSUER_OPTION
              ? "asks for an automatic certificate, which only an HTTPS listener that terminates TLS and has no certificateRefs can have: remove it or the certificateRefs"
              : `is not a TLS option the Kengine proxy understands (it supports only ${ACME_ISSUER_OPTION}): remove it`,
        },
      ]);
    }
  }
  listenerFilterProblems(at, l?.protocol, l?.filters, c);
  return c.problems();
}

/** Every listener problem of a Gateway or ListenerSet (both keep listeners in spec.listeners). */
export function gatewayProblems(obj: GatewayLike, c = new Collector()): FieldProblem[] {
  items(obj.spec?.listeners).forEach((l, i) => {
    if (!c.done) listenerProblems(`spec.listeners[${i}]`, l, c);
  });
  return c.problems();
}

/* ------------------------------------------------------------------ spec.tls */

/** A reference as the Gateway writes it (group and kind may be left out on a Secret ref). */
interface RefLike {
  readonly group?: string;
  readonly kind?: string;
  readonly name?: string;
  readonly namespace?: string;
}

/**
 * Why a frontend `caCertificateRefs` entry names a kind we cannot read, or undefined. Core
 * ConfigMaps (the CA bundle under `ca.crt`) and ClusterTrustBundles are supported; the spec reports another kind
 * as `ResolvedRefs=False/InvalidCACertificateKind` on every HTTPS listener it applies to.
 */
export function caCertificateRefKindProblem(ref: RefLike): string | undefined {
  const group = ref.group ?? "";
  if (group === "" && ref.kind === "ConfigMap") return undefined;
  if (group === "certificates.k8s.io" && ref.kind === "ClusterTrustBundle") return undefined;
  return `${ref.kind ?? ""}.${group || "core"} is not a supported CA certificate kind (only core ConfigMaps with ca.crt and certificates.k8s.io ClusterTrustBundles)`;
}

/**
 * Why `spec.tls.backend.clientCertificateRef` names a kind we cannot read, or undefined: only
 * core Secrets (tls.crt and tls.key); status `ResolvedRefs=False/InvalidClientCertificateRef`.
 */
export function clientCertificateRefKindProblem(ref: RefLike): string | undefined {
  const group = ref.group ?? "";
  const kind = ref.kind ?? "Secret";
  if (group === "" && kind === "Secret") return undefined;
  return `${kind}.${group || "core"} is not a supported client certificate kind (only core Secrets with tls.crt and tls.key)`;
}

export interface GatewayTLSLike {
  readonly spec?: {
    readonly tls?: {
      readonly backend?: { readonly clientCertificateRef?: RefLike };
      readonly frontend?: {
        readonly default?: { readonly validation?: FrontendValidationLike };
        readonly perPort?: readonly {
          readonly port?: number;
          readonly tls?: { readonly validation?: FrontendValidationLike };
        }[];
      };
    };
  };
}
interface FrontendValidationLike {
  readonly caCertificateRefs?: readonly RefLike[];
  readonly mode?: string;
}

/**
 * What the Gateway's `spec.tls` alone says its status will report (admission stores the
 * Gateway and shows these as kubectl warnings; the translator reports the same in status).
 */
export function gatewayTLSWarnings(obj: GatewayTLSLike): string[] {
  const tls = obj.spec?.tls;
  const out: string[] = [];
  const client = tls?.backend?.clientCertificateRef;
  const clientProblem = client && clientCertificateRefKindProblem(client);
  if (clientProblem)
    out.push(
      `spec.tls.backend.clientCertificateRef: ${clientProblem}; its status will say ResolvedRefs=False/InvalidClientCertificateRef`,
    );
  const validations: [string, FrontendValidationLike | undefined][] = [
    ["spec.tls.frontend.default.validation", tls?.frontend?.default?.validation],
    ...items(tls?.frontend?.perPort).map(
      (p, i) => [`spec.tls.frontend.perPort[${i}].tls.validation`, p?.tls?.validation] as const,
    ),
  ] as [string, FrontendValidationLike | undefined][];
  let insecure = false;
  for (const [at, v] of validations) {
    if (!v) continue;
    if (v.mode === "AllowInsecureFallback") insecure = true;
    items(v.caCertificateRefs).forEach((ref, i) => {
      const problem = caCertificateRefKindProblem(ref ?? {});
      if (problem)
        out.push(
          `${at}.caCertificateRefs[${i}]: ${problem}; the HTTPS listeners it applies to will say ResolvedRefs=False/InvalidCACertificateKind`,
        );
    });
  }
  if (insecure)
    out.push(
      "spec.tls.frontend: mode AllowInsecureFallback accepts HTTPS clients without a valid client certificate; its status will say InsecureFrontendValidationMode=True",
    );
  return out;
}
