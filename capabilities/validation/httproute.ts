/**
 * Rules for HTTPRoute (and, through the shared helpers, GRPCRoute): everything in one route
 * the proxy cannot run as written, each problem with its field path. Admission refuses a
 * route with any problem; the translator (translate/routes.ts) calls the same per-rule
 * function and drops a rule with problems, reporting them as UnsupportedValue, so admission
 * and status always name the same problems.
 *
 * Not checked here (cross-object facts the spec wants reported through status): missing
 * backends, backends in other namespaces without a ReferenceGrant, unknown parents or
 * sections, hostname mismatches.
 *
 * Features the proxy cannot run (docs/features.md) are problems: filters other than the header
 * modifiers, RequestRedirect, URLRewrite, CORS and RequestMirror (ExternalAuth, any
 * ExtensionRef). All of them are Extended or implementation-specific in Gateway API v1.6.1
 * and not in our supportedFeatures, so the conformance suite never creates them for us.
 * sessionPersistence is read by validation/session.ts (what it refuses is said there).
 *
 * RequestMirror needs a module of our own in the proxy: these per-rule rules accept it, and
 * whether a Gateway's proxies have the module is the one mapping in
 * flavor/proxy-flavor.ts (capability `mirror`). Which proxies run a route depends on its
 * parent Gateways' parameters, which admission cannot read cheaply: admission accepts, and
 * the translator drops the rule for a parent whose flavour lacks it (UnsupportedValue).
 */
import { SessionRuleLike, sessionPersistenceProblems } from "./session";
import { Collector, items } from "./budget";
import {
  checkHeaderName,
  checkHeaderValue,
  checkMatchedHeaderName,
  checkRemovedHeaderName,
  checkURLPath,
} from "./fields";
import { FieldProblem, MAX_REGEX_LENGTH, checkRegex, display } from "./regex";

/* ------------------------------------------------------------------ loose shapes */
// Admission sees raw JSON, translation sees snapshot objects: the rules read both.

export interface StringMatch {
  readonly type?: string;
  readonly name?: string;
  readonly value?: string;
}
export interface HeaderFilter {
  readonly set?: readonly { readonly name?: string; readonly value?: string }[];
  readonly add?: readonly { readonly name?: string; readonly value?: string }[];
  readonly remove?: readonly string[];
}
export interface PathModifier {
  readonly type?: string;
  readonly replaceFullPath?: string;
  readonly replacePrefixMatch?: string;
}
export interface RouteFilter {
  readonly type?: string;
  readonly requestHeaderModifier?: HeaderFilter;
  readonly responseHeaderModifier?: HeaderFilter;
  readonly requestRedirect?: { readonly path?: PathModifier; readonly hostname?: string };
  readonly urlRewrite?: { readonly path?: PathModifier; readonly hostname?: string };
  readonly requestMirror?: {
    readonly percent?: number;
    readonly fraction?: { readonly numerator?: number; readonly denominator?: number };
  };
  readonly extensionRef?: {
    readonly group?: string;
    readonly kind?: string;
    readonly name?: string;
  };
}
export interface HTTPRouteMatchLike {
  readonly path?: StringMatch;
  readonly headers?: readonly StringMatch[];
  readonly queryParams?: readonly StringMatch[];
}
export interface BackendRefLike {
  readonly filters?: readonly RouteFilter[];
}
export interface HTTPRouteRuleLike {
  readonly matches?: readonly HTTPRouteMatchLike[];
  readonly filters?: readonly RouteFilter[];
  readonly backendRefs?: readonly BackendRefLike[];
  readonly timeouts?: { readonly request?: string; readonly backendRequest?: string };
  readonly retry?: unknown;
  readonly sessionPersistence?: unknown;
}
export interface HTTPRouteLike {
  readonly spec?: { readonly rules?: readonly HTTPRouteRuleLike[] };
}

/** Filters the proxy runs, per route kind (rule level). */
export const SUPPORTED_FILTERS = {
  HTTPRoute: [
    "RequestHeaderModifier",
    "ResponseHeaderModifier",
    "RequestRedirect",
    "URLRewrite",
    "CORS",
    "RequestMirror",
  ],
  GRPCRoute: ["RequestHeaderModifier", "ResponseHeaderModifier"],
} as const;
/**
 * Filters the proxy runs on a backendRef (each backendRef its own), per route kind: URLRewrite
 * (Gateway API v1.7.0 HTTPRouteBackendURLRewrite) only on HTTPRoute backendRefs.
 */
export const SUPPORTED_BACKEND_FILTERS = {
  HTTPRoute: ["RequestHeaderModifier", "ResponseHeaderModifier", "URLRewrite"],
  GRPCRoute: ["RequestHeaderModifier", "ResponseHeaderModifier"],
} as const;

export type RouteKind = keyof typeof SUPPORTED_FILTERS;

/* ------------------------------------------------------------------ entry points */

/** Collects every problem of an HTTPRoute's spec (not just the first), within the budget. */
export function httpRouteProblems(route: HTTPRouteLike, c = new Collector()): FieldProblem[] {
  items(route.spec?.rules).forEach((rule, r) => {
    if (!c.done) httpRouteRuleProblems(rule, r, c);
  });
  return c.problems();
}

/** The problems of rule `index` of an HTTPRoute (used by the translator for one rule). */
export function httpRouteRuleProblems(
  rule: HTTPRouteRuleLike,
  index: number,
  c = new Collector(),
): FieldProblem[] {
  const at = `spec.rules[${index}]`;
  if (!rule || typeof rule !== "object") return c.problems();
  items(rule.matches).forEach((m, j) => {
    if (c.done || !m || typeof m !== "object") return;
    const base = `${at}.matches[${j}]`;
    const path = m.path;
    if (path) {
      const type = display(path.type ?? "PathPrefix");
      if (type === "RegularExpression") regex(c, `${base}.path.value`, path.value);
      else if (type !== "Exact" && type !== "PathPrefix") {
        c.add([
          unsupportedType(`${base}.path.type`, type, ["Exact", "PathPrefix", "RegularExpression"]),
        ]);
      }
    }
    headerMatches(c, `${base}.headers`, m.headers);
    valueMatches(c, `${base}.queryParams`, m.queryParams, false);
  });
  routeFilters(c, "HTTPRoute", at, rule);
  pathModifierUse(c, at, rule);
  // timeouts and retry: run by reverse_proxy (caddy/config.ts); the CRD checks their values.
  sessionPersistence(c, at, rule as SessionRuleLike);
  return c.problems();
}

/**
 * Redirect and rewrite together, or ReplacePrefixMatch with matches other than PathPrefix,
 * have no meaning the proxy could run (the CRD's CEL rules refuse them too).
 */
function pathModifierUse(c: Collector, at: string, rule: HTTPRouteRuleLike): void {
  const filters = items(rule.filters);
  const redirect = filters.findIndex(f => f?.type === "RequestRedirect");
  const rewrite = filters.findIndex(f => f?.type === "URLRewrite");
  if (redirect >= 0 && rewrite >= 0) {
    c.add([
      {
        path: `${at}.filters[${rewrite}]`,
        value: "URLRewrite",
        message: "RequestRedirect and URLRewrite cannot be combined in one rule",
      },
    ]);
  }
  const matches = items(rule.matches);
  const prefixNeedsPathPrefix = (f: RouteFilter, where: string): void => {
    const p =
      f?.type === "RequestRedirect"
        ? f.requestRedirect?.path
        : f?.type === "URLRewrite"
          ? f.urlRewrite?.path
          : undefined;
    if (p?.type !== "ReplacePrefixMatch") return;
    const bad = matches.findIndex(m => (m?.path?.type ?? "PathPrefix") !== "PathPrefix");
    if (bad >= 0) {
      c.add([
        {
          path: `${where}.${f.type === "RequestRedirect" ? "requestRedirect" : "urlRewrite"}.path.type`,
          value: "ReplacePrefixMatch",
          message: `needs PathPrefix matches only (spec.rules[…].matches[${bad}] is ${display(matches[bad].path?.type)})`,
        },
      ]);
    }
  };
  filters.forEach((f, j) => prefixNeedsPathPrefix(f, `${at}.filters[${j}]`));
  // (null, as a client may send, is no path: the CRD's schema would prune it)
  const rewritesPath = (f: RouteFilter): boolean =>
    f?.type === "URLRewrite" && (f.urlRewrite?.path ?? undefined) !== undefined;
  const rulePath = rewrite >= 0 && rewritesPath(filters[rewrite]);
  items(rule.backendRefs).forEach((b, k) =>
    items(b?.filters).forEach((f, j) => {
      const where = `${at}.backendRefs[${k}].filters[${j}]`;
      prefixNeedsPathPrefix(f, where);
      // Both levels rewriting the path: which runs on whose result is not defined by the
      // spec, and a prefix replacement would read the path the rule already rewrote.
      if (rulePath && rewritesPath(f))
        c.add([
          {
            path: `${where}.urlRewrite.path`,
            value: display(f?.urlRewrite?.path?.type ?? ""),
            message: `cannot be combined with the rule's own URLRewrite path (${at}.filters[${rewrite}]): rewrite the path in one place`,
          },
        ]);
    }),
  );
}

/* ------------------------------------------------------------------ shared with GRPCRoute */

/** Session persistence (validation/session.ts), with the rule for its backendRefs. */
export function sessionPersistence(c: Collector, at: string, rule: SessionRuleLike): void {
  sessionPersistenceProblems(c, at, rule);
}

export function regex(c: Collector, path: string, value: unknown): void {
  const v = typeof value === "string" ? value : "";
  // Longer than MAX_REGEX_LENGTH is refused without parsing: charge at most that.
  if (!c.spend(path, Math.min(v.length, MAX_REGEX_LENGTH + 1))) return;
  c.add(checkRegex(path, v));
}

/** Header matches: names the proxy can receive, values a request can carry, regexes RE2 runs. */
export function headerMatches(
  c: Collector,
  at: string,
  ms: readonly StringMatch[] | undefined,
): void {
  valueMatches(c, at, ms, true);
}

function valueMatches(
  c: Collector,
  at: string,
  ms: readonly StringMatch[] | undefined,
  header: boolean,
): void {
  items(ms).forEach((m, k) => {
    if (c.done || !m || typeof m !== "object") return;
    const type = display(m.type ?? "Exact");
    if (header) {
      if (!c.spend(`${at}[${k}].name`)) return;
      c.add(checkMatchedHeaderName(`${at}[${k}].name`, m.name));
    }
    if (type === "RegularExpression") regex(c, `${at}[${k}].value`, m.value);
    else if (type === "Exact") {
      if (header && c.spend(`${at}[${k}].value`))
        c.add(checkHeaderValue(`${at}[${k}].value`, m.value, "match"));
    } else c.add([unsupportedType(`${at}[${k}].type`, type, ["Exact", "RegularExpression"])]);
  });
}

/** Rule filters and backendRef filters of an HTTPRoute or GRPCRoute rule. */
/**
 * Problems per rule, for the translator: the rules of one route share one budget, as in
 * admission, and once it runs out every later rule carries the closing problem (unchecked
 * rules are not run).
 */
export function problemsPerRule<R>(
  rules: readonly R[],
  check: (rule: R, index: number, c: Collector) => unknown,
): FieldProblem[][] {
  const c = new Collector();
  const out: FieldProblem[][] = [];
  let seen = 0;
  rules.forEach((rule, i) => {
    if (!c.done) check(rule, i, c);
    const all = c.problems();
    out.push(c.done && all.length === seen ? [all[all.length - 1]] : all.slice(seen));
    seen = all.length;
  });
  return out;
}

export function routeFilters(
  c: Collector,
  kind: RouteKind,
  at: string,
  rule: {
    readonly filters?: readonly RouteFilter[];
    readonly backendRefs?: readonly BackendRefLike[];
  },
): void {
  const supported: readonly string[] = SUPPORTED_FILTERS[kind];
  items(rule.filters).forEach((f, j) => {
    if (!c.done)
      filter(
        c,
        `${at}.filters[${j}]`,
        f,
        supported,
        `on ${kind === "HTTPRoute" ? "an" : "a"} ${kind} rule`,
      );
  });
  const refs = items(rule.backendRefs);
  refs.forEach((b, k) => {
    const fs = items(b?.filters);
    if (fs.length === 0 || c.done) return;
    fs.forEach((f, j) => {
      if (!c.done)
        filter(
          c,
          `${at}.backendRefs[${k}].filters[${j}]`,
          f,
          SUPPORTED_BACKEND_FILTERS[kind],
          "on a backendRef",
        );
    });
  });
}

function filter(
  c: Collector,
  at: string,
  f: RouteFilter,
  supported: readonly string[],
  where: string,
): void {
  const type = display(f?.type ?? "");
  if (!supported.includes(type)) {
    if (type === "ExtensionRef") {
      const e = f.extensionRef ?? {};
      c.add([
        {
          path: `${at}.extensionRef`,
          value: `${display(e.group ?? "")}/${display(e.kind ?? "")} ${display(e.name ?? "")}`,
          message: `the proxy implements no ExtensionRef filters (supported ${where}: ${supported.join(", ")})`,
        },
      ]);
    } else {
      c.add([
        {
          path: `${at}.type`,
          value: type,
          message: `${type} is not supported by the proxy (supported ${where}: ${supported.join(", ")})`,
        },
      ]);
    }
    return;
  }
  if (type === "RequestHeaderModifier")
    headerModifier(c, `${at}.requestHeaderModifier`, f.requestHeaderModifier);
  else if (type === "ResponseHeaderModifier")
    headerModifier(c, `${at}.responseHeaderModifier`, f.responseHeaderModifier);
  else if (type === "RequestRedirect")
    pathModifier(c, `${at}.requestRedirect.path`, f.requestRedirect?.path);
  else if (type === "URLRewrite") pathModifier(c, `${at}.urlRewrite.path`, f.urlRewrite?.path);
  else if (type === "RequestMirror") mirrorShare(c, `${at}.requestMirror`, f.requestMirror);
}

/** percent or fraction, not both, a share in [0, 1] (the CRD's rules, for raw JSON too). */
function mirrorShare(c: Collector, at: string, m: RouteFilter["requestMirror"]): void {
  const fraction = m?.fraction;
  if (m?.percent !== undefined && fraction !== undefined)
    c.add([
      { path: at, value: "percent and fraction", message: "set percent or fraction, not both" },
    ]);
  if (fraction === undefined) return;
  const n = fraction.numerator ?? 0;
  const d = fraction.denominator ?? 100;
  if (!(d > 0 && n >= 0 && n <= d))
    c.add([
      {
        path: `${at}.fraction`,
        value: `${n}/${d}`,
        message: "needs 0 <= numerator <= denominator and denominator > 0",
      },
    ]);
}

function headerModifier(c: Collector, at: string, h: HeaderFilter | undefined): void {
  for (const op of ["set", "add"] as const) {
    items(h?.[op]).forEach((e, i) => {
      const p = `${at}.${op}[${i}]`;
      if (!e || typeof e !== "object" || !c.spend(p)) return;
      c.add(checkHeaderName(`${p}.name`, e?.name));
      c.add(checkHeaderValue(`${p}.value`, e?.value, "modifier"));
    });
  }
  items(h?.remove).forEach((name, i) => {
    const p = `${at}.remove[${i}]`;
    if (c.spend(p)) c.add(checkRemovedHeaderName(p, name));
  });
}

function pathModifier(c: Collector, at: string, p: PathModifier | undefined): void {
  if (!p) return;
  if (p.type === "ReplaceFullPath") {
    if (c.spend(`${at}.replaceFullPath`))
      c.add(checkURLPath(`${at}.replaceFullPath`, p.replaceFullPath ?? ""));
  } else if (p.type === "ReplacePrefixMatch") {
    if (c.spend(`${at}.replacePrefixMatch`))
      c.add(checkURLPath(`${at}.replacePrefixMatch`, p.replacePrefixMatch ?? ""));
  } else
    c.add([
      unsupportedType(`${at}.type`, display(p.type ?? ""), [
        "ReplaceFullPath",
        "ReplacePrefixMatch",
      ]),
    ]);
}

const unsupportedType = (
  path: string,
  type: string,
  accepted: readonly string[],
): FieldProblem => ({
  path,
  value: type,
  message: `${type} is not supported; accepted: ${accepted.join(", ")}`,
});
