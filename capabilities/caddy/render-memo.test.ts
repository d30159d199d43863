/**
 * The render memo (render-memo.ts) changes no byte: over random snapshots changed one object at
 * a time and translated incrementally (so unchanged route entries stay the same objects), the
 * config rendered with the memo equals the one rendered from scratch, as data and as the JSON
 * text `configJSON` splices from kept lists. And it keeps what it should: after one route of
 * many changes, only that route's entries are rendered again and unchanged host lists are the
 * same objects.
 */
import fc from "fast-check";
import { services } from "../../hack/bench/workload";
import { arbitrarySnapshot } from "../../tests/support/arbitrary-snapshot";
import { configJSON } from "../caddy";
import { IncrementalTranslator } from "../reconcile/reuse";
import { KubeObject, Snapshot, apply, snapshotOf } from "../snapshot";
import { toCaddyConfig } from "./config";
import { listenerCounts } from "./listener-memo";
import { fragmentCounts } from "./render-memo";
import { tableCounts } from "./route-table";
import { CaddyRoute } from "./types";

const RUNS = Number(process.env.KG_PROPERTY_RUNS ?? 100);
/** The seed of the properties whose coverage is counted (any seed whose cases cover both paths). */
const COVERAGE_SEED = 31;
const GW = "gateway.networking.k8s.io/v1";

/** Namespace `default`, GatewayClass `kengine` and Gateway `default/gw` (one HTTP listener on 80). */
const gatewayObjects = (): KubeObject[] =>
  [
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
  ] as KubeObject[];

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
      // A fixed seed: the counts asserted below are over the generated cases, so they must
      // be the same every run (with a random seed a run could, rarely, miss one way).
      { numRuns: RUNS, seed: COVERAGE_SEED },
    );
    // Both ways of making a table were taken (whole, and from the last one by the change).
    expect(tableCounts().delta).toBeGreaterThan(tables.delta);
    expect(tableCounts().whole).toBeGreaterThan(tables.whole);
  });

  it("renders an added route naming a hostname twice as from scratch (the table's delta)", () => {
    const route = (name: string, hostnames: string[]): KubeObject =>
      ({
        apiVersion: GW,
        kind: "HTTPRoute",
        metadata: { name, namespace: "default", generation: 1 },
        spec: {
          parentRefs: [{ name: "gw" }],
          hostnames,
          rules: [{ backendRefs: [{ name: "svc", port: 80 }] }],
        },
      }) as KubeObject;
    const tables = tableCounts();
    const translator = new IncrementalTranslator();
    let snapshot = snapshotOf([...gatewayObjects(), route("a", ["a.example"])]);
    expectSameAsScratch(snapshot, translator);
    for (const r of [
      route("b", ["dup.example", "b.example", "dup.example"]),
      route("c", ["dup.example"]),
    ]) {
      snapshot = apply(snapshot, { type: "upsert", kind: "HTTPRoute", object: r }).snapshot;
      expectSameAsScratch(snapshot, translator);
    }
    expect(tableCounts().delta).toBeGreaterThan(tables.delta);
  });

  it("renders only a changed route's entries and keeps the other hosts' lists", () => {
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
      ...gatewayObjects(),
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

  it("patches the merge of host catch-alls as a merge from scratch would make it", () => {
    // Many routes over few hostnames and backends: catch-alls merge by backend, hostnames
    // move between routes and groups, routes limited by path stay, routes without hostnames
    // or with wildcards take any host (the merge's end), routes come and go.
    // ("10": a key JSON writes first, as an array index)
    const hosts = ["a.t", "b.t", "c.t", "d.t", "e.t", "f.t", "*.t", "10"];
    const route = fc.record({
      name: fc.constantFrom("r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"),
      hostnames: fc.uniqueArray(fc.constantFrom(...hosts), { maxLength: 2 }),
      backend: fc.constantFrom("svc0", "svc1", "svc2"),
      path: fc.constantFrom(undefined, "/p", "/q"),
      remove: fc.boolean(),
    });
    const object = (r: {
      name: string;
      hostnames: string[];
      backend: string;
      path?: string;
    }): KubeObject =>
      ({
        apiVersion: GW,
        kind: "HTTPRoute",
        metadata: { name: r.name, namespace: "default", generation: 1 },
        spec: {
          parentRefs: [{ name: "gw" }],
          ...(r.hostnames.length > 0 && { hostnames: r.hostnames }),
          rules: [
            {
              ...(r.path && { matches: [{ path: { type: "PathPrefix", value: r.path } }] }),
              backendRefs: [{ name: r.backend, port: 8080 }],
            },
          ],
        },
      }) as KubeObject;
    const base = [
      ...gatewayObjects(),
      // svc0–svc2, each with a ready endpoint
      ...services({ routes: 0, namespace: "default", services: 3 }),
    ] as KubeObject[];
    const before = listenerCounts();
    fc.assert(
      fc.property(
        fc.array(route, { maxLength: 8 }),
        fc.array(route, { minLength: 1, maxLength: 20 }),
        (initial, steps) => {
          const translator = new IncrementalTranslator();
          let snapshot = snapshotOf([...base, ...initial.map(object)]);
          expectSameAsScratch(snapshot, translator);
          for (const r of steps) {
            const o = object(r);
            snapshot = apply(snapshot, {
              type: r.remove ? "delete" : "upsert",
              kind: "HTTPRoute",
              object: o,
            }).snapshot;
            expectSameAsScratch(snapshot, translator);
          }
        },
      ),
      // A fixed seed, for the count asserted below (as above).
      { numRuns: RUNS * 3, seed: COVERAGE_SEED },
    );
    // The lists were patched (not only made whole).
    expect(listenerCounts().patched - before.patched).toBeGreaterThan(RUNS);
  });
});
