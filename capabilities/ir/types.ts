/**
 * The per-Gateway intermediate representation: what one Gateway's proxies must do, as plain
 * readonly serialisable data, already validated and ordered. The Caddy stage reads only this.
 */
import type { ProxyFlavor } from "../flavor/proxy-flavor";

export interface GatewayIR {
  readonly namespace: string;
  readonly name: string;
  readonly gatewayClassName: string;
  /**
   * The flavour of the Gateway's proxies (KengineParameters spec.proxy.flavor,
   * flavor/proxy-flavor.ts); absent: the default, Bundled. The Caddy stage emits only
   * what it can run.
   */
  readonly flavor?: ProxyFlavor;
  /**
   * Timeouts of every HTTP server of the Gateway (KengineParameters spec.limits of its class,
   * Go durations); absent: the defaults (validation/limits.ts DEFAULT_LIMITS).
   */
  readonly limits?: ServerLimitsIR;
  /** One HTTP(S) server per port, in port order. */
  readonly httpServers: readonly HTTPServerIR[];
  /** One layer-4 server per port (TLS passthrough, TCP, UDP), in port order. */
  readonly l4Servers: readonly L4ServerIR[];
  /** TLS certificates used by HTTPS listeners, referenced by `id`. */
  readonly certificates: readonly CertificateIR[];
  /**
   * The client certificate presented to backends reached over TLS (Gateway
   * spec.tls.backend.clientCertificateRef); only when the flavour can present one.
   */
  readonly backendClientCertificate?: CertificateIR;
  /**
   * XTelemetryPolicy tracing (translate/telemetry.ts): a `tracing` handler first in every
   * HTTP server of the Gateway. Only in the IR of a flavour that can run it.
   */
  readonly tracing?: TracingIR;
}

export interface ServerLimitsIR {
  /** How long a client may take to send a request's headers. */
  readonly requestHeaderTimeout: string;
  /** How long reading a request body may stall (no byte arriving). */
  readonly requestBodyTimeout: string;
  /** How long a kept-alive connection may wait for its next request. */
  readonly idleTimeout: string;
}

export interface TracingIR {
  /** Span name; undefined: the handler's default. */
  readonly spanName?: string;
  /** Attribute name → value (Caddy placeholders allowed), set once the request is served. */
  readonly attributes: readonly { readonly name: string; readonly value: string }[];
}

export interface CertificateIR {
  /** Stable id, `<namespace>/<secret name>`; used as the certificate tag. */
  readonly id: string;
  readonly certificatePem: string;
  readonly keyPem: string;
}

export interface HTTPServerIR {
  readonly port: number;
  readonly protocol: "HTTP" | "HTTPS";
  /**
   * HTTPS: client certificates are checked against these CAs (Gateway spec.tls.frontend);
   * AllowInsecureFallback: asked for, not required nor verified.
   */
  readonly clientValidation?: {
    readonly mode: "AllowValidOnly" | "AllowInsecureFallback";
    /** Base64 DER. */
    readonly caCertificates: readonly string[];
  };
  /** Listeners sharing the port, most specific hostname first. */
  readonly listeners: readonly HTTPListenerIR[];
}

export interface HTTPListenerIR {
  /** `<namespace>/<gateway or listenerset>/<listener name>`. */
  readonly id: string;
  readonly hostname?: string;
  /** HTTPS: ids of the certificates served for this listener's hostname, in order. */
  readonly certificateIds: readonly string[];
  /**
   * Pre-routing filters (Listener filters.requests), in order: they run on every request of
   * the listener before route matching. Only in the IR of a flavour that can run them.
   */
  readonly filters?: readonly ListenerFilterIR[];
  /** Entries in match precedence order: the first entry that matches a request wins. */
  readonly routes: readonly HTTPRouteEntryIR[];
}

/**
 * External authorization over HTTP (HTTPExternalAuthFilter, protocol HTTP), run by the proxy
 * module `kengine_ext_auth` (proxy/extauth). No endpoints: every request is refused.
 */
export interface ListenerFilterIR {
  readonly type: "ExternalAuth";
  /** `<namespace>/<service>:<port>` for reading. */
  readonly id: string;
  readonly endpoints: readonly EndpointIR[];
  /** Prefix added to the request's path in the authorization request. */
  readonly pathPrefix?: string;
  /** Client headers sent besides Authorization (none: only the required ones). */
  readonly allowedRequestHeaders: readonly string[];
  /** Answer headers copied into the request on success (none: every header but Host). */
  readonly allowedResponseHeaders: readonly string[];
  /** Bytes of the request body sent (truncated beyond); 0 or absent: none. */
  readonly maxBodyBytes?: number;
  /** The endpoints are a name a tenant wrote: dialled only through the guard. */
  readonly egressGuard?: EgressGuardIR;
}

export interface RouteRef {
  readonly kind: "HTTPRoute" | "GRPCRoute";
  readonly namespace: string;
  readonly name: string;
  readonly rule: number;
  readonly match: number;
}

export type PathMatchIR =
  | { readonly type: "Exact"; readonly value: string }
  | { readonly type: "PathPrefix"; readonly value: string }
  | { readonly type: "RegularExpression"; readonly value: string };

export interface ValueMatchIR {
  readonly type: "Exact" | "RegularExpression";
  readonly name: string;
  readonly value: string;
}

export interface HTTPMatchIR {
  /** Host the entry applies to (exact or `*.` wildcard); undefined = every host of the listener. */
  readonly hostname?: string;
  readonly path: PathMatchIR;
  readonly method?: string;
  readonly headers: readonly ValueMatchIR[];
  readonly queryParams: readonly ValueMatchIR[];
  /** gRPC: restrict to requests with a gRPC content type. */
  readonly grpc?: boolean;
}

export interface HeaderOpsIR {
  readonly set: readonly { readonly name: string; readonly value: string }[];
  readonly add: readonly { readonly name: string; readonly value: string }[];
  readonly remove: readonly string[];
}

export type PathModifierIR =
  | { readonly type: "ReplaceFullPath"; readonly value: string }
  | { readonly type: "ReplacePrefixMatch"; readonly value: string };

export interface RedirectIR {
  readonly scheme: "http" | "https";
  /** undefined: keep the request's host. */
  readonly hostname?: string;
  /** undefined: no port in the Location (well-known port of the scheme). */
  readonly port?: number;
  readonly path?: PathModifierIR;
  readonly statusCode: 301 | 302 | 303 | 307 | 308;
}

export interface RewriteIR {
  readonly hostname?: string;
  readonly path?: PathModifierIR;
}

/**
 * The proxy's dial guard (`egress_guard`, proxy/internal/egress) for endpoints that are names
 * a tenant wrote (an XBackend's externalHostname): the proxy resolves the name itself and
 * dials only addresses that are not loopback, unspecified, link-local, multicast, its own, or
 * inside `deny` (the class's spec.egress.deniedCIDRs). Set at compilation with `deny` empty,
 * filled per Gateway (translate/egress.ts).
 */
export interface EgressGuardIR {
  readonly deny: readonly string[];
}

export interface EndpointIR {
  readonly address: string;
  readonly port: number;
}

export type BackendIR =
  | {
      readonly type: "service";
      /** `<namespace>/<service>:<port>` for reading. */
      readonly id: string;
      readonly weight: number;
      readonly endpoints: readonly EndpointIR[];
      readonly protocol: "http" | "h2c";
      /** BackendTLSPolicy: connect over TLS with this SNI/verification name and trust (base64 DER; none = system). */
      readonly tls?: {
        readonly serverName: string;
        readonly caCertificates?: readonly string[];
        /** The certificate must carry one of these (not the server name, then only the SNI). */
        readonly subjectAltNames?: {
          readonly dns: readonly string[];
          readonly uri: readonly string[];
        };
      };
      readonly requestHeaders?: HeaderOpsIR;
      readonly responseHeaders?: HeaderOpsIR;
      /** The backendRef's own URLRewrite: only requests sent to this backend are rewritten. */
      readonly rewrite?: RewriteIR;
      /** The endpoints are a name a tenant wrote: dialled only through the guard. */
      readonly egressGuard?: EgressGuardIR;
    }
  /** A backendRef that could not be resolved: its share of requests gets HTTP 500. */
  | { readonly type: "invalid"; readonly id: string; readonly weight: number };

/** Rule timeouts in milliseconds (a zero duration in the route disables one: left out). */
export interface TimeoutsIR {
  readonly requestMs?: number;
  readonly backendRequestMs?: number;
  /** Dialling a backend (PROXY_TIMEOUTS_FIELD `connect`). */
  readonly connectMs?: number;
  /** Each write of the request to the backend (PROXY_TIMEOUTS_FIELD `send`). */
  readonly sendMs?: number;
}

/** Retry of a backend request on these response codes, up to `attempts` more times. */
export interface RetryIR {
  readonly codes: readonly number[];
  readonly attempts: number;
  readonly backoffMs?: number;
}

/**
 * Session persistence of a rule (GEP-1619): requests carrying the session's token (cookie or
 * header `name`) go to the endpoint that served the first; a new session's endpoint is chosen
 * by the rule's weights and the response carries the token.
 */
export interface SessionIR {
  readonly mode: "cookie" | "header";
  readonly name: string;
  /** Cookie Path attribute, when not "/". */
  readonly path?: string;
  /** Permanent cookie: its Max-Age in seconds. */
  readonly maxAgeS?: number;
  /** Absolute lifetime tracked in the token (Session cookie or header with absoluteTimeout). */
  readonly timeoutMs?: number;
  /** Key of the token's HMAC. */
  readonly secret: string;
  /** Cookie SameSite attribute (SESSION_SAME_SITE_FIELD; default Lax); None comes with Secure. */
  readonly sameSite?: "None" | "Lax" | "Strict";
}

export type ActionIR =
  | {
      readonly type: "forward";
      readonly backends: readonly BackendIR[];
      readonly timeouts?: TimeoutsIR;
      readonly retry?: RetryIR;
      readonly session?: SessionIR;
    }
  | { readonly type: "redirect"; readonly redirect: RedirectIR }
  | { readonly type: "respond"; readonly status: number; readonly body: string };

/** The CORS filter as written (wildcards kept as `*`). */
export interface CorsIR {
  readonly allowOrigins: readonly string[];
  readonly allowMethods: readonly string[];
  readonly allowHeaders: readonly string[];
  readonly exposeHeaders: readonly string[];
  readonly allowCredentials: boolean;
  readonly maxAge: number;
}

/**
 * RequestMirror: a copy of each request (or of a share of them) goes to this backend, its
 * answer ignored. Only mirrors with ready endpoints are here (nothing to send to otherwise).
 * Run by the proxy module `kengine_mirror` (proxy/mirror), so only in the IR of a
 * Gateway whose proxy flavour has it.
 */
export interface MirrorIR {
  /** `<namespace>/<service>:<port>` for reading. */
  readonly id: string;
  readonly endpoints: readonly EndpointIR[];
  /** Share of requests mirrored (0 < numerator < denominator); undefined: every request. */
  readonly fraction?: { readonly numerator: number; readonly denominator: number };
  /** The endpoints are a name a tenant wrote: dialled only through the guard. */
  readonly egressGuard?: EgressGuardIR;
}

/**
 * A rule field only the HTTPRoutes made from Ingresses carry (ingress/convert.ts, the
 * ingress-nginx `proxy-body-size`): the largest request body, in bytes. Gateway API has no
 * such field; the API server prunes it from any stored HTTPRoute, so only a synthetic route
 * can have it.
 */
export const MAX_REQUEST_BODY_FIELD = "x-kengine-max-request-body-bytes";

/**
 * Like MAX_REQUEST_BODY_FIELD: the client address ranges of a rule made from an Ingress
 * (ingress-nginx `whitelist-source-range` / `denylist-source-range`), `{allow?, deny?}` CIDRs.
 */
export const SOURCE_RANGES_FIELD = "x-kengine-source-ranges";

/**
 * Like MAX_REQUEST_BODY_FIELD: the authorization Service of a rule made from an Ingress
 * (ingress-nginx `auth-url`, validation/nginx-auth.ts AuthEffect): `{service: {namespace, name,
 * port}, path, host, responseHeaders}`.
 */
export const EXTERNAL_AUTH_FIELD = "x-kengine-external-auth";

/**
 * A route's authorization as ingress-nginx's auth-url asks it (`kengine_ext_auth` in mode
 * ingress-nginx, Bundled only). No endpoints (the Service did not resolve, or has no ready
 * pod): every request is answered 500, never let through.
 */
export interface RouteAuthIR {
  /** `<namespace>/<service>:<port>` for reading. */
  readonly id: string;
  readonly endpoints: readonly EndpointIR[];
  /** Path and query asked. */
  readonly path: string;
  /** Host header of the authorization request. */
  readonly host: string;
  /** Answer headers copied into the request on a 2xx (none: nothing). */
  readonly responseHeaders: readonly string[];
}

/**
 * Like MAX_REQUEST_BODY_FIELD: the backend connection's timeouts of a rule made from an Ingress
 * (ingress-nginx `proxy-connect-timeout` / `proxy-send-timeout`), `{connect?, send?}` in whole
 * seconds.
 */
export const PROXY_TIMEOUTS_FIELD = "x-kengine-proxy-timeouts";

/**
 * Like MAX_REQUEST_BODY_FIELD: the session cookie's SameSite attribute of a rule made from an
 * Ingress (ingress-nginx `session-cookie-samesite`), "None", "Lax" or "Strict".
 */
export const SESSION_SAME_SITE_FIELD = "x-kengine-session-same-site";

/** Client address ranges: outside `allow` (when given) or inside `deny`, the answer is 403. */
export interface SourceRangesIR {
  readonly allow?: readonly string[];
  readonly deny?: readonly string[];
}

export interface HTTPRouteEntryIR {
  readonly route: RouteRef;
  readonly match: HTTPMatchIR;
  /** Checked first: the TCP peer's address (SOURCE_RANGES_FIELD). */
  readonly sourceRanges?: SourceRangesIR;
  /** Larger request bodies are refused with 413 (MAX_REQUEST_BODY_FIELD). */
  readonly maxRequestBodyBytes?: number;
  /** Then every request is authorized first (EXTERNAL_AUTH_FIELD). */
  readonly auth?: RouteAuthIR;
  /** Answers CORS preflights and adds CORS headers to responses for allowed origins (runs first). */
  readonly cors?: CorsIR;
  readonly requestHeaders?: HeaderOpsIR;
  readonly responseHeaders?: HeaderOpsIR;
  readonly rewrite?: RewriteIR;
  /** Copies sent after the request filters ran, before the action. */
  readonly mirrors?: readonly MirrorIR[];
  readonly action: ActionIR;
}

export interface L4BackendIR {
  readonly id: string;
  readonly weight: number;
  /** Empty when the backendRef did not resolve or has no ready endpoint: its share is refused. */
  readonly endpoints: readonly EndpointIR[];
  /**
   * BackendTLSPolicy behind a TLS listener in mode Terminate: the proxy connects over TLS with
   * this SNI/verification name and trust (base64 DER; none = system).
   */
  readonly tls?: { readonly serverName: string; readonly caCertificates?: readonly string[] };
}

export interface L4RouteIR {
  readonly route: {
    readonly kind: "TLSRoute" | "TCPRoute" | "UDPRoute";
    readonly namespace: string;
    readonly name: string;
  };
  /** TLS listeners: SNI names (exact or wildcard); undefined = any. */
  readonly serverNames?: readonly string[];
  /** TLS listener in mode Terminate: the proxy ends TLS with these certificates, backends get plain TCP. */
  readonly terminate?: { readonly certificateIds: readonly string[] };
  /** Weighted backends; none (or none with endpoints): every connection is refused (closed). */
  readonly backends: readonly L4BackendIR[];
}

export interface L4ServerIR {
  readonly port: number;
  readonly protocol: "TLS" | "TCP" | "UDP";
  /** Most specific SNI first. */
  readonly routes: readonly L4RouteIR[];
}
