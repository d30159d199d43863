/**
 * The table of ingress-nginx annotations (`nginx.ingress.kubernetes.io/*`) the Kengine ingress
 * controller knows: how far each is supported and what it becomes. docs/ingress.md shows it
 * row by row; validation/nginx-annotations.ts reads the annotations by it. Pure data.
 */

/**
 * supported: applied as ingress-nginx does; partial: applied, with the difference warned at
 * admission; refused: the Ingress is refused (admission) or not served (conversion);
 * not yet: ignored, with a warning.
 */
export type Support = "supported" | "partial" | "refused" | "not yet";

export interface AnnotationEntry {
  readonly support: Support;
  /** What it becomes, or why it is refused or ignored: the docs table and the warnings say it. */
  readonly becomes: string;
}

const notYet = (becomes: string): AnnotationEntry => ({ support: "not yet", becomes });
const SNIPPET: AnnotationEntry = {
  support: "refused",
  becomes: "the proxy runs no nginx configuration: express it with Gateway API filters",
};

/** Every annotation the table knows, by name without the prefix. */
export const NGINX_ANNOTATIONS: Readonly<Record<string, AnnotationEntry>> = {
  "ssl-redirect": {
    support: "supported",
    becomes:
      'HTTP requests for a host with a `tls` entry get a 308 RequestRedirect to https (the default, as in ingress-nginx); "false" turns it off',
  },
  "force-ssl-redirect": {
    support: "partial",
    becomes:
      "as ssl-redirect: hosts with a `tls` entry are redirected; a host without one (TLS ended before the proxy) is not, since the proxy cannot tell the client's scheme",
  },
  "permanent-redirect": {
    support: "supported",
    becomes:
      "every path of the Ingress answers a RequestRedirect to the URL (scheme, hostname, port, ReplaceFullPath), 301 or permanent-redirect-code; the request's query string is kept, where ingress-nginx drops it",
  },
  "permanent-redirect-code": {
    support: "supported",
    becomes: "the status of permanent-redirect: 301, 302, 303, 307 or 308",
  },
  "temporal-redirect": {
    support: "supported",
    becomes:
      "as permanent-redirect with 302 (or temporal-redirect-code); wins over permanent-redirect, as in ingress-nginx",
  },
  "temporal-redirect-code": {
    support: "supported",
    becomes: "the status of temporal-redirect: 301, 302, 303, 307 or 308",
  },
  "app-root": {
    support: "supported",
    becomes:
      "an Exact `/` rule per host answering a 302 RequestRedirect to the path (the query string is kept)",
  },
  "rewrite-target": {
    support: "partial",
    becomes:
      "URLRewrite ReplaceFullPath on every path (nginx replaces the whole matched URI); capture groups such as `$1` are refused, even with use-regex",
  },
  "use-regex": {
    support: "partial",
    becomes:
      "Prefix and ImplementationSpecific paths are RE2 regular expressions matched from the path's start, case-sensitively (ingress-nginx's `~*` was not) and ranked by their literal prefix against Prefix paths (ingress-nginx tried them first); Exact paths stay literal; what RE2 refuses (lookarounds, backreferences) is refused; rewrite-target capture groups are not supported",
  },
  "upstream-vhost": {
    support: "supported",
    becomes: "URLRewrite hostname: the backend sees that Host",
  },
  "proxy-read-timeout": {
    support: "partial",
    becomes:
      "timeouts.backendRequest (seconds): bounds the wait for the backend's response headers; reads after them are not bounded",
  },
  "proxy-send-timeout": {
    support: "supported",
    becomes:
      'the backend connection\'s write timeout (seconds, 1 to 3600; "15" or "15s"): each write of the request to the backend may stall this long (nginx bounds the time between two successive writes alike), then the request is answered 504; without it writes are not bounded',
  },
  "proxy-connect-timeout": {
    support: "supported",
    becomes:
      'the backend connection\'s dial timeout (seconds, 1 to 3600; "15" or "15s"): a backend that does not accept in time is answered 502; without it the proxy\'s default (3s) applies, where ingress-nginx\'s is 5s',
  },
  "backend-protocol": {
    support: "partial",
    becomes:
      "HTTP is the default; for GRPC set the Service port's appProtocol to kubernetes.io/h2c, for HTTPS and GRPCS add a BackendTLSPolicy: the proxy reads the protocol from those, not from the Ingress",
  },
  canary: {
    support: "partial",
    becomes:
      "the canary Ingress's rules are served for requests that canary-by-header or canary-by-cookie select (a more specific match wins over the main Ingress's), and canary-weight splits the rest with the main Ingress of the same namespace, host and path; a canary with none of the three is not served (reported on it)",
  },
  "canary-weight": {
    support: "supported",
    becomes:
      "the main Ingress's path (same namespace, host, path and type) sends this share of its requests to the canary's backend, as backendRef weights; without such a main Ingress the canary's weight is reported on it",
  },
  "canary-weight-total": {
    support: "supported",
    becomes: "the total canary-weight is a share of (default 100)",
  },
  "canary-by-header": {
    support: "partial",
    becomes:
      'requests whose header has the value "always" (or canary-by-header-value, or a match of canary-by-header-pattern) go to the canary; "never" is not special: such requests are split by canary-weight like others',
  },
  "canary-by-header-value": {
    support: "supported",
    becomes: "the header's exact value that selects the canary",
  },
  "canary-by-header-pattern": {
    support: "supported",
    becomes:
      "an RE2 regular expression on the header's value that selects the canary (when canary-by-header-value is not set)",
  },
  "canary-by-cookie": {
    support: "partial",
    becomes:
      'requests carrying the cookie with the value "always" go to the canary; "never" is not special: such requests are split by canary-weight like others',
  },
  "proxy-body-size": {
    support: "supported",
    becomes:
      "the largest request body (bytes, or with k, m or g as nginx reads them; 0: no limit): a larger one is answered 413 before the backend gets it (on the Caddy 2.8 flavours a body without Content-Length is cut at the limit instead). Without it no limit applies, where ingress-nginx's default is 1m",
  },
  "whitelist-source-range": {
    support: "supported",
    becomes:
      "only clients whose address is in one of the ranges (comma-separated CIDRs or addresses) reach the paths; others get 403. The address is the TCP peer the proxy sees: behind a load balancer that does not keep the client's address, it is the balancer's",
  },
  "denylist-source-range": {
    support: "supported",
    becomes:
      "clients whose address is in one of the ranges get 403 (checked with whitelist-source-range: either refuses). The same address as whitelist-source-range",
  },
  "enable-cors": {
    support: "supported",
    becomes:
      "an HTTPRoute CORS filter on every path, with ingress-nginx's defaults for the cors-* annotations not set; an origin `*` with credentials allowed answers the request's own origin (the Gateway API rule) where ingress-nginx answers `*`",
  },
  "cors-allow-origin": {
    support: "supported",
    becomes:
      "cors.allowOrigins (comma-separated; `*`, or scheme://host[:port] with an optional leading `*.` label)",
  },
  "cors-allow-methods": {
    support: "supported",
    becomes: "cors.allowMethods (comma-separated methods)",
  },
  "cors-allow-headers": {
    support: "supported",
    becomes: "cors.allowHeaders (comma-separated header names)",
  },
  "cors-expose-headers": {
    support: "supported",
    becomes: "cors.exposeHeaders (comma-separated header names)",
  },
  "cors-allow-credentials": {
    support: "supported",
    becomes: "cors.allowCredentials (default true, as in ingress-nginx)",
  },
  "cors-max-age": {
    support: "supported",
    becomes: "cors.maxAge in seconds (default 1728000, as in ingress-nginx)",
  },
  affinity: {
    support: "supported",
    becomes:
      'only "cookie": sessionPersistence with a cookie on every forwarding path; a client keeps its backend endpoint while it is ready',
  },
  "affinity-mode": {
    support: "partial",
    becomes:
      '"balanced" and "persistent" behave alike: a session keeps its endpoint while it is ready, and moves when it goes away',
  },
  "session-cookie-name": {
    support: "supported",
    becomes: "the session cookie's name (default INGRESSCOOKIE, as in ingress-nginx)",
  },
  "session-cookie-path": {
    support: "supported",
    becomes: "the session cookie's Path (default /)",
  },
  "session-cookie-max-age": {
    support: "supported",
    becomes:
      "a Permanent cookie with that Max-Age in seconds (absoluteTimeout); without it the cookie lasts the browser session",
  },
  "session-cookie-expires": {
    support: "partial",
    becomes:
      "read as session-cookie-max-age (seconds) when that is not set; no Expires attribute is sent",
  },
  "session-cookie-samesite": {
    support: "supported",
    becomes:
      'the session cookie\'s SameSite: "None", "Lax" or "Strict"; None comes with Secure, even on plain HTTP, since browsers drop a SameSite=None cookie without it. Without it the Bundled proxy\'s cookie is SameSite=Lax. Only the Bundled proxy sets it: on the other flavours the Ingress\'s paths are not served (reported on the Ingress)',
  },
  "session-cookie-conditional-samesite-none": notYet(
    "SameSite=None is sent to every client, including those that mishandle it",
  ),
  "auth-url": {
    support: "partial",
    becomes:
      "every request is first asked of that Service as ingress-nginx asks (a GET to the URL's path and query with the client's headers, X-Original-URL and X-Original-Method; 2xx lets it through, 401 and 403 go back to the client, anything else is a 500); the URL must name a Service of the cluster over http (<service>.<namespace>.svc[.cluster.local][:port]; another namespace needs a ReferenceGrant there for HTTPRoutes); nginx variables are refused; Bundled proxies only",
  },
  "auth-response-headers": {
    support: "supported",
    becomes: "these headers of the authorization answer replace the client's in the request",
  },
  "auth-signin": {
    support: "partial",
    becomes:
      "not redirected to: a client the authorization Service refuses gets its 401 (the request is never let through)",
  },
  "server-alias": {
    support: "supported",
    becomes:
      "every path of the Ingress's named hosts is served under each alias too (comma-separated DNS names); a rule of the Ingress for the alias itself wins",
  },
  "configuration-snippet": SNIPPET,
  "server-snippet": SNIPPET,
  "auth-snippet": SNIPPET,
  "stream-snippet": SNIPPET,
  "modsecurity-snippet": SNIPPET,
};
