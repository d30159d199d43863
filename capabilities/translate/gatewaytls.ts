/**
 * Gateway `spec.tls` (Gateway API v1.6.1, apis/v1/gateway_types.go): client certificate
 * validation on HTTPS listeners (`frontend`) and the client certificate the proxy presents to
 * TLS backends (`backend`). Pure, derived from the snapshot only.
 *
 * Frontend: `perPort[port]` overrides `default` for every HTTPS listener on that port (a
 * ListenerSet's too: they share the proxy's port). Each `caCertificateRefs` entry must be a
 * core ConfigMap with PEM certificates under `ca.crt` (another kind: InvalidCACertificateKind;
 * missing, or no usable `ca.crt`: InvalidCACertificateRef), in the Gateway's namespace or
 * allowed by a ReferenceGrant (RefNotPermitted). Any invalid ref: the listeners say
 * ResolvedRefs=False with the first problem's reason and are served with the valid CAs; all
 * invalid: also Accepted=False/NoValidCACertificate and not served (never served without the
 * verification asked for). Mode AllowValidOnly (default) requires a client certificate that
 * verifies; AllowInsecureFallback asks for one and accepts the connection whatever comes, and
 * the Gateway says InsecureFrontendValidationMode=True/ConfigurationChanged.
 *
 * Backend: `clientCertificateRef` must be a core Secret with `tls.crt` and `tls.key`, in the
 * Gateway's namespace or allowed by a ReferenceGrant; otherwise the Gateway says
 * ResolvedRefs=False (InvalidClientCertificateRef or RefNotPermitted) and backends are reached
 * without a client certificate.
 */
import { isTrustBundleRef, trustBundleCertificates } from "./trustbundle";
import { checkKeyPair } from "../validation/keypair";
import { FrontendTLSValidation, GATEWAY_GROUP, Gateway, Snapshot } from "../snapshot";
import {
  caCertificateRefKindProblem,
  clientCertificateRefKindProblem,
} from "../validation/gateway";
import { pemCertificates } from "./backendtls";
import { ListenerReason } from "./conditions";
import { refPermitted } from "./refs";

export type FrontendValidationMode = "AllowValidOnly" | "AllowInsecureFallback";

/** How an HTTPS listener's proxy checks client certificates. */
export interface ClientValidation {
  readonly mode: FrontendValidationMode;
  /** Trusted CA certificates, base64 DER. */
  readonly caCertificates: readonly string[];
}

export interface FrontendValidationResult {
  /** undefined when no caCertificateRef is usable (the listener is not served). */
  readonly validation?: ClientValidation;
  /** The first invalid reference (ResolvedRefs=False with this reason), with every problem. */
  readonly problem?: { readonly reason: string; readonly message: string };
}

/** The validation settings for HTTPS listeners on `port`, or undefined when none apply. */
export function frontendValidationConfig(
  gw: Gateway,
  port: number,
): { readonly at: string; readonly validation: FrontendTLSValidation } | undefined {
  const frontend = gw.spec.tls?.frontend;
  if (!frontend) return undefined;
  const perPort = (frontend.perPort ?? []).findIndex(p => p.port === port);
  if (perPort >= 0) {
    const v = frontend.perPort![perPort].tls?.validation;
    return v
      ? { at: `spec.tls.frontend.perPort[${perPort}].tls.validation`, validation: v }
      : undefined;
  }
  const v = frontend.default?.validation;
  return v ? { at: "spec.tls.frontend.default.validation", validation: v } : undefined;
}

/** Client certificate validation for the Gateway's HTTPS listeners on `port`. */
export function frontendValidation(
  s: Snapshot,
  gw: Gateway,
  port: number,
): FrontendValidationResult | undefined {
  const config = frontendValidationConfig(gw, port);
  if (!config) return undefined;
  const gwNs = gw.metadata.namespace ?? "";
  const problems: { reason: string; message: string }[] = [];
  const cas: string[] = [];
  (config.validation.caCertificateRefs ?? []).forEach((ref, i) => {
    const at = `${config.at}.caCertificateRefs[${i}]`;
    const ns = ref.namespace ?? gwNs;
    const id = `${ns}/${ref.name}`;
    if (isTrustBundleRef(ref)) {
      const bundle = trustBundleCertificates(s, ref);
      if (bundle.ok) cas.push(...bundle.value.filter(c => !cas.includes(c)));
      else
        problems.push({
          reason: ListenerReason.InvalidCACertificateRef,
          message: `${at}: ${bundle.error}`,
        });
      return;
    }
    const kindProblem = caCertificateRefKindProblem(ref);
    if (kindProblem) {
      problems.push({
        reason: ListenerReason.InvalidCACertificateKind,
        message: `${at} ${id}: ${kindProblem}`,
      });
      return;
    }
    if (
      !refPermitted(
        s,
        { group: GATEWAY_GROUP, kind: "Gateway", namespace: gwNs },
        { group: "", kind: "ConfigMap", namespace: ns, name: ref.name },
      )
    ) {
      problems.push({
        reason: ListenerReason.RefNotPermitted,
        message: `${at}: ConfigMap ${id} is not permitted by any ReferenceGrant in namespace ${ns}`,
      });
      return;
    }
    const cm = s.objects.ConfigMap.get(id);
    const pem = cm?.data?.["ca.crt"];
    const parsed = pem === undefined ? [] : pemCertificates(pem);
    if (!cm || parsed.length === 0) {
      problems.push({
        reason: ListenerReason.InvalidCACertificateRef,
        message: cm
          ? `${at}: ConfigMap ${id} has no PEM certificate under ca.crt`
          : `${at}: ConfigMap ${id} not found`,
      });
      return;
    }
    cas.push(...parsed.filter(c => !cas.includes(c)));
  });
  const mode: FrontendValidationMode =
    config.validation.mode === "AllowInsecureFallback" ? "AllowInsecureFallback" : "AllowValidOnly";
  return {
    ...(cas.length > 0 && { validation: { mode, caCertificates: cas } }),
    ...(problems.length > 0 && {
      problem: { reason: problems[0].reason, message: problems.map(p => p.message).join("; ") },
    }),
  };
}

/** Whether the Gateway sets AllowInsecureFallback anywhere (default or a port). */
export function insecureFrontendValidation(gw: Gateway): boolean {
  const f = gw.spec.tls?.frontend;
  return [f?.default?.validation, ...(f?.perPort ?? []).map(p => p.tls?.validation)].some(
    v => v?.mode === "AllowInsecureFallback",
  );
}

export const GatewayTLSReason = {
  InvalidClientCertificateRef: "InvalidClientCertificateRef",
  RefNotPermitted: "RefNotPermitted",
  ListenersNotResolved: "ListenersNotResolved",
  ResolvedRefs: "ResolvedRefs",
  ConfigurationChanged: "ConfigurationChanged",
  /** The Gateway's proxy flavour cannot present a client certificate to backends. */
  UnsupportedValue: "UnsupportedValue",
} as const;

export type BackendClientCertificateResult =
  | {
      readonly ok: true;
      readonly certificatePem: string;
      readonly keyPem: string;
      readonly id: string;
    }
  | { readonly ok: false; readonly reason: string; readonly message: string };

/** `spec.tls.backend.clientCertificateRef`, resolved; undefined when the Gateway sets none. */
export function backendClientCertificate(
  s: Snapshot,
  gw: Gateway,
): BackendClientCertificateResult | undefined {
  const ref = gw.spec.tls?.backend?.clientCertificateRef;
  if (!ref) return undefined;
  const at = "spec.tls.backend.clientCertificateRef";
  const gwNs = gw.metadata.namespace ?? "";
  const ns = ref.namespace ?? gwNs;
  const id = `${ns}/${ref.name}`;
  const fail = (reason: string, message: string): BackendClientCertificateResult => ({
    ok: false,
    reason,
    message: `${at}: ${message}`,
  });
  const kindProblem = clientCertificateRefKindProblem(ref);
  if (kindProblem)
    return fail(GatewayTLSReason.InvalidClientCertificateRef, `${id}: ${kindProblem}`);
  if (
    !refPermitted(
      s,
      { group: GATEWAY_GROUP, kind: "Gateway", namespace: gwNs },
      { group: "", kind: "Secret", namespace: ns, name: ref.name },
    )
  )
    return fail(
      GatewayTLSReason.RefNotPermitted,
      `Secret ${id} is not permitted by any ReferenceGrant in namespace ${ns}`,
    );
  const secret = s.objects.Secret.get(id);
  if (!secret) return fail(GatewayTLSReason.InvalidClientCertificateRef, `Secret ${id} not found`);
  const decode = (b64: string | undefined) =>
    b64 === undefined ? undefined : Buffer.from(b64, "base64").toString("utf8");
  const certificatePem = decode(secret.data?.["tls.crt"]);
  const keyPem = decode(secret.data?.["tls.key"]);
  if (!certificatePem || !keyPem)
    return fail(
      GatewayTLSReason.InvalidClientCertificateRef,
      `Secret ${id} must hold tls.crt and tls.key`,
    );
  const pair = checkKeyPair(certificatePem, keyPem);
  if (!pair.ok)
    return fail(
      GatewayTLSReason.InvalidClientCertificateRef,
      `Secret ${id} cannot be used: ${pair.error}`,
    );
  return { ok: true, certificatePem, keyPem, id };
}
