/**
 * Scenario "translate": snapshot → Caddy JSON text for every Gateway, the controller's pure
 * work per build, against JSON.parse(JSON.stringify(objects)) of the same input (the cost of
 * merely touching the data). Median of several runs after a warm-up.
 */
import { toCaddyConfig } from "../../capabilities/caddy";
import { snapshotOf } from "../../capabilities/snapshot";
import { translate } from "../../capabilities/translate";
import { median, now, round } from "./stats";
import { snapshotObjects } from "./workload";

export interface TranslateSample {
  readonly routes: number;
  readonly ms: number;
  readonly jsonRoundTripMs: number;
  /**
   * The same translation of freshly created objects. `ms` is a rebuild over the same objects,
   * as the controller's builds after any change are: unchanged objects keep their identity,
   * so the per-object caches (rule validation, endpoints per slice map) hit.
   */
  readonly coldMs: number;
  /** Bytes of Caddy JSON produced (all Gateways). */
  readonly configBytes: number;
  readonly runs: number;
}

/**
 * Full translation, as the controller does it per build (reconcile/plan.ts): snapshot →
 * statuses and IR → Caddy config → compact JSON text, for every Gateway.
 */
export function translateToJSON(objects: Parameters<typeof snapshotOf>[0]): string[] {
  const result = translate(snapshotOf(objects));
  return result.gateways.map(ir => JSON.stringify(toCaddyConfig(ir)));
}

export function benchTranslate(sizes = [100, 1000, 10000], runs = 7): TranslateSample[] {
  const out: TranslateSample[] = [];
  for (const routes of sizes) {
    const objects = snapshotObjects({ routes, gateways: 10 });
    const n = routes >= 10000 ? Math.max(3, Math.ceil(runs / 2)) : runs;
    // Warm-up (JIT), then alternate the two measurements so drift hits both alike.
    let bytes = 0;
    for (const s of translateToJSON(objects)) bytes += s.length;
    JSON.parse(JSON.stringify(objects));
    const t: number[] = [];
    const j: number[] = [];
    const cold: number[] = [];
    for (let k = 0; k < n; k++) {
      let a = now();
      translateToJSON(objects);
      t.push(now() - a);
      a = now();
      JSON.parse(JSON.stringify(objects));
      j.push(now() - a);
      // The same input as new objects: no per-object cache can help (a controller's first build).
      const fresh = structuredClone(objects);
      a = now();
      translateToJSON(fresh);
      cold.push(now() - a);
    }
    out.push({
      routes,
      ms: round(median(t)),
      jsonRoundTripMs: round(median(j)),
      coldMs: round(median(cold)),
      configBytes: bytes,
      runs: n,
    });
  }
  return out;
}
