/**
 * Route-table deltas: the digest of a sealed config (skeleton + tables), the deltas between
 * two, and the push engine's choice between deltas and `/load` (a fake admin API that keeps
 * tables as the proxy does: If-Match, hash, label; the real proxy answers the same in
 * tests/integration/route-table-deltas.test.ts).
 */
import fc from "fast-check";
import { ProxyEndpoint, RouteTableInfo } from "./admin-client";
import { ManualClock } from "./backoff";
import { AdminApi, Fleet, FleetEvent } from "./fleet";
import { bootstrapConfig } from "../caddy/management";
import { SealedConfig, sealConfig } from "../caddy/seal";
import { must, testSpec } from "./test-spec";
import { err, ok, Result } from "../result";
import { applyDelta, deltaBody, runningAfterLoad, tableDeltas } from "../caddy/table-deltas";
import { tableHash } from "../caddy/table-digests";
import { goJSON } from "../caddy/list-json";

const spec = testSpec;

type Hosts = Record<string, readonly object[]>;
const answer = (body: string) => [{ handle: [{ handler: "static_response", body }] }];

/** A sealed config with one table `default/gw/http-80` holding `hosts`, on `port`. */
function configWith(hosts: Hosts, port = 80): SealedConfig {
  const base = must(bootstrapConfig(spec)) as { apps: { http: { servers: object } } };
  return must(
    sealConfig(
      JSON.stringify({
        ...base,
        apps: {
          ...base.apps,
          http: {
            servers: {
              ...base.apps.http.servers,
              "http-80": {
                listen: [`:${port}`],
                routes: [
                  { handle: [{ handler: "kengine_route_table", id: "default/gw/http-80", hosts }] },
                ],
              },
            },
          },
        },
      }),
      spec,
    ),
  );
}

describe("config tables", () => {
  it("host lists are hashed as Caddy re-encodes a loaded config (Go: sorted keys, HTML escaped)", () => {
    expect(goJSON({ b: 1, a: ["<&>", { z: null, y: true }], c: "\u2028" })).toBe(
      '{"a":["\\u003c\\u0026\\u003e",{"y":true,"z":null}],"b":1,"c":"\\u2028"}',
    );
  });

  it("hash is the XOR of per-key shares: independent of order, and every key counts", () => {
    const entry = fc.tuple(fc.domain(), fc.stringMatching(/^[0-9a-f]{64}$/));
    fc.assert(
      fc.property(fc.uniqueArray(entry, { selector: e => e[0] }), entries => {
        expect(tableHash(entries)).toBe(tableHash([...entries].reverse()));
        if (entries.length > 0) expect(tableHash(entries)).not.toBe(tableHash(entries.slice(1)));
      }),
    );
  });

  it("changing, adding and removing hosts are deltas of just those keys; the skeleton is unchanged", () => {
    const v1 = configWith({
      "a.example": answer("a"),
      "b.example": answer("b"),
      "*": answer("404"),
    });
    const v2 = configWith({
      "a.example": answer("a2"),
      "c.example": answer("c"),
      "*": answer("404"),
    });
    expect(v1.tables!.skeleton).toBe(v2.tables!.skeleton);
    const running = runningAfterLoad(v1.hash, v1.tables!);
    const deltas = tableDeltas(running, v2.tables!)!;
    expect(deltas).toHaveLength(1);
    const [d] = deltas;
    expect(d.ifMatch).toBe(v1.tables!.tables.get("default/gw/http-80")!.hash);
    expect(d.expect).toBe(v2.tables!.tables.get("default/gw/http-80")!.hash);
    expect([...d.hosts.keys()].sort()).toEqual(["a.example", "b.example", "c.example"]);
    expect(d.hosts.get("b.example")).toBeNull();
    expect(JSON.parse(deltaBody(d, "x"))).toEqual({
      hosts: { "a.example": answer("a2"), "b.example": null, "c.example": answer("c") },
      label: "x",
    });
    // Applied, the proxy runs v2's tables: nothing more to send.
    expect(tableDeltas(applyDelta(running, d), v2.tables!)).toEqual([]);
  });

  it("anything outside the table hosts needs a /load", () => {
    const v1 = configWith({ "a.example": answer("a") });
    const moved = configWith({ "a.example": answer("a") }, 81);
    expect(tableDeltas(runningAfterLoad(v1.hash, v1.tables!), moved.tables!)).toBeUndefined();
  });
});

/** The proxy's side, as proxy/routetable keeps it. */
class FakeProxy implements AdminApi {
  loaded: SealedConfig | undefined;
  tables = new Map<string, { hosts: Map<string, string>; label: string; version: number }>();
  loads = 0;
  deltas = 0;
  refuseHost: string | undefined;

  async load(_e: ProxyEndpoint, config: Buffer): Promise<Result<void, never>> {
    const c = [...sealedByBytes].find(s => s.bytes.equals(config))!;
    this.loads++;
    this.loaded = c;
    this.tables = new Map(
      [...(c.tables?.tables ?? new Map())].map(([id, t]) => [
        id,
        { hosts: new Map([...t.hosts].map(([k, v]) => [k, v.sha])), label: "", version: 1 },
      ]),
    );
    return ok(undefined);
  }
  async runsConfig(_e: ProxyEndpoint, hash: string) {
    return ok(this.loaded?.hash === hash);
  }
  #info(id: string): RouteTableInfo {
    const t = this.tables.get(id)!;
    return {
      id,
      version: t.version,
      hash: tableHash(t.hosts),
      hosts: t.hosts.size,
      label: t.label,
    };
  }
  async postRouteTable(_e: ProxyEndpoint, id: string, body: string, ifMatch: string) {
    const t = this.tables.get(id);
    if (!t) return err({ kind: "rejected" as const, status: 404, message: "no table" });
    if (this.#info(id).hash !== ifMatch)
      return err({ kind: "rejected" as const, status: 412, message: "hash" });
    const parsed = JSON.parse(body) as { hosts: Record<string, unknown>; label: string };
    if (this.refuseHost && this.refuseHost in parsed.hosts)
      return err({
        kind: "rejected" as const,
        status: 400,
        message: `host "${this.refuseHost}": route 0: loading handler modules: bad`,
      });
    const { createHash } = await import("node:crypto");
    for (const [k, v] of Object.entries(parsed.hosts)) {
      if (v === null) t.hosts.delete(k);
      else t.hosts.set(k, createHash("sha256").update(JSON.stringify(v)).digest("hex"));
    }
    t.label = parsed.label;
    t.version++;
    this.deltas++;
    return ok(this.#info(id));
  }
  async routeTables() {
    return ok([...this.tables.keys()].map(id => this.#info(id)));
  }
}

const sealedByBytes = new Set<SealedConfig>();
const seal = (hosts: Hosts, port = 80): SealedConfig => {
  const c = configWith(hosts, port);
  sealedByBytes.add(c);
  return c;
};

describe("the push engine with route tables", () => {
  const endpoint: ProxyEndpoint = {
    name: "gw-0",
    address: "10.0.0.1",
    port: 9443,
    serverName: "gw-0.gw-admin.default.svc",
  };
  let proxy: FakeProxy;
  let events: FleetEvent[];
  const fleetOf = (adopt = false) =>
    new Fleet({
      client: proxy,
      clock: new ManualClock(0),
      random: () => 0,
      adoptRunning: adopt,
      onEvent: e => events.push(e),
    });
  beforeEach(() => {
    proxy = new FakeProxy();
    events = [];
  });
  const pushed = () =>
    events.flatMap(e => (e.type === "pushed" ? [`${e.kind}:${e.hash.slice(0, 6)}`] : []));

  it("loads first, then sends host changes as deltas; other changes load", async () => {
    const fleet = fleetOf();
    const v1 = seal({ "a.example": answer("a"), "*": answer("404") });
    const v2 = seal({ "a.example": answer("a2"), "b.example": answer("b"), "*": answer("404") });
    const v3 = seal(
      { "a.example": answer("a2"), "b.example": answer("b"), "*": answer("404") },
      81,
    );
    fleet.update([{ endpoint, config: v1 }]);
    await fleet.settled();
    fleet.update([{ endpoint, config: v2 }]);
    await fleet.settled();
    expect([proxy.loads, proxy.deltas]).toEqual([1, 1]);
    expect(proxy.tables.get("default/gw/http-80")!.hosts.size).toBe(3);
    expect(fleet.state("gw-0")).toMatchObject({ phase: "Programmed", hash: v2.hash });
    // Verification after deltas: the base config and the tables, not the @id alone.
    await fleet.verify();
    expect(events.some(e => e.type === "drifted")).toBe(false);
    fleet.update([{ endpoint, config: v3 }]);
    await fleet.settled();
    expect(pushed()).toEqual([
      `load:${v1.hash.slice(0, 6)}`,
      `delta:${v2.hash.slice(0, 6)}`,
      `load:${v3.hash.slice(0, 6)}`,
    ]);
    fleet.close();
  });

  it("a table changed behind its back (412) falls back to a load", async () => {
    const fleet = fleetOf();
    const v1 = seal({ "a.example": answer("a") });
    const v2 = seal({ "a.example": answer("x") });
    fleet.update([{ endpoint, config: v1 }]);
    await fleet.settled();
    proxy.tables.get("default/gw/http-80")!.hosts.set("z.example", "0".repeat(64));
    fleet.update([{ endpoint, config: v2 }]);
    await fleet.settled();
    expect(proxy.loads).toBe(2);
    expect(fleet.state("gw-0")).toMatchObject({ phase: "Programmed", hash: v2.hash });
    fleet.close();
  });

  it("a refused delta fails with Caddy's error in /load words, and is never retried as a load", async () => {
    const fleet = fleetOf();
    const v1 = seal({ "a.example": answer("a") });
    const v2 = seal({ "a.example": answer("a"), "bad.example": answer("bad") });
    fleet.update([{ endpoint, config: v1 }]);
    await fleet.settled();
    proxy.refuseHost = "bad.example";
    fleet.update([{ endpoint, config: v2 }]);
    await fleet.settled();
    const failed = events.find(e => e.type === "failed");
    expect(failed).toMatchObject({ error: { kind: "rejected", status: 400 } });
    expect(failed?.type === "failed" && failed.error.message).toMatch(
      /^loading http app module: provision http: server http-80: setting up route handlers: route 0: loading handler modules: position 0: loading module 'kengine_route_table': provision http\.handlers\.kengine_route_table: host "bad\.example": /,
    );
    expect(proxy.loads).toBe(1);
    fleet.close();
  });

  it("a new controller adopts a proxy that runs the desired tables after deltas (no push)", async () => {
    const first = fleetOf();
    const v1 = seal({ "a.example": answer("a") });
    const v2 = seal({ "a.example": answer("a"), "b.example": answer("b") });
    first.update([{ endpoint, config: v1 }]);
    await first.settled();
    first.update([{ endpoint, config: v2 }]);
    await first.settled();
    first.close();
    events = [];
    const second = fleetOf(true);
    second.update([{ endpoint, config: v2 }]);
    await second.settled();
    expect(events.map(e => e.type)).toEqual(["adopted"]);
    expect([proxy.loads, proxy.deltas]).toEqual([1, 1]);
    // ... and one that holds other tables is re-programmed.
    events = [];
    const third = fleetOf(true);
    third.update([{ endpoint, config: v1 }]);
    await third.settled();
    expect(events.map(e => e.type)).toEqual(["drifted", "pushed"]);
    third.close();
    second.close();
  });
});

describe("fan-out", () => {
  it("a change goes to 50 proxies as the same delta, at most 16 in flight, computed once", async () => {
    const proxies = new Map<string, FakeProxy>();
    const bodies = new Set<string>();
    let inFlight = 0;
    let most = 0;
    const of = (e: ProxyEndpoint) => proxies.get(e.name)!;
    const client: AdminApi = {
      load: (e, c) => of(e).load(e, c),
      runsConfig: (e, h) => of(e).runsConfig(e, h),
      routeTables: e => of(e).routeTables(),
      postRouteTable: async (e, id, body, ifMatch) => {
        bodies.add(body);
        most = Math.max(most, ++inFlight);
        await new Promise(r => setTimeout(r, 1));
        inFlight--;
        return of(e).postRouteTable(e, id, body, ifMatch);
      },
    };
    const endpoints = Array.from({ length: 50 }, (_, i) => ({
      name: `gw-${i}`,
      address: `10.0.0.${i + 1}`,
      port: 9443,
      serverName: `gw-${i}.gw-admin.default.svc`,
    }));
    for (const e of endpoints) proxies.set(e.name, new FakeProxy());
    const events: FleetEvent[] = [];
    const fleet = new Fleet({ client, onEvent: e => events.push(e) });
    const hosts: Hosts = Object.fromEntries(
      Array.from({ length: 200 }, (_, i) => [`h${i}.example`, answer(`h${i}`)]),
    );
    const v1 = seal(hosts);
    const v2 = seal({ ...hosts, "new.example": answer("new") });
    fleet.update(endpoints.map(endpoint => ({ endpoint, config: v1 })));
    await fleet.settled();
    fleet.update(endpoints.map(endpoint => ({ endpoint, config: v2 })));
    await fleet.settled();
    const deltas = events.filter(e => e.type === "pushed" && e.kind === "delta");
    expect(deltas).toHaveLength(50);
    expect(deltas.every(e => e.type === "pushed" && e.hosts === 1)).toBe(true);
    expect(most).toBeLessThanOrEqual(16);
    expect(most).toBeGreaterThan(1);
    // One body for all (the proxies loaded the same config): the change is built once.
    expect(bodies.size).toBe(1);
    const running = runningAfterLoad(v1.hash, v1.tables!);
    expect(tableDeltas(running, v2.tables!)).toBe(tableDeltas(running, v2.tables!));
    fleet.close();
  });
});
