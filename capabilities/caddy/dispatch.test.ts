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
    const forwarding = ir.httpServers
      .flatMap(s => s.listeners)
      .flatMap(l => l.routes)
      .filter(e => e.action.type === "forward").length;
    expect(all.filter(h => h.handler === "reverse_proxy")).toHaveLength(forwarding);
  });

  it("merges whole-host routes with the same handlers into one host list, after the others", () => {
    // The linear shape (stock Caddy): on Bundled each merged hostname is a key of the table.
    const config = toCaddyConfig({ ...ir, flavor: "Caddy" }) as unknown as {
      apps: {
        http: {
          servers: Record<
            string,
            { routes: { handle: { routes?: Route[]; hosts?: Record<string, Route[]> }[] }[] }
          >;
        };
      };
    };
    type Route = { match?: { host?: string[] }[]; handle: unknown[] };
    // The listener without hostname: its subroute, or its key in the route table (Bundled).
    const h = config.apps.http.servers["http-80"].routes[0].handle[0];
    const routes = h.hosts?.["*"] ?? h.routes!;
    const merged = routes.map((r, i) => ({ i, n: r.match?.[0]?.host?.length ?? 0 }));
    const many = merged.filter(m => m.n > 1);
    expect(many.length).toBeGreaterThan(0);
    // Every host appears once across the host lists.
    const hosts = routes.flatMap(r => (r.match ?? []).flatMap(m => m.host ?? []));
    const listed = routes
      .filter(r => (r.match?.[0]?.host?.length ?? 0) > 1)
      .flatMap(r => r.match![0].host!);
    expect(new Set(listed).size).toBe(listed.length);
    // The merged block is the tail (before the 404): only whole-host routes from the first on.
    const first = Math.min(...many.map(m => m.i));
    for (const r of routes.slice(first, -1)) expect(Object.keys(r.match![0])).toEqual(["host"]);
    expect(hosts.length).toBeGreaterThan(routes.length);
  });
});
