/** What translation knows about one Gateway while it builds it, and its compiled routes. */
import type { Gateway, ListenerSet } from "../snapshot";
import type { Limits } from "../validation/limits";
import type { ProxyFlavor } from "../flavor/proxy-flavor";
import type { L4CompiledBackend } from "./l4backendtls";
import type { EgressPolicy } from "./egress";
import type { ResolvedListener } from "./listeners";
import type { Refusals } from "./refused";
import type { BackendClientCertificateResult } from "./gatewaytls";
import type { CompiledRoute } from "./routes";

export interface L4Compiled {
  readonly kind: "TLSRoute" | "TCPRoute" | "UDPRoute";
  readonly namespace: string;
  readonly name: string;
  readonly created: string;
  readonly hostnames?: readonly string[];
  readonly backends: readonly L4CompiledBackend[];
  readonly refProblem?: { readonly reason: string; readonly message: string };
  /** BackendTLSPolicies naming a backend's Service port (they apply behind Terminate listeners). */
  readonly backendTLSPolicies: readonly string[];
}

export type AnyCompiled =
  | ({ readonly l4: false } & CompiledRoute)
  | ({ readonly l4: true } & L4Compiled);

export interface Attachment {
  readonly route: AnyCompiled;
  /** undefined: any host. */
  readonly hostnames?: readonly string[];
}

export interface GatewayContext {
  readonly gateway: Gateway;
  readonly listenerSets: readonly ListenerSet[];
  readonly refusedListenerSets: readonly ListenerSet[];
  readonly listeners: readonly ResolvedListener[];
  readonly attachments: Map<string, Attachment[]>;
  /** What the Gateway's proxies run (class parameters, then the Gateway's). */
  readonly flavor: ProxyFlavor;
  /** The class's KengineParameters spec.limits, defaulted (validation/limits.ts). */
  readonly limits: Limits;
  /** Where its proxies may connect for tenants (egress.ts); the same object while equal. */
  readonly egress: EgressPolicy;
  /** spec.tls.backend.clientCertificateRef, resolved (undefined: none set). */
  readonly backendClientCertificate?: BackendClientCertificateResult;
  /** What this Gateway's proxies refused. */
  readonly refusals: Refusals;
}
