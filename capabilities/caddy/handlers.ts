/**
 * The handlers of one HTTPRoute entry: rewrites, header operations, mirrors, CORS, redirects
 * and the egress guard, with the CEL and placeholder quoting they need; `forward.ts` makes the
 * reverse proxy.
 */
import {
  CorsIR,
  EgressGuardIR,
  EndpointIR,
  HeaderOpsIR,
  HTTPRouteEntryIR,
  MirrorIR,
  PathModifierIR,
  RedirectIR,
  RewriteIR,
} from "../ir";
import { ProxyCapabilities } from "../flavor/proxy-flavor";
import { escapePlaceholders } from "./placeholders";
import { quoteRE2 } from "../validation/regex";
import {
  CaddyEgressGuard,
  CaddyHandler,
  CaddyHeaderOps,
  CaddyMatcherSet,
  CaddyRoute,
} from "./types";

export const REGEX_NAME = "kengine_path";

/** URLRewrite (of a rule or of a backendRef): the Host header, then the path. */
export function rewriteHandlers(
  r: RewriteIR | undefined,
  prefix: PrefixMode | undefined,
): CaddyHandler[] {
  const out: CaddyHandler[] = [];
  if (r?.hostname)
    out.push({ handler: "headers", request: { set: { Host: [escapePlaceholders(r.hostname)] } } });
  if (r?.path) out.push({ handler: "rewrite", uri: rewrittenPath(r.path, prefix) });
  return out;
}

/**
 * How the entry's ReplacePrefixMatch modifiers read the rest of the path (rewrite or redirect
 * of the rule, URLRewrite of its backendRefs): `keep` after a new prefix, `root` after `/`;
 * `both` when its backendRefs need each (the path capture then serves both).
 */
export type PrefixMode = "keep" | "root" | "both";

export function modifiesPrefix(e: HTTPRouteEntryIR): PrefixMode | undefined {
  const rule: PathModifierIR | undefined =
    e.rewrite?.path ?? (e.action.type === "redirect" ? e.action.redirect.path : undefined);
  const backends = e.action.type === "forward" ? e.action.backends : [];
  const modes = new Set<PrefixMode>();
  for (const p of [
    rule,
    ...backends.map(b => (b.type === "service" ? b.rewrite?.path : undefined)),
  ])
    if (p?.type === "ReplacePrefixMatch") modes.add(trimSlash(p.value) === "" ? "root" : "keep");
  if (modes.size === 0) return undefined;
  return modes.size > 1 ? "both" : [...modes][0];
}

const trimSlash = (v: string): string => v.replace(/\/+$/, "");

/**
 * Path regular expression (RE2, case-sensitive, matched against Caddy's cleaned path).
 * PathPrefix has segment semantics: `/foo` matches `/foo` and `/foo/…`, not `/foobar`.
 * With a prefix modifier, capture group 1 holds the rest of the path (`root`: without its
 * leading slash; `keep`: with it; `both`: group 1 with it, group 2 without).
 */
export function pathPattern(
  p: HTTPRouteEntryIR["match"]["path"],
  prefix: PrefixMode | undefined,
): string | undefined {
  switch (p.type) {
    case "Exact":
      return `^${quoteRE2(p.value)}$`;
    case "RegularExpression":
      return `^(?:${p.value})$`;
    case "PathPrefix": {
      const base = quoteRE2(trimSlash(p.value));
      if (prefix === "root") return `^${base}(?:/(.*))?$`;
      if (prefix === "keep") return `^${base}(/.*)?$`;
      if (prefix === "both") return `^${base}(/(.*))?$`;
      return base === "" ? undefined : `^${base}(?:/.*)?$`;
    }
  }
}

const rest = `{http.regexp.${REGEX_NAME}.1}`;

function rewrittenPath(p: PathModifierIR, prefix: PrefixMode | undefined): string {
  if (p.type === "ReplaceFullPath") return escapePlaceholders(p.value);
  const root = trimSlash(p.value) === "";
  if (prefix === "both")
    return root
      ? `/{http.regexp.${REGEX_NAME}.2}`
      : `${escapePlaceholders(trimSlash(p.value))}${rest}`;
  return prefix === "root" ? `/${rest}` : `${escapePlaceholders(trimSlash(p.value))}${rest}`;
}

/**
 * The `headers` handlers of a request and a response header modifier; none for a modifier
 * without operations. Caddy 2.8 provisions a `response` through a pointer it never checks: one
 * holding only `deferred` (an empty ResponseHeaderModifier) crashed the whole proxy process
 * (hunt case empty-response-header-modifier, docs/operations.md "Hardening").
 */
export function headerHandlers(request?: HeaderOpsIR, response?: HeaderOpsIR): CaddyHandler[] {
  const out: CaddyHandler[] = [];
  const req = request && headerOps(request);
  if (req && Object.keys(req).length > 0) out.push({ handler: "headers", request: req });
  const res = response && headerOps(response);
  if (res && Object.keys(res).length > 0)
    out.push({ handler: "headers", response: { ...res, deferred: true } });
  return out;
}

function headerOps(o: HeaderOpsIR): CaddyHeaderOps {
  // Header names are the user's: maps without a prototype, so `constructor` or `__proto__` is
  // a header like any other (hostile-regressions "header-names-prototype-keys").
  const set = Object.create(null) as Record<string, string[]>;
  const add = Object.create(null) as Record<string, string[]>;
  for (const h of o.set) set[escapePlaceholders(h.name)] = [escapePlaceholders(h.value)];
  for (const h of o.add) (add[escapePlaceholders(h.name)] ??= []).push(escapePlaceholders(h.value));
  return {
    ...(Object.keys(set).length > 0 && { set }),
    ...(Object.keys(add).length > 0 && { add }),
    ...(o.remove.length > 0 && { delete: o.remove.map(escapePlaceholders) }),
  };
}

export { escapePlaceholders } from "./placeholders";

/**
 * `s` as a CEL string literal that Caddy passes to CEL unchanged. Caddy rewrites every
 * `{name}` in an expression's text into a placeholder call before CEL parses it, string
 * literals included (caddyhttp/celmatcher.go, placeholderRegexp), so a brace in a user's
 * regular expression (`x{ab}`) would break the expression and the whole config. JSON string
 * escapes are CEL escapes; braces become `\u007b` / `\u007d`, which CEL decodes back.
 */
export const celString = (s: string): string =>
  JSON.stringify(s).replace(/[{}]/g, c => (c === "{" ? "\\u007b" : "\\u007d"));

/**
 * A CEL call reading the placeholder `name`, whatever characters it holds (a query parameter
 * may be named with any token character, e.g. `a!b`, which the `{name}` sugar would leave as
 * broken CEL text). The function is `ph(req, …)` from Caddy 2.10 on, `caddyPlaceholder(request, …)`
 * on Caddy 2.8.
 */
export const celPlaceholder = (caps: ProxyCapabilities, name: string): string =>
  caps.celPh ? `ph(req, ${celString(name)})` : `caddyPlaceholder(request, ${celString(name)})`;

/**
 * RequestMirror: our `kengine_mirror` handler, one target per mirror backend; with the dial
 * guard when a target is a name a tenant wrote.
 */
export function mirror(mirrors: readonly MirrorIR[]): CaddyHandler {
  const guarded = mirrors.filter(m => m.egressGuard);
  return {
    handler: "kengine_mirror",
    targets: mirrors.map(m => ({
      dial: m.endpoints.map(dial),
      ...(m.fraction && { numerator: m.fraction.numerator, denominator: m.fraction.denominator }),
    })),
    ...(guarded.length > 0 && { egress_guard: egressGuardOf(guarded) }),
  };
}

/**
 * `egress_guard` for upstreams that are names tenants wrote: every CIDR any of
 * them denies (one Gateway's are the same list); `{}` still switches the guard on.
 */
export function egressGuardOf(
  upstreams: readonly { readonly egressGuard?: EgressGuardIR }[],
): CaddyEgressGuard {
  const deny = [...new Set(upstreams.flatMap(u => u.egressGuard?.deny ?? []))];
  return deny.length > 0 ? { deny } : {};
}

/* ------------------------------------------------------------------ CORS */

const ORIGIN = "{http.request.header.Origin}";

/**
 * The CORS filter from stock handlers: a preflight (OPTIONS with Origin and
 * Access-Control-Request-Method) from an allowed origin is answered here (204) with the
 * allow-* headers; any other request from an allowed origin goes on and gets
 * Access-Control-Allow-Origin (the request's origin, echoed), credentials and expose headers
 * on its response. Requests from other origins pass untouched (no CORS headers: the browser
 * refuses them).
 */
export function cors(c: CorsIR): CaddyHandler {
  const origin: CaddyMatcherSet = { header_regexp: { Origin: { pattern: originPattern(c) } } };
  const common: Record<string, string[]> = {
    "Access-Control-Allow-Origin": [ORIGIN],
    ...(c.allowCredentials && { "Access-Control-Allow-Credentials": ["true"] }),
  };
  const expose = c.exposeHeaders.includes("*")
    ? c.allowCredentials
      ? []
      : ["*"]
    : c.exposeHeaders;
  if (expose.length > 0)
    common["Access-Control-Expose-Headers"] = [expose.map(escapePlaceholders).join(", ")];
  const preflight: Record<string, string[]> = {
    ...common,
    "Access-Control-Max-Age": [String(c.maxAge)],
    Vary: ["Origin"],
  };
  if (c.allowMethods.includes("*"))
    preflight["Access-Control-Allow-Methods"] = [
      "{http.request.header.Access-Control-Request-Method}",
    ];
  else if (c.allowMethods.length > 0)
    preflight["Access-Control-Allow-Methods"] = [c.allowMethods.map(escapePlaceholders).join(", ")];
  const preflightRoutes: CaddyRoute[] = [];
  if (c.allowHeaders.includes("*")) {
    // Echo the requested headers, and only when the request names some.
    preflightRoutes.push({
      match: [{ ...origin, header: { "Access-Control-Request-Headers": ["*"] } }],
      handle: [
        responseHeaders({
          "Access-Control-Allow-Headers": ["{http.request.header.Access-Control-Request-Headers}"],
        }),
      ],
    });
  } else if (c.allowHeaders.length > 0) {
    preflight["Access-Control-Allow-Headers"] = [c.allowHeaders.map(escapePlaceholders).join(", ")];
  }
  preflightRoutes.unshift({ match: [origin], handle: [responseHeaders(preflight)] });
  // Every preflight is answered here: a disallowed origin gets 204 without CORS headers (the
  // browser then refuses the actual request); the backend never sees a preflight.
  preflightRoutes.push({ handle: [{ handler: "static_response", status_code: 204 }] });
  return {
    handler: "subroute",
    routes: [
      {
        match: [
          {
            method: ["OPTIONS"],
            header: { Origin: ["*"], "Access-Control-Request-Method": ["*"] },
          },
        ],
        handle: [{ handler: "subroute", routes: preflightRoutes }],
        terminal: true,
      },
      {
        match: [origin],
        handle: [
          {
            handler: "headers",
            response: { set: common, add: { Vary: ["Origin"] }, deferred: true },
          },
        ],
      },
    ],
  };
}

/** Headers set on the response at once (the handler that answers comes next). */
const responseHeaders = (set: Record<string, string[]>): CaddyHandler => ({
  handler: "headers",
  response: { set },
});

/**
 * The allowed origins as one RE2 pattern. `*` alone: any origin. A `*` in the host: any
 * number of labels (greedy to the left). No port: the scheme's default port, written or not.
 */
function originPattern(c: CorsIR): string {
  if (c.allowOrigins.includes("*")) return "^.+$";
  const alts = c.allowOrigins.map(o => {
    const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/]*?)(?::([0-9]+))?$/.exec(o);
    if (!m) return quoteRE2(o);
    const [, scheme, host, port] = m;
    const h = host.split("*").map(quoteRE2).join("[^/:]+");
    const def =
      scheme.toLowerCase() === "http" ? "80" : scheme.toLowerCase() === "https" ? "443" : undefined;
    const p = port !== undefined ? `:${port}` : def ? `(?::${def})?` : "";
    return `${quoteRE2(scheme)}://${h}${p}`;
  });
  return `(?i)^(?:${alts.join("|")})$`;
}

export function redirect(r: RedirectIR, prefix: PrefixMode | undefined): CaddyHandler {
  const host = r.hostname ? escapePlaceholders(r.hostname) : "{http.request.host}";
  const origin = `${r.scheme}://${host}${r.port !== undefined ? `:${r.port}` : ""}`;
  const respond = (location: string): CaddyHandler => ({
    handler: "static_response",
    status_code: r.statusCode,
    headers: { Location: [location] },
  });
  if (!r.path) return respond(`${origin}{http.request.uri}`);
  const path = rewrittenPath(r.path, prefix);
  // Keep the query string, without a dangling "?" when there is none.
  return {
    handler: "subroute",
    routes: [
      { match: [{ query: {} }], handle: [respond(`${origin}${path}`)], terminal: true },
      { handle: [respond(`${origin}${path}?{http.request.uri.query}`)], terminal: true },
    ],
  };
}

/** An upstream address; Caddy expands placeholders in it (an XBackend's hostname is a tenant's). */
export const dial = (e: EndpointIR): string =>
  escapePlaceholders(
    e.address.includes(":") ? `[${e.address}]:${e.port}` : `${e.address}:${e.port}`,
  );
