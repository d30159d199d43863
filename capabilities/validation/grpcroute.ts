/**
 * Rules for GRPCRoute: method and service regular expressions (RE2, as the translator embeds
 * them in a path expression), header matches, filters, sessionPersistence. Shared with the
 * translator (translate/routes.ts) per rule, like the HTTPRoute rules.
 */
import { Collector, items } from "./budget";
import {
  HeaderFilter,
  RouteFilter,
  StringMatch,
  headerMatches,
  regex,
  routeFilters,
  sessionPersistence,
} from "./httproute";
import { FieldProblem, display } from "./regex";
import { SessionRuleLike } from "./session";

export interface GRPCRouteRuleLike {
  readonly matches?: readonly {
    readonly method?: {
      readonly type?: string;
      readonly service?: string;
      readonly method?: string;
    };
    readonly headers?: readonly StringMatch[];
  }[];
  readonly filters?: readonly RouteFilter[];
  readonly backendRefs?: readonly { readonly filters?: readonly RouteFilter[] }[];
  readonly sessionPersistence?: unknown;
}
export interface GRPCRouteLike {
  readonly spec?: { readonly rules?: readonly GRPCRouteRuleLike[] };
}
export type { HeaderFilter };

export function grpcRouteProblems(route: GRPCRouteLike, c = new Collector()): FieldProblem[] {
  items(route.spec?.rules).forEach((rule, r) => {
    if (!c.done) grpcRouteRuleProblems(rule, r, c);
  });
  return c.problems();
}

export function grpcRouteRuleProblems(
  rule: GRPCRouteRuleLike,
  index: number,
  c = new Collector(),
): FieldProblem[] {
  const at = `spec.rules[${index}]`;
  if (!rule || typeof rule !== "object") return c.problems();
  items(rule.matches).forEach((m, j) => {
    if (c.done || !m || typeof m !== "object") return;
    const base = `${at}.matches[${j}]`;
    const type = display(m.method?.type ?? "Exact");
    if (type === "RegularExpression") {
      if (m.method?.service !== undefined) regex(c, `${base}.method.service`, m.method.service);
      if (m.method?.method !== undefined) regex(c, `${base}.method.method`, m.method.method);
    } else if (type !== "Exact") {
      c.add([
        {
          path: `${base}.method.type`,
          value: type,
          message: `${type} is not supported; accepted: Exact, RegularExpression`,
        },
      ]);
    }
    headerMatches(c, `${base}.headers`, m.headers);
  });
  routeFilters(c, "GRPCRoute", at, rule);
  sessionPersistence(c, at, rule as SessionRuleLike);
  return c.problems();
}
