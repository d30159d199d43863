/**
 * Proxy flavours: which proxy binary a Gateway's pods run (KengineParameters
 * `spec.proxy.flavor`), and what each can do. The one place that maps a flavour to its
 * capabilities and a capability to the Gateway API features that need it (docs/features.md): the
 * translator emits, the GatewayClass advertises, and a route is refused only from here. Pure.
 */
import { SUPPORTED_FEATURES } from "./features";

/**
 * - `Bundled` (default): the proxy this project builds and ships (ghcr.io/kengine-gateway/kengine:
 *   Caddy 2.11.9 + caddy-l4 + the modules in proxy/).
 * - `Caddy`: stock Caddy ≥ 2.11.3 with caddy-l4, no modules of ours.
 * - `Kengine`: Kengine (Caddy ≈ 2.8) with caddy-l4, no modules of ours.
 */
export type ProxyFlavor = "Bundled" | "Caddy" | "Kengine";

export const PROXY_FLAVORS: readonly ProxyFlavor[] = ["Bundled", "Caddy", "Kengine"];
export const DEFAULT_PROXY_FLAVOR: ProxyFlavor = "Bundled";

export interface ProxyCapabilities {
  /**
   * Our listener network (proxy/listener): one kernel socket per address kept across
   * config reloads, so a reload never resets a queued connection.
   */
  readonly persistentListeners: boolean;
  /** Our request-mirroring handler (proxy/mirror). */
  readonly mirror: boolean;
  /** Our external authorization handler (proxy/extauth): listeners' pre-routing filters. */
  readonly extAuth: boolean;
  /** `reverse_proxy` `retry_match` on the response status (Caddy ≥ 2.11.3). */
  readonly retryOnStatus: boolean;
  /**
   * `retry_match` on `{http.reverse_proxy.is_transport_error}` (Caddy ≥ 2.11.3): a request
   * whose attempt failed after the connection was made (reset, closed, backendRequest timeout)
   * is retried whatever its method. Without it only GET is.
   */
  readonly retryOnTransportError: boolean;
  /**
   * Our handler `kengine_deadline` (proxy/deadline): a rule's request timeout bounds its
   * retries too, an attempt still under way at the timeout gives 504 (caddy/deadline.ts).
   */
  readonly requestDeadline: boolean;
  /**
   * The TLS handshake matcher `sni_regexp` (not in Caddy 2.8). Without it a wildcard listener
   * hostname is matched by `sni` patterns with up to WILDCARD_SNI_DEPTH labels in place of
   * the `*` (caddy/config.ts).
   */
  readonly sniRegexp: boolean;
  /**
   * Our reverse_proxy transport `kengine_http` (proxy/santls): backend certificates
   * verified against BackendTLSPolicy subjectAltNames.
   */
  readonly backendSANs: boolean;
  /**
   * The same transport's inline `client_certificate`: a client certificate presented to TLS
   * backends (Gateway spec.tls.backend.clientCertificateRef). Stock Caddy reads one from files
   * only, which a configuration pushed over the admin API cannot provide.
   */
  readonly backendClientCertificate: boolean;
  /**
   * CEL expressions read placeholders with `ph(req, name)` (Caddy ≥ 2.10); Caddy 2.8 names the
   * function and the request variable `caddyPlaceholder(request, name)`. caddy/config.ts calls
   * the function itself instead of writing `{name}`, which Caddy's placeholder sugar only turns
   * into a call when the name is letters, digits, `_`, `.` and `-`.
   */
  readonly celPh: boolean;
  /**
   * The app-level `apps.http.metrics` of Caddy ≥ 2.10: one `metrics` block for the whole HTTP
   * app, with `per_host` labels guarded by the configured hosts (`observe_catchall_hosts`).
   * Without it (Caddy 2.8) metrics are switched on per server (`servers.*.metrics: {}`), with
   * no host label: traffic is counted per listener, not per route.
   */
  readonly appMetrics: boolean;
  /**
   * Our host-indexed route table (proxy/routetable, handler `kengine_route_table`): each HTTP
   * server's listener routes are one table, changed per host over the admin API without a
   * `/load` (capabilities/caddy/route-table.ts, caddy/table-deltas.ts).
   */
  readonly routeTable: boolean;
  /**
   * Our selection policy `kengine_session` (proxy/session): session persistence by header,
   * cookies with a Path, absolute session lifetimes. Stock Caddy has only the `cookie`
   * policy (path "/", no lifetime but Max-Age).
   */
  readonly sessionModule: boolean;
  /** The `cookie` selection policy's `max_age` (Caddy ≥ 2.9): Permanent session cookies. */
  readonly cookieMaxAge: boolean;
  /** The `tracing` handler's `span_attributes` (Caddy ≥ 2.10; Caddy 2.8 has the handler only). */
  readonly spanAttributes: boolean;
  /**
   * The HTTP server's `read_idle_timeout` (Caddy 2.11.9; not in 2.11.3 nor 2.8, whose strict
   * JSON refuses it): a request body read may stall this long, reset on every read. It carries
   * KengineParameters spec.limits.requestBodyTimeout (validation/limits.ts).
   */
  readonly readIdleTimeout: boolean;
  /**
   * `egress_guard` on our transport `kengine_http`, `kengine_mirror` and `kengine_ext_auth`
   * (proxy/internal/egress): a name a tenant wrote is resolved by the proxy and only checked
   * addresses are dialled. Without it ExternalHostname backends are refused
   * (translate/egress.ts).
   */
  readonly egressGuard: boolean;
}

export type Capability = keyof ProxyCapabilities;

const CAPABILITIES: Readonly<Record<ProxyFlavor, ProxyCapabilities>> = {
  Bundled: {
    persistentListeners: true,
    mirror: true,
    extAuth: true,
    retryOnStatus: true,
    retryOnTransportError: true,
    requestDeadline: true,
    sniRegexp: true,
    backendSANs: true,
    backendClientCertificate: true,
    celPh: true,
    appMetrics: true,
    routeTable: true,
    sessionModule: true,
    cookieMaxAge: true,
    spanAttributes: true,
    readIdleTimeout: true,
    egressGuard: true,
  },
  Caddy: {
    persistentListeners: false,
    mirror: false,
    extAuth: false,
    retryOnStatus: true,
    retryOnTransportError: true,
    requestDeadline: false,
    sniRegexp: true,
    backendSANs: false,
    backendClientCertificate: false,
    celPh: true,
    appMetrics: true,
    routeTable: false,
    sessionModule: false,
    cookieMaxAge: true,
    spanAttributes: true,
    readIdleTimeout: false,
    egressGuard: false,
  },
  Kengine: {
    persistentListeners: false,
    mirror: false,
    extAuth: false,
    retryOnStatus: false,
    retryOnTransportError: false,
    requestDeadline: false,
    sniRegexp: false,
    backendSANs: false,
    backendClientCertificate: false,
    celPh: false,
    appMetrics: false,
    routeTable: false,
    sessionModule: false,
    cookieMaxAge: false,
    spanAttributes: false,
    readIdleTimeout: false,
    egressGuard: false,
  },
};

/** What a flavour's proxies can do. */
export function capabilitiesOf(flavor: ProxyFlavor): ProxyCapabilities {
  return CAPABILITIES[flavor];
}

/** What each capability is called in messages (status conditions). */
const CAPABILITY_TEXT: Readonly<Record<Capability, string>> = {
  persistentListeners: "listeners kept across config reloads",
  mirror: "request mirroring",
  extAuth: "external authorization",
  retryOnStatus: "retries on response status codes",
  retryOnTransportError: "retries after connection errors and backend timeouts",
  requestDeadline: "request timeouts that bound retries",
  sniRegexp: "regular-expression server-name matching",
  backendSANs: "verification of backend certificates against subjectAltNames",
  backendClientCertificate: "client certificates for backends",
  celPh: "the CEL placeholder function ph()",
  appMetrics: "per-route traffic metrics",
  routeTable: "host-indexed route table changed without reloads",
  sessionModule:
    "session persistence by header, with a cookie path or with an absolute session lifetime",
  cookieMaxAge: "Permanent session cookies (Max-Age)",
  spanAttributes: "tracing span attributes",
  readIdleTimeout: "request body stall timeouts (read_idle_timeout)",
  egressGuard: "dial guard for hostnames tenants write (egress_guard)",
};

/**
 * Gateway API features that need a capability not every flavour has. A feature not listed
 * here works on every flavour.
 */
export const FEATURE_NEEDS: Readonly<Record<string, Capability>> = {
  HTTPRouteRetry: "retryOnStatus",
  HTTPRouteRetryBackendTimeout: "retryOnTransportError",
  HTTPRouteRetryConnectionError: "retryOnTransportError",
  HTTPRouteRetryCodes: "requestDeadline",
  GatewayListenerFilters: "extAuth",
  HTTPRouteRequestMirror: "mirror",
  HTTPRouteRequestMultipleMirrors: "mirror",
  HTTPRouteRequestPercentageMirror: "mirror",
  BackendTLSPolicySANValidation: "backendSANs",
  GatewayBackendClientCertificate: "backendClientCertificate",
};

/** The features a flavour delivers: SUPPORTED_FEATURES minus those needing what it lacks. */
export function supportedFeaturesOf(
  flavor: ProxyFlavor,
  features: readonly string[] = SUPPORTED_FEATURES,
): string[] {
  const caps = capabilitiesOf(flavor);
  return features.filter(f => {
    const need = FEATURE_NEEDS[f];
    return need === undefined || caps[need];
  });
}

/**
 * Why `flavor` cannot run something needing `needs` (a route rule's message, spec reason
 * UnsupportedValue), or undefined when it can.
 */
export function missingCapability(
  flavor: ProxyFlavor,
  needs: readonly Capability[],
): string | undefined {
  const caps = capabilitiesOf(flavor);
  const missing = needs.filter(n => !caps[n]);
  if (missing.length === 0) return undefined;
  return `the ${flavor} proxy flavour has no ${missing.map(m => CAPABILITY_TEXT[m]).join(", ")}`;
}
