/**
 * Rules for TLSRoute, TCPRoute and UDPRoute: what the proxy's layer-4 app (caddy-l4) cannot
 * run as written. Their hostnames, parentRefs and backendRefs are checked by the CRDs; missing
 * backends, unknown backend kinds, cross-namespace references without a ReferenceGrant and
 * hostnames no listener serves are reported through status, as the spec asks.
 *
 * One thing is beyond the proxy: caddy-l4 has no weighted load balancing, so the translator
 * (caddy/config.ts) repeats each backend's upstreams by its weight reduced by the weights'
 * greatest common divisor, at most MAX_L4_WEIGHT_RATIO times. Weights whose reduced ratio is
 * larger cannot be honoured and are refused here rather than silently approximated.
 */
import { Collector, items } from "./budget";
import { FieldProblem } from "./regex";

/** The largest weight, divided by the route's weights' common divisor, the layer-4 proxy runs exactly. */
export const MAX_L4_WEIGHT_RATIO = 100;

export interface L4RouteLike {
  readonly spec?: {
    readonly rules?: readonly {
      readonly backendRefs?: readonly { readonly weight?: number }[];
    }[];
  };
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * Every problem of a TLSRoute, TCPRoute or UDPRoute. The backends of all rules share one
 * balancer (layer-4 rules have no matches), so the weights are compared across rules.
 */
export function l4RouteProblems(route: L4RouteLike, c = new Collector()): FieldProblem[] {
  const weighted: { path: string; weight: number }[] = [];
  items(route?.spec?.rules).forEach((rule, r) => {
    if (!rule || typeof rule !== "object") return;
    items(rule.backendRefs).forEach((b, k) => {
      const path = `spec.rules[${r}].backendRefs[${k}].weight`;
      if (!c.spend(path) || !b || typeof b !== "object") return;
      const w = b.weight ?? 1;
      if (typeof w === "number" && Number.isInteger(w) && w > 0) weighted.push({ path, weight: w });
    });
  });
  if (weighted.length < 2) return c.problems();
  const g = weighted.map(w => w.weight).reduce(gcd);
  for (const w of weighted) {
    const reduced = w.weight / g;
    if (reduced > MAX_L4_WEIGHT_RATIO)
      c.add([
        {
          path: w.path,
          value: String(w.weight),
          message: `the proxy's layer-4 balancing runs weights up to ${MAX_L4_WEIGHT_RATIO} once divided by the route's common divisor (${g}); this one is ${reduced}: choose smaller weights or a simpler ratio`,
        },
      ]);
  }
  return c.problems();
}
