import { snapshotObjects } from "../../hack/bench/workload";
import { snapshotOf } from "../snapshot";
import { translate } from "../translate";
import { BACKEND_VAR, toCaddyConfig } from "./config";

/** Every handler object in the config, depth first. */
function handlers(v: unknown, out: Record<string, unknown>[] = []): Record<string, unknown>[] {
  if (Array.isArray(v)) for (const x of v) handlers(x, out);
  else if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    if (typeof o.handler === "string") out.push(o);
    for (const x of Object.values(o)) handlers(x, out);
  }
  return out;
}

describe("shared dispatch", () => {
  const ir = translate(snapshotOf(snapshotObjects({ routes: 60, gateways: 1, services: 4 })))
    .gateways[0];

  it("provisions one reverse_proxy per distinct backend set, named by the routes", () => {
    const all = handlers(toCaddyConfig(ir));
    const proxies = all.filter(h => h.handler === "reverse_proxy");
    const named = all.filter(h => h.handler === "vars").map(h => h[BACKEND_VAR]);
    const distinct = new Set(proxies.map(p => JSON.stringify(p)));
    expect(distinct.size).toBe(proxies.length);
    expect(new Set(named).size).toBe(proxies.length);
    expect(named.length).toBeGreaterThan(proxies.length);
  });

  it("per-route: one reverse_proxy per forwarding route, no variable", () => {
    const all = handlers(toCaddyConfig(ir, { dispatch: "per-route" }));
    expect(all.filter(h => h.handler === "vars")).toHaveLength(0);
    const shared = handlers(toCaddyConfig(ir)).filter(h => h.handler === "vars").length;
    expect(all.filter(h => h.handler === "reverse_proxy")).toHaveLength(shared);
  });
});
