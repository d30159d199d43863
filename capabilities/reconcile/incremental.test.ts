/**
 * Incremental equals full: over random sequences of changes (add, update,
 * delete of Gateways, routes, Services, EndpointSlices, Secrets…) applied to a snapshot one
 * event at a time, what the controller's build makes incrementally (translation with each
 * unchanged Gateway's IR kept, reconcile/reuse.ts, and the sealed config cached per IR,
 * plan.ts) equals a full build from scratch of the same objects: the same Caddy JSON bytes
 * per Gateway and the same status results. Also checks that unchanged Gateways are not
 * rendered again.
 */
import { podManagementSpec } from "../workload";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { parseSnapshotYAML } from "../../hack/translate";
import { arbitrarySnapshot } from "../../tests/support/arbitrary-snapshot";
import { sealConfig } from "../caddy";
import { createAuthority, generateKeyPair } from "../pki/pki";
import { fromScratch, tableHash } from "../caddy/table-digests";
import { capabilitiesOf, DEFAULT_PROXY_FLAVOR } from "../flavor/proxy-flavor";
import { KINDS, KubeObject, Snapshot, apply, snapshotOf } from "../snapshot";
import { routeDeltas, translate } from "../translate";
import { gatewayCaddyConfig, sealGatewayConfig, sealedFor, sealedRenders } from "./plan";
import { IncrementalTranslator } from "./reuse";

const RUNS = Number(process.env.KG_PROPERTY_RUNS ?? 100);

const spec = (() => {
  const r = createAuthority({
    commonName: "controller CA",
    keys: generateKeyPair(),
    notBefore: new Date("2026-11-20T00:00:00Z"),
    lifetimeDays: 3650,
  });
  if (!r.ok) throw new Error(r.error);
  return podManagementSpec(r.value.certificatePem);
})();

/** A generated snapshot moved to a second Gateway `gw2` (its routes `b-…`; Services shared). */
function asSecondGateway(objects: readonly KubeObject[]): KubeObject[] {
  return objects.map(o => {
    if (o.kind === "Gateway") return { ...o, metadata: { ...o.metadata, name: "gw2" } };
    if (o.kind !== "HTTPRoute") return o;
    const route = o as KubeObject & { spec: { parentRefs?: readonly object[] } };
    return {
      ...route,
      metadata: { ...o.metadata, name: `b-${o.metadata.name}` },
      spec: { ...route.spec, parentRefs: route.spec.parentRefs?.map(p => ({ ...p, name: "gw2" })) },
    } as KubeObject;
  });
}

const keyOf = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/** The objects that can be added, updated to and deleted: two universes of two Gateways each. */
const universe = fc
  .tuple(arbitrarySnapshot, arbitrarySnapshot, arbitrarySnapshot, arbitrarySnapshot)
  .map(([a, b, c, d]) => ({
    initial: [...a, ...asSecondGateway(b)],
    pool: [...a, ...asSecondGateway(b), ...c, ...asSecondGateway(d)],
  }));

const scenario = universe.chain(({ initial, pool }) =>
  fc.record({
    initial: fc.constant(initial),
    pool: fc.constant(pool),
    steps: fc.array(fc.record({ index: fc.nat({ max: pool.length - 1 }), remove: fc.boolean() }), {
      minLength: 1,
      maxLength: 12,
    }),
  }),
);

/**
 * A full build from nothing: fresh objects, fresh translation, rendered (without the render
 * memo, which it would otherwise share with the incremental build) and sealed anew (without
 * deriving its route tables' digests and hosts from an earlier seal's).
 */
function full(objects: Iterable<KubeObject>) {
  const t = translate(snapshotOf(structuredClone([...objects])));
  return {
    configs: t.gateways.map(ir => ({
      key: `${ir.namespace}/${ir.name}`,
      bytes: sealResult(fromScratch(() => sealGatewayConfig(ir, spec, { memo: false }))),
    })),
    statuses: JSON.stringify(t.statuses),
  };
}

/**
 * A sealed config as text: hash, size, bytes and route tables (each table's place, hash and
 * per-key list digests; the table hash also checked against one computed from scratch).
 */
const sealResult = (r: ReturnType<typeof sealGatewayConfig>) => {
  if (!r.ok) return `refused: ${r.error.join("; ")}`;
  const { hash, bytes, size, tables } = r.value;
  expect(size ?? bytes.length).toBe(bytes.length);
  const digests = [...(tables?.tables.values() ?? [])].map(t => {
    // (by key: a digest map's order is not what a proxy sees, and one derived from the last
    // table's adds new keys at its end)
    const hosts = [...t.hosts]
      .map(([key, list]) => [key, list.sha] as const)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    expect(t.hash).toBe(tableHash(hosts));
    return { ...t, hosts };
  });
  return `${hash}\n${bytes.toString("utf8")}\n${tables?.skeleton}\n${JSON.stringify(digests)}`;
};

/**
 * The golden inputs (tests/golden/*.in.yaml) as worlds to change: ListenerSets,
 * ReferenceGrants, Namespaces with labels, Secrets, ConfigMaps, BackendTLSPolicies,
 * KengineParameters, L4 routes… A run starts from one golden's objects and adds, updates and
 * deletes objects of it and of a second golden (goldens reuse names such as `default/gw` and
 * `default/web`, so the second's object is often another version of the first's), and
 * versions of its own: each Namespace without its labels (selectors stop matching), each
 * EndpointSlice without endpoints.
 */
const goldenWorlds: readonly (readonly KubeObject[])[] = (() => {
  const dir = join(__dirname, "..", "..", "tests", "golden");
  return readdirSync(dir)
    .filter(f => f.endsWith(".in.yaml"))
    .sort()
    .map(f =>
      parseSnapshotYAML(readFileSync(join(dir, f), "utf8")).filter(o =>
        (KINDS as readonly (string | undefined)[]).includes(o.kind),
      ),
    );
})();

const variantsOf = (objects: readonly KubeObject[]): KubeObject[] =>
  objects.flatMap((o): KubeObject[] => {
    if (o.kind === "Namespace")
      return [
        {
          ...o,
          metadata: { ...o.metadata, labels: { "kubernetes.io/metadata.name": o.metadata.name } },
        },
      ];
    if (o.kind === "EndpointSlice") return [{ ...o, endpoints: [] } as KubeObject];
    // our own status write coming back: the same Gateway with a status and a new resourceVersion
    // (translation keeps the object it had: translate/incremental/status-echo.ts), and one whose spec also
    // changed under the same status
    if (o.kind === "Gateway") {
      const status = {
        conditions: [{ type: "Accepted", status: "True", reason: "Accepted", message: "echo" }],
        listeners: [{ name: "echo", attachedRoutes: 7 }],
      };
      const echo = { ...o, metadata: { ...o.metadata, resourceVersion: "echo" }, status };
      return [
        echo as KubeObject,
        {
          ...echo,
          metadata: { ...echo.metadata, resourceVersion: "echo2", labels: { echo: "2" } },
        } as KubeObject,
      ];
    }
    return [];
  });

const COMMON: ReadonlySet<string> = new Set([
  "HTTPRoute",
  "GRPCRoute",
  "TLSRoute",
  "TCPRoute",
  "UDPRoute",
  "Service",
  "EndpointSlice",
]);

const goldenScenario = (a: number) =>
  fc.nat({ max: goldenWorlds.length - 1 }).chain(b => {
    const initial = goldenWorlds[a]!;
    const pool = [...initial, ...variantsOf(initial), ...goldenWorlds[b]!];
    // Most steps change an object other than a route, Service or EndpointSlice (few of them).
    const rare = [...pool.keys()].filter(i => !COMMON.has(pool[i]!.kind ?? ""));
    const index =
      rare.length > 0
        ? fc.oneof(
            { arbitrary: fc.nat({ max: pool.length - 1 }), weight: 1 },
            { arbitrary: fc.constantFrom(...rare), weight: 3 },
          )
        : fc.nat({ max: pool.length - 1 });
    return fc.record({
      initial: fc.constant(initial),
      pool: fc.constant(pool),
      steps: fc.array(fc.record({ index, remove: fc.boolean() }), { minLength: 1, maxLength: 15 }),
    });
  });

const ROUTE_KINDS: ReadonlySet<string> = new Set([
  "HTTPRoute",
  "GRPCRoute",
  "TLSRoute",
  "TCPRoute",
  "UDPRoute",
]);

/** Applies `steps` to `initial` one event at a time, comparing each build with a full build. */
function expectIncrementalEqualsFull(
  initial: readonly KubeObject[],
  pool: readonly KubeObject[],
  steps: readonly { index: number; remove: boolean }[],
): void {
  const current = new Map(initial.map(o => [keyOf(o), o] as const));
  let snapshot: Snapshot = snapshotOf(initial);
  const translator = new IncrementalTranslator();
  let previous = new Map<string, string>();
  /** `routeChange`: only routes changed since the last check, so no route is walked. */
  const check = (routeChange = false) => {
    const renders = sealedRenders();
    const deltas = routeDeltas();
    const inc = translator.translate(snapshot, {});
    if (routeChange) expect(routeDeltas()).toBe(deltas + 1);
    const configs = inc.result.gateways.map(ir => ({
      key: `${ir.namespace}/${ir.name}`,
      bytes: sealResult(sealedFor(ir, spec)),
    }));
    const want = full(current.values());
    expect(configs).toEqual(want.configs);
    expect(JSON.stringify(inc.result.statuses)).toBe(want.statuses);
    // Only Gateways whose config changed are rendered again.
    const changed = configs.filter(c => previous.get(c.key) !== c.bytes).length;
    expect(sealedRenders() - renders).toBeLessThanOrEqual(inc.translated - inc.reused);
    expect(inc.translated - inc.reused).toBeGreaterThanOrEqual(changed);
    previous = new Map(configs.map(c => [c.key, c.bytes]));
  };
  check();
  for (const { index, remove } of steps) {
    const o = pool[index]!;
    const before = snapshot;
    if (remove) {
      if (!current.delete(keyOf(o))) continue;
      snapshot = apply(snapshot, {
        type: "delete",
        kind: o.kind as never,
        object: o,
      }).snapshot;
    } else {
      current.set(keyOf(o), o);
      snapshot = apply(snapshot, {
        type: "upsert",
        kind: o.kind as never,
        object: o,
      }).snapshot;
    }
    check(snapshot !== before && ROUTE_KINDS.has(o.kind ?? ""));
  }
}

describe("incremental build equals a full build", () => {
  it("gives the same Caddy JSON per Gateway and the same statuses after every change", () => {
    fc.assert(
      fc.property(scenario, ({ initial, pool, steps }) => {
        expectIncrementalEqualsFull(initial, pool, steps);
      }),
      { numRuns: RUNS },
    );
  });

  it("…over every golden input's objects (ListenerSets, ReferenceGrants, labels, policies, L4)", () => {
    // Every golden in turn: a uniform pick among ~40 left some untried at the default runs.
    for (const a of goldenWorlds.keys())
      fc.assert(
        fc.property(goldenScenario(a), ({ initial, pool, steps }) => {
          expectIncrementalEqualsFull(initial, pool, steps);
        }),
        { numRuns: Math.max(10, Math.ceil(RUNS / 5)) },
      );
  });

  it("reuses every Gateway's sealed config when nothing changed (a build after a push result)", () => {
    fc.assert(
      fc.property(universe, ({ initial }) => {
        const snapshot = snapshotOf(initial);
        const translator = new IncrementalTranslator();
        const first = translator.translate(snapshot, {}).result.gateways;
        for (const ir of first) sealedFor(ir, spec);
        const renders = sealedRenders();
        const again = translator.translate(snapshot, {});
        for (const ir of again.result.gateways) sealedFor(ir, spec);
        expect(again.reused).toBe(first.length);
        expect(sealedRenders()).toBe(renders);
      }),
      { numRuns: 20 },
    );
  });

  it("seals a built config without parsing it back: the same bytes as sealing its text", () => {
    fc.assert(
      fc.property(universe, ({ initial }) => {
        for (const ir of translate(snapshotOf(initial)).gateways) {
          const text = JSON.stringify(gatewayCaddyConfig(ir, spec));
          const options = {
            trafficMetrics: capabilitiesOf(ir.flavor ?? DEFAULT_PROXY_FLAVOR).appMetrics
              ? ("app" as const)
              : ("server" as const),
          };
          expect(sealResult(sealGatewayConfig(ir, spec))).toBe(
            sealResult(sealConfig(text, spec, options)),
          );
        }
      }),
      { numRuns: 30 },
    );
  });
});
