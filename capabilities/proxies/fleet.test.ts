/**
 * Push-engine logic: hash skip, back-off, restart detection, forgetting, concurrency. HTTP
 * goes to an undici MockAgent with net connect disabled; time is a ManualClock. The push
 * itself is proven against real Caddy in tests/integration/proxy-admin.test.ts.
 */
import { MockAgent } from "undici";
import { DEFAULT_ELECTION, LeaderElector, LeaseRecord, LeaseStore } from "../election";
import { AdminClient, ProxyEndpoint } from "./admin-client";
import { ManualClock } from "./backoff";
import { AdminApi, Fleet, FleetEvent } from "./fleet";
import { bootstrapConfig } from "../caddy/management";
import { SealedConfig, sealConfig } from "../caddy/seal";
import { must, testSpec } from "./test-spec";
import { SecretPem } from "../pki/secret";

const spec = testSpec;
/** A sealed config whose content differs by `marker`. */
const configWith = (marker: string): SealedConfig => {
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
              app: {
                listen: [":80"],
                routes: [{ handle: [{ handler: "static_response", body: marker }] }],
              },
            },
          },
        },
      }),
      spec,
    ),
  );
};
const v1 = configWith("v1");
const v2 = configWith("v2");
const endpoint = (i: number): ProxyEndpoint => ({
  name: `gw-${i}`,
  address: `10.0.0.${i}`,
  port: 9443,
  serverName: `gw-${i}.gw-admin.default.svc`,
});
const originOf = (e: ProxyEndpoint) => `https://${e.address}:${e.port}`;
const refused = () => Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
const markerPath = (hash: string) => `/id/kengine-config-${hash}/@id`;
const backoff = { initialMs: 100, maxMs: 1000, factor: 2, jitter: 0.5 };

let agent: MockAgent;
let clock: ManualClock;
let events: FleetEvent[];
let fleet: Fleet;
let loads: string[];

beforeEach(() => {
  agent = new MockAgent();
  agent.disableNetConnect();
  clock = new ManualClock(1_000_000);
  events = [];
  loads = [];
  const http = new AdminClient(
    { caPem: "", certificatePem: "", privateKey: new SecretPem("") },
    { dispatcher: agent },
  );
  const client: AdminApi = {
    load: (e, bytes) => (loads.push(e.name), http.load(e, bytes)),
    runsConfig: (e, hash) => http.runsConfig(e, hash),
  };
  fleet = new Fleet({
    client,
    concurrency: 4,
    backoff,
    clock,
    random: () => 0,
    onEvent: e => events.push(e),
  });
});
afterEach(async () => {
  fleet.close();
  await agent.close();
});

const acceptLoad = (e: ProxyEndpoint, times = 1) =>
  agent.get(originOf(e)).intercept({ path: "/load", method: "POST" }).reply(200, "").times(times);

describe("Fleet", () => {
  it("pushes to every proxy once and skips proxies that already run the same hash", async () => {
    const eps = [1, 2, 3].map(endpoint);
    eps.forEach(e => acceptLoad(e));
    fleet.update(eps.map(e => ({ endpoint: e, config: v1 })));
    expect(fleet.state("gw-1")).toEqual({
      phase: "Pending",
      desiredHash: v1.hash,
      applied: undefined,
    });
    await fleet.settled();
    expect(loads.sort()).toEqual(["gw-1", "gw-2", "gw-3"]);
    for (const e of eps)
      expect(fleet.state(e.name)).toEqual({
        phase: "Programmed",
        desiredHash: v1.hash,
        hash: v1.hash,
        at: 1_000_000,
        verifiedAt: 1_000_000,
      });
    // same bytes again: no request (an unexpected one would hit disableNetConnect and fail the proxy)
    fleet.update(eps.map(e => ({ endpoint: e, config: configWith("v1") })));
    await fleet.settled();
    expect(loads).toHaveLength(3);
    expect(
      events
        .filter(e => e.type === "skipped")
        .map(e => e.name)
        .sort(),
    ).toEqual(["gw-1", "gw-2", "gw-3"]);
    expect([...fleet.states().values()].every(s => s.phase === "Programmed")).toBe(true);
  });

  it("retries a refused connection with capped exponential back-off, then programs the proxy", async () => {
    const e = endpoint(1);
    agent
      .get(originOf(e))
      .intercept({ path: "/load", method: "POST" })
      .replyWithError(refused())
      .times(6);
    fleet.update([{ endpoint: e, config: v1 }]);
    await fleet.settled();
    expect(fleet.state(e.name)).toMatchObject({
      phase: "Failed",
      attempts: 1,
      error: { kind: "connect" },
      since: 1_000_000,
      nextAttemptAt: 1_000_050,
    });
    clock.advance(49);
    await fleet.settled();
    expect(loads).toHaveLength(1);
    for (let i = 0; i < 5; i++) {
      clock.advance(clock.pending()[0]! - clock.now());
      await fleet.settled();
    }
    expect(loads).toHaveLength(6);
    // random() = 0 → half of 100, 200, 400, 800, 1000 (cap), 1000
    expect(
      events
        .filter(ev => ev.type === "failed")
        .map(ev => (ev.type === "failed" ? ev.retryInMs : 0)),
    ).toEqual([50, 100, 200, 400, 500, 500]);
    acceptLoad(e);
    clock.advance(500);
    await fleet.settled();
    expect(fleet.state(e.name)).toMatchObject({ phase: "Programmed", hash: v1.hash });
    expect(clock.pending()).toEqual([]);
  });

  it("keeps a rejection's message, retries it, and tries a new config at once", async () => {
    const e = endpoint(1);
    agent
      .get(originOf(e))
      .intercept({ path: "/load", method: "POST" })
      .reply(400, '{"error":"listening on :80: bind: address already in use"}')
      .times(2);
    fleet.update([{ endpoint: e, config: v1 }]);
    await fleet.settled();
    expect(fleet.state(e.name)).toMatchObject({
      phase: "Failed",
      attempts: 1,
      applied: undefined,
      error: {
        kind: "rejected",
        status: 400,
        message: "listening on :80: bind: address already in use",
      },
      message:
        "proxy rejected the request (HTTP 400): listening on :80: bind: address already in use",
    });
    clock.advance(50);
    await fleet.settled();
    expect(fleet.state(e.name)).toMatchObject({ phase: "Failed", attempts: 2 });
    // a new desired config is pushed without waiting for the back-off
    acceptLoad(e);
    fleet.update([{ endpoint: e, config: v2 }]);
    await fleet.settled();
    expect(fleet.state(e.name)).toMatchObject({ phase: "Programmed", hash: v2.hash });
    expect(loads).toHaveLength(3);
  });

  it("does not hammer an unreachable proxy when configs change", async () => {
    const e = endpoint(1);
    agent.get(originOf(e)).intercept({ path: "/load", method: "POST" }).replyWithError(refused());
    fleet.update([{ endpoint: e, config: v1 }]);
    await fleet.settled();
    fleet.update([{ endpoint: e, config: v2 }]);
    await fleet.settled();
    expect(loads).toHaveLength(1);
    acceptLoad(e);
    clock.advance(50);
    await fleet.settled();
    expect(fleet.state(e.name)).toMatchObject({ phase: "Programmed", hash: v2.hash });
  });

  it("re-pushes to a proxy that answers it no longer runs the hash (restarted from bootstrap)", async () => {
    const [a, b] = [endpoint(1), endpoint(2)];
    acceptLoad(a);
    acceptLoad(b);
    fleet.update([a, b].map(e => ({ endpoint: e, config: v1 })));
    await fleet.settled();
    agent
      .get(originOf(a))
      .intercept({ path: markerPath(v1.hash), method: "GET" })
      .reply(200, '"x"');
    agent
      .get(originOf(b))
      .intercept({ path: markerPath(v1.hash), method: "GET" })
      .reply(404, '{"error":"unknown object ID"}');
    acceptLoad(b);
    clock.advance(5);
    await fleet.verify();
    expect(events.filter(e => e.type === "drifted").map(e => e.name)).toEqual(["gw-2"]);
    expect(loads.sort()).toEqual(["gw-1", "gw-2", "gw-2"]);
    expect(fleet.state("gw-1")).toMatchObject({ phase: "Programmed", verifiedAt: 1_000_005 });
    expect(fleet.state("gw-2")).toMatchObject({ phase: "Programmed", at: 1_000_005 });
  });

  it("stays Programmed while a check is in flight, and Pending (running the old config) while a push is", async () => {
    const e = endpoint(1);
    acceptLoad(e);
    fleet.update([{ endpoint: e, config: v1 }]);
    await fleet.settled();
    agent
      .get(originOf(e))
      .intercept({ path: markerPath(v1.hash), method: "GET" })
      .reply(200, '"x"');
    const checked = fleet.verify();
    expect(fleet.state(e.name)).toMatchObject({ phase: "Programmed", hash: v1.hash });
    await checked;
    acceptLoad(e);
    fleet.update([{ endpoint: e, config: v2 }]);
    expect(fleet.state(e.name)).toMatchObject({
      phase: "Pending",
      desiredHash: v2.hash,
      applied: { hash: v1.hash },
    });
    await fleet.settled();
    expect(fleet.state(e.name)).toMatchObject({ phase: "Programmed", hash: v2.hash });
  });

  it("treats a proxy it cannot reach during a check as unknown and pushes when it is back", async () => {
    const e = endpoint(1);
    acceptLoad(e);
    fleet.update([{ endpoint: e, config: v1 }]);
    await fleet.settled();
    agent
      .get(originOf(e))
      .intercept({ path: markerPath(v1.hash), method: "GET" })
      .replyWithError(refused());
    await fleet.verify();
    expect(fleet.state(e.name)).toMatchObject({ phase: "Failed", applied: undefined, attempts: 1 });
    acceptLoad(e);
    clock.advance(50);
    await fleet.settled();
    expect(fleet.state(e.name)).toMatchObject({ phase: "Programmed" });
    expect(loads).toHaveLength(2);
  });

  it("runs checks periodically once started", async () => {
    const e = endpoint(1);
    acceptLoad(e);
    fleet.update([{ endpoint: e, config: v1 }]);
    await fleet.settled();
    fleet.start(10_000);
    agent
      .get(originOf(e))
      .intercept({ path: markerPath(v1.hash), method: "GET" })
      .reply(404, "{}");
    acceptLoad(e);
    clock.advance(10_000);
    await fleet.settled();
    expect(events.map(ev => ev.type)).toEqual(["pushed", "drifted", "pushed"]);
    expect(clock.pending()).toEqual([1_020_000]);
  });

  it("forgets removed proxies and drops results of pushes in flight to them", async () => {
    const [a, b] = [endpoint(1), endpoint(2)];
    acceptLoad(a);
    agent.get(originOf(b)).intercept({ path: "/load", method: "POST" }).reply(200, "").delay(20);
    fleet.update([a, b].map(e => ({ endpoint: e, config: v1 })));
    fleet.update([{ endpoint: a, config: v1 }]);
    await fleet.settled();
    await new Promise(r => setTimeout(r, 40));
    expect([...fleet.states().keys()]).toEqual(["gw-1"]);
    expect(events.filter(e => e.type === "forgotten").map(e => e.name)).toEqual(["gw-2"]);
    expect(events.filter(e => e.type === "pushed").map(e => e.name)).toEqual(["gw-1"]);
  });

  it("starts over for a new pod behind the same name", async () => {
    const e = endpoint(1);
    acceptLoad(e);
    fleet.update([{ endpoint: e, config: v1 }]);
    await fleet.settled();
    const moved = { ...e, address: "10.0.0.99" };
    acceptLoad(moved);
    fleet.update([{ endpoint: moved, config: v1 }]);
    expect(fleet.state(e.name)?.phase).toBe("Pending");
    await fleet.settled();
    expect(fleet.state(e.name)?.phase).toBe("Programmed");
    expect(loads).toHaveLength(2);
  });

  it("refuses configs that did not come from sealConfig, and duplicate names", () => {
    const forged = { hash: v1.hash, bytes: Buffer.from("{}") };
    expect(() => fleet.update([{ endpoint: endpoint(1), config: forged }])).toThrow(/sealConfig/);
    expect(() =>
      fleet.update([
        { endpoint: endpoint(1), config: v1 },
        { endpoint: endpoint(1), config: v1 },
      ]),
    ).toThrow(/duplicate/);
  });
});

describe("Fleet with adoptRunning (a new leader)", () => {
  it("adopts a proxy that already runs the desired config and pushes only to the one that does not", async () => {
    const http = new AdminClient(
      { caPem: "", certificatePem: "", privateKey: new SecretPem("") },
      { dispatcher: agent },
    );
    const adopting = new Fleet({
      client: {
        load: (e, bytes) => (loads.push(e.name), http.load(e, bytes)),
        runsConfig: (e, hash) => http.runsConfig(e, hash),
      },
      backoff,
      clock,
      random: () => 0,
      adoptRunning: true,
      onEvent: e => events.push(e),
    });
    const [a, b] = [endpoint(1), endpoint(2)];
    agent
      .get(originOf(a))
      .intercept({ path: markerPath(v1.hash), method: "GET" })
      .reply(200, '"x"');
    agent
      .get(originOf(b))
      .intercept({ path: markerPath(v1.hash), method: "GET" })
      .reply(404, "{}");
    acceptLoad(b);
    adopting.update([a, b].map(e => ({ endpoint: e, config: v1 })));
    await adopting.settled();
    expect(loads).toEqual(["gw-2"]);
    expect(events.filter(e => e.type === "adopted").map(e => e.name)).toEqual(["gw-1"]);
    expect(adopting.state("gw-1")).toMatchObject({ phase: "Programmed", hash: v1.hash });
    expect(adopting.state("gw-2")).toMatchObject({ phase: "Programmed", hash: v1.hash });
    adopting.close();
  });
});

describe("Fleet concurrency", () => {
  it("never runs more pushes at once than its limit", async () => {
    let inFlight = 0;
    let peak = 0;
    const client: AdminApi = {
      load: async () => {
        peak = Math.max(peak, ++inFlight);
        await new Promise(r => setImmediate(r));
        inFlight--;
        return { ok: true, value: undefined };
      },
      runsConfig: async () => ({ ok: true, value: true }),
    };
    const limited = new Fleet({ client, concurrency: 3, clock: new ManualClock() });
    limited.update(Array.from({ length: 20 }, (_, i) => ({ endpoint: endpoint(i), config: v1 })));
    await limited.settled();
    expect(peak).toBe(3);
    expect([...limited.states().values()].filter(s => s.phase === "Programmed")).toHaveLength(20);
    limited.close();
  });
});

describe("Fleet push gate (an ex-leader never pushes)", () => {
  /** An in-memory Lease store and a clock the test moves; the loop runs once, then sleeps forever. */
  const electedReplica = async () => {
    let now = 5_000_000;
    let record: LeaseRecord | undefined;
    let rv = 0;
    const store: LeaseStore = {
      get: async () => record,
      create: async r => (record = { ...r, resourceVersion: String(++rv) }),
      update: async r => (record = { ...r, resourceVersion: String(++rv) }),
    };
    const cfg = { ...DEFAULT_ELECTION, namespace: "ns", name: "lease", identity: "me" };
    const elector = new LeaderElector(
      store,
      cfg,
      { onStartedLeading: () => undefined, onStoppedLeading: () => undefined },
      { now: () => now, sleep: () => new Promise(() => undefined) },
    );
    elector.start();
    for (let i = 0; i < 10 && !elector.isLeader(); i++) await new Promise(r => setImmediate(r));
    return { elector, cfg, advance: (ms: number) => (now += ms) };
  };

  it("asks for leadership right before each load: none once the lease is not renewed in time", async () => {
    const { elector, cfg, advance } = await electedReplica();
    expect(elector.isLeader()).toBe(true);
    const sent: string[] = [];
    const gated = new Fleet({
      client: {
        load: async (e, bytes) => (
          sent.push(`${e.name}:${bytes.length}`),
          { ok: true, value: undefined }
        ),
        runsConfig: async () => ({ ok: true, value: false }),
      },
      backoff,
      clock,
      random: () => 0,
      onEvent: e => events.push(e),
      mayPush: () => elector.isLeader(),
    });
    try {
      gated.update([{ endpoint: endpoint(1), config: v1 }]);
      await gated.settled();
      expect(sent).toHaveLength(1);
      // no renewal for renewDeadline by our own clock (the election loop has not even noticed)
      advance(cfg.renewDeadlineMs);
      expect(elector.isLeader()).toBe(false);
      gated.update([{ endpoint: endpoint(1), config: v2 }]);
      await gated.settled();
      for (let i = 0; i < 5; i++) {
        clock.advance(backoff.maxMs);
        await gated.settled();
      }
      expect(sent).toHaveLength(1);
      expect(events.filter(e => e.type === "withheld").length).toBeGreaterThanOrEqual(1);
      expect(gated.state("gw-1")).toMatchObject({ phase: "Pending", desiredHash: v2.hash });
    } finally {
      gated.close();
    }
  });
});
