/**
 * Automatic HTTPS: which listeners ask for an ACME certificate, which names can be
 * ordered, and the Secret that holds each name's certificate and order state. One rule shared
 * by admission (warnings), translation (listener status, certificate, HTTP-01 answers) and the
 * ACME manager (what to order).
 */
import { createHash } from "node:crypto";
import { FieldProblem, display, truncate } from "./regex";

/** The listener's `tls.options` key that names the issuer (KengineParameters spec.acme.issuers). */
export const ACME_ISSUER_OPTION = "kengine.io/acme-issuer";

/** Annotations of a certificate Secret the ACME manager keeps (one Secret per name). */
export const AcmeAnnotation = {
  name: "gateway.kengine.io/acme-name",
  issuer: "gateway.kengine.io/acme-issuer",
  /** Pending | Valid | Failed */
  state: "gateway.kengine.io/acme-state",
  /** The CA's error word for word, or what is under way. */
  message: "gateway.kengine.io/acme-message",
  /** The order in progress (a restarted controller resumes it). */
  order: "gateway.kengine.io/acme-order",
  /** JSON object token → key authorization: the HTTP-01 answers the proxies serve. */
  challenges: "gateway.kengine.io/acme-challenges",
  renewAt: "gateway.kengine.io/acme-renew-at",
  notAfter: "gateway.kengine.io/acme-not-after",
  /** No request to the CA before this time (back-off, Retry-After). */
  retryAt: "gateway.kengine.io/acme-retry-at",
  failures: "gateway.kengine.io/acme-failures",
} as const;

/** Label of every Secret the ACME manager writes: `certificate` or `account`. */
export const ACME_LABEL = "gateway.kengine.io/acme";
/** The `app.kubernetes.io/managed-by` value on every Secret the ACME manager writes. */
export const ACME_MANAGED_BY = "kengine-gateway";

/** The labels the ACME manager puts on the Secrets it writes. */
export const acmeSecretLabels = (role: "certificate" | "account"): Record<string, string> => ({
  [ACME_LABEL]: role,
  "app.kubernetes.io/managed-by": ACME_MANAGED_BY,
});

interface SecretLike {
  readonly metadata?: {
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
}

/** Whether a Secret carries the labels the ACME manager writes for `role`. */
export const writtenByController = (
  secret: SecretLike | undefined,
  role: "certificate" | "account",
): boolean =>
  secret?.metadata?.labels?.[ACME_LABEL] === role &&
  secret.metadata.labels["app.kubernetes.io/managed-by"] === ACME_MANAGED_BY;

/**
 * Whether `secret` is the one the ACME manager keeps for `hostname`: its labels and the name
 * annotation it writes. Callers read it only at `<Gateway namespace>/acmeSecretName(hostname)`,
 * so the namespace and the exact name are checked by where it is looked up.
 */
export const isCertificateSecretFor = (secret: SecretLike | undefined, hostname: string): boolean =>
  writtenByController(secret, "certificate") &&
  secret?.metadata?.annotations?.[AcmeAnnotation.name]?.toLowerCase() === hostname.toLowerCase();

/** Why a certificate Secret found at the name's place is not used (it is not the manager's). */
export const foreignSecretMessage = (id: string): string =>
  `Secret ${id} exists but was not written by the controller (no labels ${ACME_LABEL}: certificate, ` +
  `app.kubernetes.io/managed-by: ${ACME_MANAGED_BY}): it is neither served nor overwritten; ` +
  "delete it to let the controller order the name";

export const HTTP01_PREFIX = "/.well-known/acme-challenge/";

interface ListenerLike {
  readonly hostname?: string;
  readonly protocol: string;
  readonly tls?: {
    readonly mode?: string;
    readonly certificateRefs?: readonly unknown[];
    readonly options?: Readonly<Record<string, string>>;
  };
}

/** The issuer an HTTPS listener with no certificateRefs asks for, if it asks for one. */
export function acmeIssuerOf(l: ListenerLike): string | undefined {
  if (l.protocol !== "HTTPS" || (l.tls?.mode ?? "Terminate") !== "Terminate") return undefined;
  if ((l.tls?.certificateRefs ?? []).length > 0) return undefined;
  const issuer = l.tls?.options?.[ACME_ISSUER_OPTION];
  return issuer === undefined || issuer === "" ? undefined : issuer;
}

/** Why the listener's name cannot be ordered (undefined: it can). */
export function acmeNameProblem(l: ListenerLike): string | undefined {
  const h = l.hostname;
  if (h === undefined || h === "")
    return "an automatic certificate needs the listener's hostname (the name to order)";
  if (h.startsWith("*."))
    return `wildcard name ${h} needs the DNS-01 challenge, which is not supported: name each host in its own listener, or reference a certificate`;
  return undefined;
}

/** The Secret (in the listener owner's namespace) holding the certificate for `hostname`. */
export function acmeSecretName(hostname: string): string {
  const base = `kengine-acme-${hostname.toLowerCase()}`;
  if (base.length <= 253) return base;
  const h = createHash("sha256").update(hostname).digest("hex").slice(0, 16);
  return `${base.slice(0, 253 - 17).replace(/[.-]+$/, "")}-${h}`;
}

/** The HTTP-01 answers stored in a certificate Secret's annotation (invalid JSON: none). */
export function storedChallenges(
  annotations: Readonly<Record<string, string>> | undefined,
): ReadonlyMap<string, string> {
  const raw = annotations?.[AcmeAnnotation.challenges];
  if (!raw) return new Map();
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (typeof parsed !== "object" || parsed === null) return new Map();
    return new Map(
      Object.entries(parsed).filter(
        (e): e is [string, string] =>
          /^[A-Za-z0-9_-]{1,256}$/.test(e[0]) &&
          typeof e[1] === "string" &&
          /^[A-Za-z0-9_.-]{1,512}$/.test(e[1]),
      ),
    );
  } catch {
    return new Map();
  }
}

/**
 * Which Gateway namespaces may use an issuer (`spec.acme.issuers[].allowedNamespaces`): `Same`
 * (the default) is the namespace of the KengineParameters that declares it, `All` every
 * namespace, `Selector` the namespaces whose labels match `selector`.
 */
export const ACME_GRANT_FROM = ["Same", "All", "Selector"] as const;
export type AcmeGrantFrom = (typeof ACME_GRANT_FROM)[number];

export interface AcmeGrant {
  readonly from: AcmeGrantFrom;
  readonly selector?: {
    readonly matchLabels?: Readonly<Record<string, string>>;
    readonly matchExpressions?: readonly {
      readonly key: string;
      readonly operator: string;
      readonly values?: readonly string[];
    }[];
  };
}

/**
 * The grant an issuer declares. Anything but a well-formed `All` or `Selector` (admission
 * refuses the rest) reads as `Same`: a malformed grant never widens who may use the issuer.
 */
export function acmeGrantOf(issuer: unknown): AcmeGrant {
  const g = (issuer as { allowedNamespaces?: unknown } | undefined)?.allowedNamespaces as
    | { from?: unknown; selector?: unknown }
    | undefined;
  if (g?.from === "All") return { from: "All" };
  if (g?.from === "Selector" && typeof g.selector === "object" && g.selector !== null)
    return { from: "Selector", selector: g.selector as AcmeGrant["selector"] };
  return { from: "Same" };
}

/** The grant in words, for the listener message of a namespace it leaves out. */
export function acmeGrantText(grant: AcmeGrant, parametersNamespace: string): string {
  if (grant.from === "Same") return `from: Same, namespace ${parametersNamespace} only`;
  if (grant.from === "All") return "from: All";
  return `from: Selector, ${JSON.stringify(grant.selector ?? {})}`;
}

const SELECTOR_OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist"];

function grantProblems(at: string, raw: unknown): FieldProblem[] {
  if (raw === undefined) return [];
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    return [{ path: at, value: truncate(display(raw)), message: "must be an object" }];
  const g = raw as { from?: unknown; selector?: unknown };
  const problems: FieldProblem[] = [];
  const from = g.from ?? "Same";
  if (!(ACME_GRANT_FROM as readonly unknown[]).includes(from))
    problems.push({
      path: `${at}.from`,
      value: truncate(display(from)),
      message: `accepted: ${ACME_GRANT_FROM.join(", ")}`,
    });
  if (from === "Selector") {
    const sel = g.selector as { matchLabels?: unknown; matchExpressions?: unknown } | undefined;
    if (typeof sel !== "object" || sel === null || Array.isArray(sel))
      problems.push({
        path: `${at}.selector`,
        value: truncate(display(sel)),
        message: "from: Selector needs a label selector (matchLabels and/or matchExpressions)",
      });
    else {
      const exprs = Array.isArray(sel.matchExpressions) ? sel.matchExpressions : [];
      if (Object.keys(sel.matchLabels ?? {}).length === 0 && exprs.length === 0)
        problems.push({
          path: `${at}.selector`,
          value: "{}",
          message: "an empty selector would select every namespace: say from: All if that is meant",
        });
      exprs.forEach((e: unknown, j) => {
        const op = (e as { operator?: unknown } | null)?.operator;
        if (!SELECTOR_OPERATORS.includes(op as string))
          problems.push({
            path: `${at}.selector.matchExpressions[${j}].operator`,
            value: truncate(display(op)),
            message: `accepted: ${SELECTOR_OPERATORS.join(", ")}`,
          });
      });
    }
  } else if (g.selector !== undefined)
    problems.push({
      path: `${at}.selector`,
      value: truncate(display(g.selector)),
      message: `applies only with from: Selector (from is ${String(from)})`,
    });
  return problems;
}

/** What admission refuses in KengineParameters `spec.acme` beyond the CRD's schema. */
export function acmeParametersProblems(
  acme: unknown,
): { path: string; value: string; message: string }[] {
  const issuers = (acme as { issuers?: unknown } | undefined)?.issuers;
  if (!Array.isArray(issuers)) return [];
  const problems: { path: string; value: string; message: string }[] = [];
  const names = new Set<string>();
  issuers.forEach((raw: unknown, i) => {
    const at = `spec.acme.issuers[${i}]`;
    const it = (raw ?? {}) as Record<string, unknown>;
    if (typeof it["name"] === "string") {
      if (names.has(it["name"]))
        problems.push({
          path: `${at}.name`,
          value: it["name"],
          message: "issuer names must be unique",
        });
      names.add(it["name"]);
    }
    if (it["challenge"] === "tls-alpn-01")
      problems.push({
        path: `${at}.challenge`,
        value: "tls-alpn-01",
        message:
          "not supported yet: only http-01 (answered by the Gateway's proxies on port 80) is built",
      });
    const server = it["server"];
    if (typeof server === "string") {
      let ok = false;
      try {
        ok = new URL(server).protocol === "https:";
      } catch {
        ok = false;
      }
      if (!ok)
        problems.push({
          path: `${at}.server`,
          value: server,
          message: "must be an https:// URL (the ACME directory)",
        });
    }
    problems.push(...grantProblems(`${at}.allowedNamespaces`, it["allowedNamespaces"]));
    const bundle = it["caBundle"];
    if (typeof bundle === "string" && !bundle.includes("-----BEGIN CERTIFICATE-----"))
      problems.push({
        path: `${at}.caBundle`,
        value: bundle.slice(0, 40),
        message: "must hold PEM certificates",
      });
  });
  return problems;
}

/** Why a ListenerSet listener naming an ACME issuer gets no certificate (translate/listeners.ts). */
export const ACME_LISTENERSET_MESSAGE =
  "automatic certificates are ordered (and HTTP-01 answered) only for a Gateway's own listeners, not a ListenerSet's: " +
  "reference a certificate (tls.certificateRefs) or ask the Gateway's owner for the listener";

/**
 * The kubectl warnings of a ListenerSet whose listeners name an ACME issuer: stored (the spec
 * answers in status), with what the listener's status will say.
 */
export function listenerSetAcmeWarnings(ls: {
  readonly spec?: { readonly listeners?: readonly unknown[] };
}): string[] {
  const listeners = Array.isArray(ls?.spec?.listeners) ? ls.spec.listeners : [];
  return listeners.slice(0, 64).flatMap((raw, i) => {
    const l = raw as ListenerLike;
    return typeof l?.protocol === "string" && acmeIssuerOf(l) !== undefined
      ? [
          `spec.listeners[${i}].tls.options["${ACME_ISSUER_OPTION}"]: ${ACME_LISTENERSET_MESSAGE}; stored, its status will say ResolvedRefs=False/InvalidCertificateRef`,
        ]
      : [];
  });
}

/**
 * ACME issuers are platform-owned: only the parameters a GatewayClass references declare them
 * (and grant them to namespaces). A Gateway's own parameters (spec.infrastructure.parametersRef,
 * writable by the Gateway's namespace) that set `spec.acme` are refused whole, like other
 * class-only fields (validation/overrides.ts).
 */
export function acmeGatewayParametersProblems(
  gatewaySpec: { readonly acme?: unknown } | undefined,
): FieldProblem[] {
  const acme = gatewaySpec?.acme;
  if (acme === undefined) return [];
  return [
    {
      path: "spec.acme",
      value: truncate(display(acme)),
      message:
        "is platform-owned: ACME issuers come only from the GatewayClass's parameters, which grant each issuer to namespaces (spec.acme.issuers[].allowedNamespaces); remove spec.acme here",
    },
  ];
}

/**
 * The HTTPS listeners the Ingress stage made for an Ingress `tls` entry without a Secret and
 * granted the host to (docs/ingress.md, "Automatic HTTPS"): the only ListenerSet listeners
 * ordered for and answered. Object identity, filled only by the stage for the objects it built,
 * so no API object (whatever its name, labels, annotations or owner references) is ever in it.
 */
const ingressAcmeListeners = new WeakSet<object>();

/** The Ingress stage's mark on a synthetic listener (`on`: granted the host or not). */
export function markIngressAcmeListener(listener: object, on: boolean): void {
  if (on) ingressAcmeListeners.add(listener);
  else ingressAcmeListeners.delete(listener);
}

/** Whether the Ingress stage made this listener and granted it its host. */
export const isIngressAcmeListener = (listener: object): boolean =>
  ingressAcmeListeners.has(listener);

/** The annotation naming the ACME issuer of an IngressClass or an Ingress (the Ingress wins). */
export const INGRESS_ACME_ANNOTATION = ACME_ISSUER_OPTION;

/** Why an Ingress listener's host is not ordered: a listener of the Gateway itself names it. */
export const ingressPlatformNameMessage = (host: string, gateway: string): string =>
  `host ${host} is named by a listener of Gateway ${gateway}: the platform's certificate, not ordered for an Ingress`;

/**
 * The kubectl warnings of an Ingress's `tls` entries without a Secret, decided from the object
 * and its class's issuer annotation (`classIssuer`) alone: no issuer named, or a host that
 * cannot be ordered. Whether the issuer exists and is granted is said later in an Event.
 */
export function ingressAcmeWarnings(
  ingress: {
    readonly metadata?: { readonly annotations?: Readonly<Record<string, string>> };
    readonly spec?: {
      readonly tls?: readonly {
        readonly hosts?: readonly string[];
        readonly secretName?: string;
      }[];
    };
  },
  classIssuer: string | undefined,
): string[] {
  const tls = Array.isArray(ingress?.spec?.tls) ? ingress.spec.tls : [];
  const own = ingress?.metadata?.annotations?.[ACME_ISSUER_OPTION];
  const issuer = (typeof own === "string" && own) || classIssuer;
  return tls.slice(0, 64).flatMap((t, i) => {
    if (!t || typeof t !== "object" || (typeof t.secretName === "string" && t.secretName))
      return [];
    if (!issuer)
      return [
        `spec.tls[${i}]: no secretName and neither the IngressClass nor the Ingress names an ACME issuer (annotation ${ACME_ISSUER_OPTION}): the entry is not served`,
      ];
    const hosts: readonly (string | undefined)[] =
      Array.isArray(t.hosts) && t.hosts.length > 0 ? t.hosts : [undefined];
    return hosts.slice(0, 64).flatMap((h, j) => {
      const problem = acmeNameProblem({ hostname: h, protocol: "HTTPS" });
      return problem ? [`spec.tls[${i}].hosts[${j}]: ${problem}; not served`] : [];
    });
  });
}
