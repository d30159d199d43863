/**
 * Compiles HTTPRoute and GRPCRoute rules, once per route, into listener-independent rules:
 * matches, header operations, rewrites, redirects (resolved per listener later) and
 * resolved backends. Rules the proxy cannot run are dropped with a message (the spec's
 * "Drop Rule" approach to PartiallyInvalid); backendRefs that do not resolve keep their
 * share of traffic and answer it with HTTP 500.
 */
import { BackendIR, HTTPMatchIR, HeaderOpsIR, PathMatchIR, RewriteIR, ValueMatchIR } from "../ir";
import {
  GRPCRoute,
  HTTPBackendRef,
  HTTPHeaderFilter,
  HTTPHeaderMatch,
  HTTPRequestRedirectFilter,
  HTTPRoute,
  HTTPRouteFilter,
  Snapshot,
} from "../snapshot";
import { checkRegex } from "../validation/regex";
import { resolveBackend } from "./backends";

export type HTTPMatchTemplate = Omit<HTTPMatchIR, "hostname">;

export interface CompiledRule {
  readonly index: number;
  readonly matches: readonly HTTPMatchTemplate[];
  readonly requestHeaders?: HeaderOpsIR;
  readonly responseHeaders?: HeaderOpsIR;
  readonly rewrite?: RewriteIR;
  /** Set when the rule redirects; resolved against the listener's protocol and port. */
  readonly redirect?: HTTPRequestRedirectFilter;
  readonly backends: readonly BackendIR[];
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

class RuleError extends Error {}

const fail = (message: string): never => {
  throw new RuleError(message);
};

export function compileHTTPRoute(s: Snapshot, route: HTTPRoute): CompiledRoute {
  return compile(s, "HTTPRoute", route, (rule, i) => {
    const filters = rule.filters ?? [];
    const matches = (rule.matches && rule.matches.length > 0 ? rule.matches : [{}]).map((m, j) => {
      const base = `spec.rules[${i}].matches[${j}]`;
      const type = m.path?.type ?? "PathPrefix";
      const value = m.path?.value ?? "/";
      let path: PathMatchIR;
      if (type === "Exact") path = { type, value };
      else if (type === "PathPrefix") path = { type, value: normalizePrefix(value) };
      else if (type === "RegularExpression") {
        regexOk(`${base}.path.value`, value);
        path = { type, value };
      } else return fail(`${base}.path.type ${type} is not supported`);
      if (type !== "RegularExpression" && !value.startsWith("/"))
        fail(`${base}.path.value must start with "/"`);
      return {
        path,
        method: m.method ? m.method.toUpperCase() : undefined,
        headers: valueMatches(`${base}.headers`, m.headers, true),
        queryParams: valueMatches(`${base}.queryParams`, m.queryParams, false),
      } satisfies HTTPMatchTemplate;
    });
    // Timeouts. `request` (whole request, client to response) has no stock Caddy/Kengine
    // equivalent (design §5b). `backendRequest` covers sending the request up to receiving the
    // full response; reverse_proxy's dial_timeout and response_header_timeout stop at the
    // response headers and read_timeout is per read, so a slowly streamed body would outlive
    // the limit: no faithful mapping either. Both are reported, never approximated.
    if (rule.timeouts?.request) {
      fail(
        `spec.rules[${i}].timeouts.request: not supported by the proxy (no per-route total request timeout in Caddy ≤ 2.11 or Kengine)`,
      );
    }
    if (rule.timeouts?.backendRequest) {
      fail(
        `spec.rules[${i}].timeouts.backendRequest: not supported by the proxy (its upstream timeouts end at the response headers, not the full response)`,
      );
    }
    // Retries: Caddy ≥ 2.11.3 can retry on response status (retry_match with {rp.status_code}),
    // Kengine (Caddy 2.8) cannot, and the controller does not know the proxy's version yet.
    if (rule.retry)
      fail(
        `spec.rules[${i}].retry: not supported by the proxy (retrying on status codes needs Caddy ≥ 2.11.3)`,
      );
    if (rule.sessionPersistence) fail(`spec.rules[${i}].sessionPersistence is not supported`);
    return { matches, filters, backendRefs: rule.backendRefs ?? [] };
  });
}

export function compileGRPCRoute(s: Snapshot, route: GRPCRoute): CompiledRoute {
  return compile(s, "GRPCRoute", route, (rule, i) => {
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
        if (service) regexOk(`${base}.method.service`, service);
        if (method) regexOk(`${base}.method.method`, method);
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
    if (rule.sessionPersistence) fail(`spec.rules[${i}].sessionPersistence is not supported`);
    return { matches, filters: rule.filters ?? [], backendRefs: rule.backendRefs ?? [] };
  });
}

interface RuleParts {
  readonly matches: readonly HTTPMatchTemplate[];
  readonly filters: readonly HTTPRouteFilter[];
  readonly backendRefs: readonly HTTPBackendRef[];
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
    for (const ref of refs) {
      const weight = ref.weight ?? 1;
      const r = resolveBackend(s, kind, namespace, ref);
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
      backends.push({
        type: "service",
        id: r.id,
        weight,
        endpoints: r.endpoints,
        protocol: h2c ? "h2c" : "http",
        ...(r.backendTLS?.ok && { tls: r.backendTLS.tls }),
      });
    }
    try {
      const p = parts(rule as never, index);
      rules.push(buildRule(index, kind, p, backends));
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
        if (kind !== "HTTPRoute") fail(`${at(j)}: RequestRedirect is not allowed on ${kind}`);
        redirect = f.requestRedirect ?? {};
        checkPathModifier(at(j), redirect.path, p.matches);
        break;
      case "URLRewrite":
        if (kind !== "HTTPRoute") fail(`${at(j)}: URLRewrite is not allowed on ${kind}`);
        checkPathModifier(at(j), f.urlRewrite?.path, p.matches);
        rewrite = {
          hostname: f.urlRewrite?.hostname,
          path: pathModifier(f.urlRewrite?.path),
        };
        break;
      case "RequestMirror":
        fail(`${at(j)}: RequestMirror is not supported by the proxy`);
        break;
      case "ExtensionRef":
        fail(
          `${at(j)}: ExtensionRef ${f.extensionRef?.kind ?? ""} ${f.extensionRef?.name ?? ""} is not supported`,
        );
        break;
      default:
        fail(`${at(j)}: filter type ${f.type} is not supported`);
    }
  });
  if (redirect && rewrite)
    fail(`spec.rules[${index}]: RequestRedirect and URLRewrite cannot be combined`);
  // backendRef-level filters: supported when the rule has a single backendRef.
  const withFilters = p.backendRefs.filter(b => (b.filters ?? []).length > 0);
  if (withFilters.length > 0) {
    if (p.backendRefs.length > 1)
      fail(
        `spec.rules[${index}].backendRefs: filters on one of several backendRefs are not supported`,
      );
    (withFilters[0].filters ?? []).forEach((f, j) => {
      const where = `spec.rules[${index}].backendRefs[0].filters[${j}]`;
      if (f.type === "RequestHeaderModifier")
        requestHeaders = mergeOps(requestHeaders, headerOps(f.requestHeaderModifier));
      else if (f.type === "ResponseHeaderModifier")
        responseHeaders = mergeOps(responseHeaders, headerOps(f.responseHeaderModifier));
      else fail(`${where}: filter type ${f.type} is not supported on a backendRef`);
    });
  }
  return {
    index,
    matches: p.matches,
    requestHeaders,
    responseHeaders,
    rewrite,
    redirect,
    backends,
  };
}

function checkPathModifier(
  at: string,
  path: HTTPRequestRedirectFilter["path"],
  matches: readonly HTTPMatchTemplate[],
): void {
  if (!path) return;
  if (path.type === "ReplacePrefixMatch") {
    if (path.replacePrefixMatch === undefined)
      fail(`${at}: ReplacePrefixMatch needs replacePrefixMatch`);
    if (matches.some(m => m.path.type !== "PathPrefix"))
      fail(`${at}: ReplacePrefixMatch needs PathPrefix matches only`);
  } else if (path.type === "ReplaceFullPath") {
    if (path.replaceFullPath === undefined) fail(`${at}: ReplaceFullPath needs replaceFullPath`);
  } else fail(`${at}: path modifier type ${path.type} is not supported`);
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
    if (type === "RegularExpression") regexOk(`${at}[${k}].value`, m.value);
    else if (type !== "Exact") fail(`${at}[${k}].type ${type} is not supported`);
    out.push({ type: type as ValueMatchIR["type"], name: m.name, value: m.value });
  });
  return out;
}

function regexOk(at: string, value: string): void {
  const problems = checkRegex(at, value);
  if (problems.length > 0) fail(`${at}: ${problems[0].message}`);
}

/** `/foo/` and `/foo` are the same prefix (segment semantics); `/` stays `/`. */
const normalizePrefix = (v: string): string => (v.length > 1 ? v.replace(/\/+$/, "") || "/" : v);

const escapeRE = (s: string): string => s.replace(/[\\.+*?()|[\]{}^$]/g, "\\$&");
