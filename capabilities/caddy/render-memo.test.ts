/**
 * The render memo (render-memo.ts) changes no byte: over random snapshots changed one object at
 * a time and translated incrementally (so unchanged route entries stay the same objects), the
 * config rendered with the memo equals the one rendered from scratch, as data and as the JSON
 * text `configJSON` splices from kept lists. And it keeps what it should: after one route of
 * many changes, only that route's entries are rendered again and unchanged host lists are the
 * same objects.
 */
import fc from "fast-check";
import { arbitrarySnapshot } from "../../tests/support/arbitrary-snapshot";
import { configJSON } from "../proxies";
import { IncrementalTranslator } from "../reconcile/reuse";
import { KubeObject, Snapshot, apply, snapshotOf } from "../snapshot";
import { toCaddyConfig } from "./config";
import { fragmentCounts } from "./render-memo";
import { tableCounts } from "./route-table";
import { CaddyRoute } from "./types";

const RUNS = Number(process.env.KG_PROPERTY_RUNS ?? 100);

const keyOf = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;

function expectSameAsScratch(snapshot: Snapshot, translator: IncrementalTranslator): void {
  for (const ir of translator.translate(snapshot, {}).result.gateways) {
    const memo = toCaddyConfig(ir);
    const scratch = JSON.stringify(toCaddyConfig(ir, { memo: false }));
    expect(JSON.stringify(memo)).toBe(scratch);
    expect(configJSON(memo as never)).toBe(scratch);
  }
}

describe("render memo", () => {
  it("renders the same config as from scratch after every change", () => {
    const tables = tableCounts();
    fc.assert(
      fc.property(
        arbitrarySnapshot,
        arbitrarySnapshot,
        fc.array(fc.record({ index: fc.nat(), remove: fc.boolean() }), { maxLength: 10 }),
        (initial, other, steps) => {
          const pool = [...initial, ...other];
          const translator = new IncrementalTranslator();
          let snapshot = snapshotOf(initial);
          const current = new Set(initial.map(keyOf));
          expectSameAsScratch(snapshot, translator);
          for (const { index, remove } of steps) {
            const o = pool[index % pool.length]!;
            if (remove && !current.delete(keyOf(o))) continue;
            if (!remove) current.add(keyOf(o));
            snapshot = apply(snapshot, {
              type: remove ? "delete" : "upsert",
              kind: o.kind as never,
              object: o,
            }).snapshot;
            expectSameAsScratch(snapshot, translator);
          }
        },
      ),
      { numRuns: RUNS },
    );
    // Both ways of making a table were taken (whole, and from the last one by the change).
    expect(tableCounts().delta).toBeGreaterThan(tables.delta);
    expect(tableCounts().whole).toBeGreaterThan(tables.whole);
  });

  it("renders only a changed route's entries and keeps the other hosts' lists", () => {
    const GW = "gateway.networking.k8s.io/v1";
    const route = (i: number, path: string): KubeObject =>
      ({
        apiVersion: GW,
        kind: "HTTPRoute",
        metadata: { name: `r${i}`, namespace: "default", generation: 1 },
        spec: {
          parentRefs: [{ name: "gw" }],
          hostnames: [`r${i}.test`],
          rules: [
            { matches: [{ path: { type: "PathPrefix", value: path } }] },
            { matches: [{ path: { type: "Exact", value: "/x" } }] },
          ],
        },
      }) as KubeObject;
    const objects = [
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } },
      {
        apiVersion: GW,
        kind: "GatewayClass",
        metadata: { name: "kengine", generation: 1 },
        spec: { controllerName: "kengine.io/gateway-controller" },
      },
      {
        apiVersion: GW,
        kind: "Gateway",
        metadata: { name: "gw", namespace: "default", generation: 1 },
        spec: {
          gatewayClassName: "kengine",
          listeners: [{ name: "h", protocol: "HTTP", port: 80 }],
        },
      },
      ...Array.from({ length: 20 }, (_, i) => route(i, "/a")),
    ] as KubeObject[];
    const translator = new IncrementalTranslator();
    const hostsOf = (s: Snapshot) => {
      const config = toCaddyConfig(translator.translate(s, {}).result.gateways[0]!);
      const server = config.apps.http!.servers["http-80"] as unknown as { routes: CaddyRoute[] };
      const h = server.routes[0]!.handle[0]!;
      if (h.handler !== "kengine_route_table") throw new Error("no route table");
      return h.hosts;
    };
    let snapshot = snapshotOf(objects);
    const before = hostsOf(snapshot);
    const counts = fragmentCounts();
    const tables = tableCounts();
    snapshot = apply(snapshot, {
      type: "upsert",
      kind: "HTTPRoute",
      object: route(7, "/b"),
    }).snapshot;
    const after = hostsOf(snapshot);
    const now = fragmentCounts();
    // r7's two entries rendered again, every other route's entries kept
    expect(now.rendered - counts.rendered).toBe(2);
    expect(now.reused - counts.reused).toBe(38);
    const changed = Object.keys(after).filter(k => after[k] !== before[k]);
    expect(changed).toEqual(["r7.test"]);
    // …made from the last table by the changed routes, not whole
    expect(tableCounts().delta - tables.delta).toBe(1);
  });
});
