/**
 * Compiles HTTPRoute and GRPCRoute rules, once per route, into listener-independent rules:
 * matches, header operations, rewrites, redirects (resolved per listener later) and
 * resolved backends. Whether the proxy can run a rule is decided by the rules admission uses
 * (validation/httproute.ts, validation/grpcroute.ts); a rule with problems is dropped with
 * their messages (the spec's "Drop Rule" approach to PartiallyInvalid), so status and
 * admission name the same problems. backendRefs that do not resolve keep their share of
 * traffic and answer it with HTTP 500.
 */
import {
  BackendIR,
  CorsIR,
  MAX_REQUEST_BODY_FIELD,
  PROXY_TIMEOUTS_FIELD,
  SESSION_SAME_SITE_FIELD,
  SOURCE_RANGES_FIELD,
  SourceRangesIR,
  HTTPMatchIR,
  HeaderOpsIR,
  MirrorIR,
  PathMatchIR,
  RouteAuthIR,
  RetryIR,
  RewriteIR,
  SessionIR,
  TimeoutsIR,
  ValueMatchIR,
} from "../ir";
import {
  GRPCRoute,
  HTTPBackendRef,
  HTTPCORSFilter,
  HTTPHeaderFilter,
  HTTPHeaderMatch,
  HTTPRequestRedirectFilter,
  HTTPRoute,
  HTTPRequestMirrorFilter,
  HTTPRouteFilter,
  HTTPRouteRetry,
  HTTPRouteTimeouts,
  Snapshot,
} from "../snapshot";
import { grpcRouteRuleProblems } from "../validation/grpcroute";
import { httpRouteRuleProblems, problemsPerRule } from "../validation/httproute";
import { problemText } from "../validation/message";
import { durationMs } from "../validation/session";
import { sessionIR, sessionNeeds } from "./session";
import { FieldProblem } from "../validation/regex";
import { resolveBackend } from "./backends";
import { routeAuth } from "./route-auth";
import { isIngressObject } from "../ingress/synthetic";
import type { Capability } from "../flavor/proxy-flavor";

export type HTTPMatchTemplate = Omit<HTTPMatchIR, "hostname">;

export interface CompiledRule {
  readonly index: number;
  readonly matches: readonly HTTPMatchTemplate[];
  readonly requestHeaders?: HeaderOpsIR;
  readonly responseHeaders?: HeaderOpsIR;
  readonly rewrite?: RewriteIR;
  readonly cors?: CorsIR;
  /** Set when the rule redirects; resolved against the listener's protocol and port. */
  readonly redirect?: HTTPRequestRedirectFilter;
  readonly backends: readonly BackendIR[];
  readonly timeouts?: TimeoutsIR;
  readonly retry?: RetryIR;
  /** RequestMirror backends with ready endpoints. */
  readonly mirrors?: readonly MirrorIR[];
  /** The rule has RequestMirror filters (mirrored or not, it needs the mirror capability). */
  readonly mirrored?: boolean;
  readonly session?: SessionIR;
  readonly maxRequestBodyBytes?: number;
  readonly sourceRanges?: SourceRangesIR;
  /** A rule made from an Ingress with auth-url (route-auth.ts). */
  readonly auth?: RouteAuthIR;
}

export interface CompiledRoute {
  readonly kind: "HTTPRoute" | "GRPCRoute";
  readonly namespace: string;
  readonly name: string;
  readonly created: string;
  readonly hostnames?: readonly string[];
  readonly rules: readonly CompiledRule[];
  /** Rules dropped because the proxy cannot run them. */
  readonly dropped: readonly { readonly index: number; readonly message: string }[];
  /** The first backendRef that did not resolve, for the ResolvedRefs condition. */
  readonly refProblem?: { readonly reason: string; readonly message: string };
  /** BackendTLSPolicies (`<namespace>/<name>`) covering the Services this route uses. */
  readonly backendTLSPolicies: readonly string[];
}

/**
 * What a compiled rule needs from the proxy beyond what every flavour has
 * (proxy-flavor.ts); a Gateway whose flavour lacks it drops the rule (UnsupportedValue).
 */
export function ruleNeeds(rule: CompiledRule): Capability[] {
  const needs: Capability[] = [];
  if (rule.retry && rule.retry.codes.length > 0) needs.push("retryOnStatus");
  if (rule.mirrored) needs.push("mirror");
  if (rule.auth) needs.push("extAuth");
  if (rule.session) needs.push(...sessionNeeds(rule.session));
  return needs;
}

class RuleError extends Error {}

const fail = (message: string): never => {
  throw new RuleError(message);
};

/**
 * The admission rules' verdict per rule, computed once per rules array: snapshot objects are
 * never mutated (an update brings a new object), so an unchanged route is not re-validated
 * on every build.
 */
const ruleProblems = new WeakMap<object, ReturnType<typeof problemsPerRule>>();
function cachedProblems<R extends object>(
  rules: readonly R[] | undefined,
  check: Parameters<typeof problemsPerRule<R>>[1],
): ReturnType<typeof problemsPerRule> {
  if (!rules) return problemsPerRule([], check);
  let found = ruleProblems.get(rules);
  if (!found) ruleProblems.set(rules, (found = problemsPerRule(rules, check)));
  return found;
}

export function compileHTTPRoute(s: Snapshot, route: HTTPRoute): CompiledRoute {
  const problems = cachedProblems(route.spec?.rules, httpRouteRuleProblems);
  // The `x-kengine-*` rule fields are read only from routes made from an Ingress (identity).
  const fromIngress = isIngressObject(route);
  return compile(s, "HTTPRoute", route, (rule, i) => {
    unrunnable(problems[i]);
    const filters = rule.filters ?? [];
    const matches = (rule.matches && rule.matches.length > 0 ? rule.matches : [{}]).map((m, j) => {
      const base = `spec.rules[${i}].matches[${j}]`;
      const type = m.path?.type ?? "PathPrefix";
      const value = m.path?.value ?? "/";
      let path: PathMatchIR;
      if (type === "Exact") path = { type, value };
      else if (type === "PathPrefix") path = { type, value: normalizePrefix(value) };
      else if (type === "RegularExpression") path = { type, value };
      else return fail(`${base}.path.type ${type} is not supported`);
      if (type !== "RegularExpression" && !value.startsWith("/"))
        fail(`${base}.path.value must start with "/"`);
      return {
        path,
        method: m.method ? m.method.toUpperCase() : undefined,
        headers: valueMatches(`${base}.headers`, m.headers, true),
        queryParams: valueMatches(`${base}.queryParams`, m.queryParams, false),
      } satisfies HTTPMatchTemplate;
    });
    return {
      matches,
      filters,
      backendRefs: rule.backendRefs ?? [],
      timeouts: timeoutsIR(rule.timeouts, fromIngress ? rule : {}),
      retry: retryIR(rule.retry),
      session: fromIngress
        ? withSameSite(sessionIR(route, rule, i), rule)
        : sessionIR(route, rule, i),
      maxRequestBodyBytes: fromIngress ? maxRequestBody(rule) : undefined,
      sourceRanges: fromIngress ? sourceRanges(rule) : undefined,
    };
  });
}

export function compileGRPCRoute(s: Snapshot, route: GRPCRoute): CompiledRoute {
  const problems = cachedProblems(route.spec?.rules, grpcRouteRuleProblems);
  return compile(s, "GRPCRoute", route, (rule, i) => {
    unrunnable(problems[i]);
    const matches = (rule.matches && rule.matches.length > 0 ? rule.matches : [{}]).map((m, j) => {
      const base = `spec.rules[${i}].matches[${j}]`;
      const type = m.method?.type ?? "Exact";
      const service = m.method?.service;
      const method = m.method?.method;
      let path: PathMatchIR;
      if (!service && !method) path = { type: "PathPrefix", value: "/" };
      else if (type === "Exact") {
        if (service && method) path = { type: "Exact", value: `/${service}/${method}` };
        else if (service) path = { type: "PathPrefix", value: `/${service}` };
        else path = { type: "RegularExpression", value: `/[^/]+/${escapeRE(method!)}` };
      } else if (type === "RegularExpression") {
        path = {
          type: "RegularExpression",
          value: `/(?:${service ?? "[^/]+"})/(?:${method ?? "[^/]+"})`,
        };
      } else return fail(`${base}.method.type ${type} is not supported`);
      return {
        path,
        method: "POST",
        headers: valueMatches(`${base}.headers`, m.headers, true),
        queryParams: [],
        grpc: true,
      } satisfies HTTPMatchTemplate;
    });
    return {
      matches,
      filters: rule.filters ?? [],
      backendRefs: rule.backendRefs ?? [],
      session: sessionIR(route, rule, i),
    };
  });
}

interface RuleParts {
  readonly matches: readonly HTTPMatchTemplate[];
  readonly filters: readonly HTTPRouteFilter[];
  readonly backendRefs: readonly HTTPBackendRef[];
  readonly timeouts?: TimeoutsIR;
  readonly retry?: RetryIR;
  readonly session?: SessionIR;
  readonly maxRequestBodyBytes?: number;
  readonly sourceRanges?: SourceRangesIR;
}

/** CIDRs as the converter writes them (validation/nginx-annotations.ts); anything else: none. */
const CIDR = /^(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}\/[0-9]{1,2}|[0-9a-f:]+\/[0-9]{1,3})$/;
const cidrs = (v: unknown): string[] | undefined =>
  Array.isArray(v) && v.length > 0 && v.every(c => typeof c === "string" && CIDR.test(c))
    ? [...(v as string[])]
    : undefined;

/** The client address ranges of a rule made from an Ingress (SOURCE_RANGES_FIELD), if any. */
function sourceRanges(rule: object): SourceRangesIR | undefined {
  const v = (rule as Record<string, unknown>)[SOURCE_RANGES_FIELD];
  if (!v || typeof v !== "object") return undefined;
  const allow = cidrs((v as Record<string, unknown>)["allow"]);
  const deny = cidrs((v as Record<string, unknown>)["deny"]);
  return allow || deny ? { ...(allow && { allow }), ...(deny && { deny }) } : undefined;
}

/** A cookie session with the SameSite of a rule made from an Ingress (SESSION_SAME_SITE_FIELD). */
function withSameSite(session: SessionIR | undefined, rule: object): SessionIR | undefined {
  const v = (rule as Record<string, unknown>)[SESSION_SAME_SITE_FIELD];
  if (session?.mode !== "cookie" || (v !== "None" && v !== "Lax" && v !== "Strict")) return session;
  return { ...session, sameSite: v };
}

/** The body limit of a rule made from an Ingress (MAX_REQUEST_BODY_FIELD), if any. */
function maxRequestBody(rule: object): number | undefined {
  const v = (rule as Record<string, unknown>)[MAX_REQUEST_BODY_FIELD];
  return typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v : undefined;
}

function compile<R extends HTTPRoute | GRPCRoute>(
  s: Snapshot,
  kind: "HTTPRoute" | "GRPCRoute",
  route: R,
  parts: (rule: NonNullable<R["spec"]["rules"]>[number] & object, index: number) => RuleParts,
): CompiledRoute {
  const namespace = route.metadata.namespace ?? "";
  const rules: CompiledRule[] = [];
  const dropped: { index: number; message: string }[] = [];
  let refProblem: { reason: string; message: string } | undefined;
  const policies = new Set<string>();
  (route.spec?.rules ?? []).forEach((rule, index) => {
    // Resolve backends first: a dropped rule's references still count for ResolvedRefs.
    const refs = (rule.backendRefs ?? []) as readonly HTTPBackendRef[];
    const backends: BackendIR[] = [];
    // An XBackend's sessionPersistence applies when it is the rule's only backendRef (one
    // session over one backend's endpoints) and the rule has none of its own.
    let backendSession: SessionIR | undefined;
    for (const ref of refs) {
      const weight = ref.weight ?? 1;
      const r = resolveBackend(s, kind, namespace, ref);
      if (r.ok && r.session && refs.length === 1) backendSession = r.session;
      if (!r.ok) {
        refProblem ??= { reason: r.reason, message: r.message };
        if (weight > 0) backends.push({ type: "invalid", id: r.id, weight });
        continue;
      }
      for (const p of r.backendTLSPolicies ?? []) policies.add(p);
      if (weight <= 0) continue;
      if (r.backendTLS && !r.backendTLS.ok) {
        // The policy cannot be applied as written: refuse (500) rather than connect unverified.
        backends.push({ type: "invalid", id: r.id, weight });
        continue;
      }
      const h2c = kind === "GRPCRoute" || r.appProtocol === "kubernetes.io/h2c";
      const ops = backendHeaderOps(ref.filters ?? []);
      const rewrite = backendRewrite(ref.filters ?? []);
      backends.push({
        type: "service",
        id: r.id,
        weight,
        endpoints: r.endpoints,
        protocol: h2c ? "h2c" : "http",
        ...(r.backendTLS?.ok && { tls: r.backendTLS.tls }),
        ...(ops.request && { requestHeaders: ops.request }),
        ...(ops.response && { responseHeaders: ops.response }),
        ...(rewrite && { rewrite }),
        // Filled (or refused) per Gateway: translate/egress.ts.
        ...(r.named && { egressGuard: { deny: [] } }),
      });
    }
    const mirrors: MirrorIR[] = [];
    let mirrored = false;
    for (const f of rule.filters ?? []) {
      if (f.type !== "RequestMirror" || !f.requestMirror) continue;
      mirrored = true;
      const m = mirrorIR(s, kind, namespace, f.requestMirror);
      if (m.problem) refProblem ??= m.problem;
      if (m.mirror) mirrors.push(m.mirror);
    }
    const auth = isIngressObject(route) ? routeAuth(s, kind, namespace, rule) : {};
    if (auth.problem) refProblem ??= auth.problem;
    try {
      const own = parts(rule as never, index);
      const p = own.session || !backendSession ? own : { ...own, session: backendSession };
      rules.push({
        ...buildRule(index, kind, p, backends),
        ...(mirrors.length > 0 && { mirrors }),
        ...(mirrored && { mirrored }),
        ...(auth.auth && { auth: auth.auth }),
      });
    } catch (e: unknown) {
      if (!(e instanceof RuleError)) throw e;
      dropped.push({ index, message: e.message });
    }
  });
  return {
    kind,
    namespace,
    name: route.metadata.name,
    created: route.metadata.creationTimestamp ?? "",
    hostnames:
      route.spec?.hostnames && route.spec.hostnames.length > 0 ? route.spec.hostnames : undefined,
    rules,
    dropped,
    refProblem,
    backendTLSPolicies: [...policies].sort(),
  };
}

function buildRule(
  index: number,
  kind: string,
  p: RuleParts,
  backends: readonly BackendIR[],
): CompiledRule {
  let requestHeaders: HeaderOpsIR | undefined;
  let responseHeaders: HeaderOpsIR | undefined;
  let rewrite: RewriteIR | undefined;
  let redirect: HTTPRequestRedirectFilter | undefined;
  let cors: CorsIR | undefined;
  const at = (j: number): string => `spec.rules[${index}].filters[${j}]`;
  p.filters.forEach((f, j) => {
    switch (f.type) {
      case "RequestHeaderModifier":
        requestHeaders = mergeOps(requestHeaders, headerOps(f.requestHeaderModifier));
        break;
      case "ResponseHeaderModifier":
        responseHeaders = mergeOps(responseHeaders, headerOps(f.responseHeaderModifier));
        break;
      case "RequestRedirect":
        redirect = f.requestRedirect ?? {};
        break;
      case "URLRewrite":
        rewrite = {
          hostname: f.urlRewrite?.hostname,
          path: pathModifier(f.urlRewrite?.path),
        };
        break;
      case "CORS":
        if (kind !== "HTTPRoute") fail(`${at(j)}: filter type CORS is not supported`);
        cors = corsIR(f.cors ?? {});
        break;
      case "RequestMirror":
        // Resolved in compile(): its backend counts for ResolvedRefs even if the rule drops.
        if (kind !== "HTTPRoute") fail(`${at(j)}: filter type RequestMirror is not supported`);
        break;
      default:
        fail(`${at(j)}: filter type ${f.type} is not supported`);
    }
  });
  // backendRef-level filters are carried by each backend (resolved in compile()); others
  // than the header modifiers (and URLRewrite on HTTPRoute) are refused by the shared rules
  // before we get here.
  p.backendRefs.forEach((b, k) =>
    (b.filters ?? []).forEach((f, j) => {
      const rewrite = f.type === "URLRewrite" && kind === "HTTPRoute";
      if (f.type !== "RequestHeaderModifier" && f.type !== "ResponseHeaderModifier" && !rewrite)
        fail(
          `spec.rules[${index}].backendRefs[${k}].filters[${j}]: filter type ${f.type} is not supported on a backendRef`,
        );
    }),
  );
  return {
    index,
    matches: p.matches,
    requestHeaders,
    responseHeaders,
    rewrite,
    ...(cors && { cors }),
    redirect,
    backends,
    ...(p.timeouts && { timeouts: p.timeouts }),
    ...(p.retry && { retry: p.retry }),
    ...(p.session && { session: p.session }),
    ...(p.maxRequestBodyBytes !== undefined && { maxRequestBodyBytes: p.maxRequestBodyBytes }),
    ...(p.sourceRanges && { sourceRanges: p.sourceRanges }),
  };
}

/**
 * One RequestMirror filter: its backendRef resolved like a backendRef (a problem for
 * ResolvedRefs when it does not resolve: nothing is mirrored there), its share as a fraction.
 * No mirror when nothing would be sent: no ready endpoint, a zero share, or a
 * BackendTLSPolicy on the Service (the copy would travel unencrypted: not sent).
 */
function mirrorIR(
  s: Snapshot,
  kind: "HTTPRoute" | "GRPCRoute",
  namespace: string,
  f: HTTPRequestMirrorFilter,
): { mirror?: MirrorIR; problem?: { reason: string; message: string } } {
  const r = resolveBackend(s, kind, namespace, f.backendRef);
  if (!r.ok) return { problem: { reason: r.reason, message: `requestMirror ${r.message}` } };
  if (r.endpoints.length === 0 || r.backendTLS) return {};
  let numerator = f.percent ?? 100;
  let denominator = 100;
  if (f.fraction) {
    numerator = f.fraction.numerator;
    denominator = f.fraction.denominator ?? 100;
  }
  if (!(numerator > 0) || !(denominator > 0)) return {};
  return {
    mirror: {
      id: r.id,
      endpoints: r.endpoints,
      ...(numerator < denominator && { fraction: { numerator, denominator } }),
      ...(r.named && { egressGuard: { deny: [] } }),
    },
  };
}

/** A backendRef's own header modifiers, applied only to requests sent to that backend. */
function backendHeaderOps(filters: readonly HTTPRouteFilter[]): {
  request?: HeaderOpsIR;
  response?: HeaderOpsIR;
} {
  let request: HeaderOpsIR | undefined;
  let response: HeaderOpsIR | undefined;
  for (const f of filters) {
    if (f.type === "RequestHeaderModifier")
      request = mergeOps(request, headerOps(f.requestHeaderModifier));
    else if (f.type === "ResponseHeaderModifier")
      response = mergeOps(response, headerOps(f.responseHeaderModifier));
  }
  return { request, response };
}

/** A backendRef's own URLRewrite (HTTPRouteBackendURLRewrite), if any. */
function backendRewrite(filters: readonly HTTPRouteFilter[]): RewriteIR | undefined {
  const f = filters.find(x => x.type === "URLRewrite");
  if (!f) return undefined;
  const hostname = f.urlRewrite?.hostname;
  const path = pathModifier(f.urlRewrite?.path);
  if (hostname === undefined && path === undefined) return undefined;
  return { ...(hostname !== undefined && { hostname }), ...(path && { path }) };
}

/** The spec's default Access-Control-Max-Age when maxAge is unset. */
const DEFAULT_CORS_MAX_AGE = 5;

function corsIR(c: HTTPCORSFilter): CorsIR {
  return {
    allowOrigins: [...(c.allowOrigins ?? [])],
    allowMethods: [...(c.allowMethods ?? [])],
    allowHeaders: [...(c.allowHeaders ?? [])],
    exposeHeaders: [...(c.exposeHeaders ?? [])],
    allowCredentials: c.allowCredentials === true,
    maxAge: c.maxAge ?? DEFAULT_CORS_MAX_AGE,
  };
}

/**
 * A Gateway API Duration (GEP-2257: `1h`, `500ms`, `1m30s`) in milliseconds; undefined when
 * it is not one (the CRD's pattern refuses those already).
 */
export { durationMs };

/** The rule's timeouts, with a rule made from an Ingress's connection ones (PROXY_TIMEOUTS_FIELD). */
function timeoutsIR(t: HTTPRouteTimeouts | undefined, rule: object): TimeoutsIR | undefined {
  // A zero duration disables the timeout (spec): leave it out.
  const request = durationMs(t?.request) || undefined;
  const backendRequest = durationMs(t?.backendRequest) || undefined;
  const proxy = (rule as Record<string, unknown>)[PROXY_TIMEOUTS_FIELD];
  const seconds = (key: string): number | undefined => {
    const v = proxy && typeof proxy === "object" ? (proxy as Record<string, unknown>)[key] : 0;
    return typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v * 1000 : undefined;
  };
  const connect = seconds("connect");
  const send = seconds("send");
  const out = {
    ...(request !== undefined && { requestMs: request }),
    ...(backendRequest !== undefined && { backendRequestMs: backendRequest }),
    ...(connect !== undefined && { connectMs: connect }),
    ...(send !== undefined && { sendMs: send }),
  };
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Default number of retries when `attempts` is unset (implementation-specific in the spec). */
const DEFAULT_RETRY_ATTEMPTS = 1;

function retryIR(r: HTTPRouteRetry | undefined): RetryIR | undefined {
  if (!r) return undefined;
  const attempts = r.attempts ?? DEFAULT_RETRY_ATTEMPTS;
  const codes = [...new Set(r.codes ?? [])].sort((a, b) => a - b);
  if (attempts <= 0) return undefined;
  const backoff = durationMs(r.backoff);
  return { codes, attempts, ...(backoff && { backoffMs: backoff }) };
}

export function pathModifier(path: HTTPRequestRedirectFilter["path"]): RewriteIR["path"] {
  if (!path) return undefined;
  return path.type === "ReplaceFullPath"
    ? { type: "ReplaceFullPath", value: path.replaceFullPath ?? "/" }
    : { type: "ReplacePrefixMatch", value: path.replacePrefixMatch ?? "/" };
}

function headerOps(f: HTTPHeaderFilter | undefined): HeaderOpsIR {
  return {
    set: (f?.set ?? []).map(h => ({ name: h.name, value: h.value })),
    add: (f?.add ?? []).map(h => ({ name: h.name, value: h.value })),
    remove: [...(f?.remove ?? [])],
  };
}

function mergeOps(a: HeaderOpsIR | undefined, b: HeaderOpsIR): HeaderOpsIR {
  if (!a) return b;
  return {
    set: [...a.set, ...b.set],
    add: [...a.add, ...b.add],
    remove: [...a.remove, ...b.remove],
  };
}

function valueMatches(
  at: string,
  ms: readonly HTTPHeaderMatch[] | undefined,
  caseInsensitiveNames: boolean,
): ValueMatchIR[] {
  const seen = new Set<string>();
  const out: ValueMatchIR[] = [];
  (ms ?? []).forEach((m, k) => {
    // The spec: among entries with an equivalent name, only the first is considered.
    const key = caseInsensitiveNames ? m.name.toLowerCase() : m.name;
    if (seen.has(key)) return;
    seen.add(key);
    const type = m.type ?? "Exact";
    if (type !== "Exact" && type !== "RegularExpression")
      fail(`${at}[${k}].type ${type} is not supported`);
    out.push({ type: type as ValueMatchIR["type"], name: m.name, value: m.value });
  });
  return out;
}

/** Drops the rule when the shared rules found problems (all of them named in status). */
function unrunnable(problems: readonly FieldProblem[]): void {
  if (problems.length > 0) fail(problems.map(problemText).join("; "));
}

/** `/foo/` and `/foo` are the same prefix (segment semantics); `/` stays `/`. */
const normalizePrefix = (v: string): string => (v.length > 1 ? v.replace(/\/+$/, "") || "/" : v);

const escapeRE = (s: string): string => s.replace(/[\\.+*?()|[\]{}^$]/g, "\\$&");
