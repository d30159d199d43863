/**
 * BackendTLSPolicy on layer-4 routes (Gateway API v1.7.0, BackendTLSPolicyTLSRouteTerminate):
 * a TLSRoute behind a listener in mode Terminate re-encrypts to a backend whose Service port a
 * policy covers (caddy-l4 `proxy` upstream `tls`: the policy's CAs, `validation.hostname` as
 * SNI and verified name). Passthrough listeners forward the client's own TLS, TCP and UDP
 * routes carry no TLS the proxy could originate: the policy does not apply there, and those
 * routes do not make the Gateway an ancestor of the policy.
 *
 * caddy-l4's upstream TLS (Caddy's reverse_proxy TLSConfig) checks the certificate against the
 * server name only, on every flavour: a policy with `subjectAltNames` cannot be run as written,
 * so its Service port refuses connections there (never a weaker check) and the policy is
 * `Accepted=False/Invalid` for that Gateway. The same for a policy that cannot be applied at
 * all (its decision is not ok, backendtls.ts).
 */
import { L4BackendIR } from "../ir";
import { BackendTLSDecision } from "./backendtls";

/** A compiled L4 backend before the listener is known: the policy decision rides along. */
export interface L4CompiledBackend extends L4BackendIR {
  readonly backendTLS?: BackendTLSDecision;
}

export const L4_SANS_UNSUPPORTED =
  "spec.validation.subjectAltNames: TLSRoute backends are verified against the hostname only (caddy-l4 upstream TLS)";

/** Whether a TLS listener (of this mode) re-encrypts to backends a policy covers. */
export const reencrypts = (protocol: string, mode: string | undefined): boolean =>
  protocol === "TLS" && (mode ?? "Terminate") === "Terminate";

/**
 * The IR backends of one L4 route behind one listener: with `reencrypt`, a backend a policy
 * covers gets the policy's TLS, or no endpoints (refused) when the policy cannot be run as
 * written; without, the policy is ignored.
 */
export function l4BackendsIR(
  backends: readonly L4CompiledBackend[],
  reencrypt: boolean,
): readonly L4BackendIR[] {
  return backends.map(({ backendTLS, ...b }) => {
    if (!reencrypt || !backendTLS) return b;
    if (!backendTLS.ok || backendTLS.tls.subjectAltNames) return { ...b, endpoints: [] };
    const { serverName, caCertificates } = backendTLS.tls;
    return { ...b, tls: { serverName, ...(caCertificates && { caCertificates }) } };
  });
}
