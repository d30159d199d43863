import { StatusUpdate, StoredObject } from "./compute";
import { StatusApi, StatusWriter, failedWritesSummary } from "./writer";

/** An in-memory store of statuses with resourceVersions, to test the writer's own logic. */
function store() {
  let rv = 10;
  const objects = new Map<string, StoredObject>();
  const writes: string[] = [];
  const api: StatusApi = {
    read: async (k, ns, n) => objects.get(`${k}/${ns ?? ""}/${n}`),
    writeStatus: async (u: StatusUpdate) => {
      const key = `${u.kind}/${u.namespace ?? ""}/${u.name}`;
      writes.push(`${u.kind}/${u.name}=${JSON.stringify(u.status)}`);
      const o = { metadata: { name: u.name, resourceVersion: String(++rv) }, status: u.status };
      objects.set(key, o);
      return o;
    },
  };
  return { api, writes };
}
const up = (kind: StatusUpdate["kind"], name: string, v: number): StatusUpdate => ({
  kind,
  namespace: "ns",
  name,
  status: { v },
});
const sleep = (ms: number) => new Promise(r => setTimeout(r, ms));

describe("StatusWriter rate limit", () => {
  it("writes a Gateway at once, then only the latest update per interval; routes always", async () => {
    const s = store();
    let coalesced = 0;
    const w = new StatusWriter({
      api: s.api,
      isLeader: () => true,
      recompute: () => undefined,
      minIntervalMs: k => (k === "Gateway" ? 150 : 0),
      observer: {
        written: () => {},
        conflict: () => {},
        failed: () => {},
        coalesced: (_k, n) => (coalesced += n),
      },
    });
    expect((await w.write([up("Gateway", "gw", 1), up("HTTPRoute", "r1", 1)])).written).toBe(2);
    expect((await w.write([up("Gateway", "gw", 2), up("HTTPRoute", "r2", 1)])).written).toBe(1);
    expect((await w.write([up("Gateway", "gw", 3), up("HTTPRoute", "r3", 1)])).written).toBe(1);
    expect(w.pending).toBe(1);
    await sleep(400);
    expect(w.pending).toBe(0);
    expect(s.writes.filter(x => x.startsWith("Gateway"))).toEqual([
      'Gateway/gw={"v":1}',
      'Gateway/gw={"v":3}',
    ]);
    expect(coalesced).toBe(1);
    w.close();
  });

  it("never holds back an urgent update (an address or a condition changes)", async () => {
    const s = store();
    const w = new StatusWriter({
      api: s.api,
      isLeader: () => true,
      recompute: () => undefined,
      minIntervalMs: () => 10_000,
    });
    await w.write([up("Gateway", "gw", 1)]);
    expect((await w.write([{ ...up("Gateway", "gw", 2), urgent: true }])).written).toBe(1);
    expect(w.pending).toBe(0);
    w.close();
  });

  it("drops a pending update that a later call no longer asks for", async () => {
    const s = store();
    const w = new StatusWriter({
      api: s.api,
      isLeader: () => true,
      recompute: () => undefined,
      minIntervalMs: () => 100,
    });
    await w.write([up("Gateway", "gw", 1)]);
    await w.write([up("Gateway", "gw", 2)]);
    await w.write([]);
    await sleep(250);
    expect(s.writes).toEqual(['Gateway/gw={"v":1}']);
    w.close();
  });

  it("remembers what it wrote until the caller's cache catches up", async () => {
    const s = store();
    const w = new StatusWriter({ api: s.api, isLeader: () => true, recompute: () => undefined });
    await w.write([up("HTTPRoute", "r", 1)]);
    const stale = { metadata: { name: "r", resourceVersion: "5" }, status: {} };
    expect(w.freshest("HTTPRoute", "ns", "r", stale)?.status).toEqual({ v: 1 });
    const caughtUp = { metadata: { name: "r", resourceVersion: "99" }, status: { v: 7 } };
    expect(w.freshest("HTTPRoute", "ns", "r", caughtUp)).toBe(caughtUp);
    expect(w.freshest("HTTPRoute", "ns", "r", stale)).toBe(stale);
    expect(w.freshest("HTTPRoute", "ns", "r", undefined)).toBeUndefined();
  });

  it("writes nothing and keeps nothing while not leading", async () => {
    const s = store();
    const w = new StatusWriter({ api: s.api, isLeader: () => false, recompute: () => undefined });
    expect((await w.write([up("Gateway", "gw", 1)])).skippedNotLeader).toBe(true);
    expect(w.pending).toBe(0);
    expect(s.writes).toEqual([]);
  });
});

describe("failedWritesSummary", () => {
  const failed = (n: number, error: (i: number) => string) =>
    Array.from({ length: n }, (_, i) => ({
      update: { kind: "HTTPRoute", namespace: "ns", name: `r${i}` } as StatusUpdate,
      error: error(i),
    }));

  it("names the first objects only and counts every failure by error", () => {
    const s = failedWritesSummary(
      failed(5000, () => "lost leadership"),
      20,
    );
    expect(s.count).toBe(5000);
    expect(s.first).toHaveLength(20);
    expect(s.first[0]).toBe("HTTPRoute ns/r0: lost leadership");
    expect(s.byError).toEqual({ "lost leadership": 5000 });
    expect(JSON.stringify(s).length).toBeLessThan(2000);
  });

  it("bounds errors that name their object too", () => {
    const s = failedWritesSummary(
      failed(3000, i => `conflict on r${i} ${"x".repeat(500)}`),
      20,
    );
    expect(Object.keys(s.byError)).toHaveLength(21);
    expect(s.byError["(other errors)"]).toBe(2980);
    expect(Object.values(s.byError).reduce((a, b) => a + b, 0)).toBe(3000);
    expect(JSON.stringify(s).length).toBeLessThan(20 * 2 * 260 + 1000);
  });
});

describe("StatusWriter memory", () => {
  it("forgets its copy of an object deleted before the watch caught up (never asked for again)", async () => {
    const s = store();
    const w = new StatusWriter({ api: s.api, isLeader: () => true, recompute: () => undefined });
    const now = jest.spyOn(Date, "now");
    try {
      now.mockReturnValue(1_000_000);
      await w.write([up("HTTPRoute", "gone", 1)]);
      // our copy answers while the watch has not caught up
      const stale = { metadata: { name: "gone", resourceVersion: "1" }, status: {} };
      expect(w.freshest("HTTPRoute", "ns", "gone", stale)?.status).toEqual({ v: 1 });
      // the route is deleted; later writes of other objects, past the 10 minutes
      now.mockReturnValue(1_000_000 + 600_001);
      await w.write([up("HTTPRoute", "other", 1)]);
      expect(w.freshest("HTTPRoute", "ns", "gone", stale)).toBe(stale);
    } finally {
      now.mockRestore();
      w.close();
    }
  });
});

describe("StatusWriter timings", () => {
  it("reports each accepted write's wait for a slot and its round trip", async () => {
    const s = store();
    const slow: StatusApi = {
      ...s.api,
      writeStatus: async u => {
        await sleep(40);
        return s.api.writeStatus(u);
      },
    };
    const timed: { kind: string; waitMs: number; writeMs: number }[] = [];
    const w = new StatusWriter({
      api: slow,
      isLeader: () => true,
      recompute: () => undefined,
      concurrency: 2,
      observer: {
        written: () => {},
        conflict: () => {},
        failed: () => {},
        timed: (kind, waitMs, writeMs) => timed.push({ kind, waitMs, writeMs }),
      },
    });
    await w.write([up("HTTPRoute", "a", 1), up("HTTPRoute", "b", 1), up("HTTPRoute", "c", 1)]);
    expect(timed).toHaveLength(3);
    expect(timed.every(t => t.kind === "HTTPRoute" && t.writeMs >= 35)).toBe(true);
    // two slots: the first two start at once, the third after one of them is done
    const waits = timed.map(t => t.waitMs).sort((a, b) => a - b);
    expect(waits[1]).toBeLessThan(20);
    expect(waits[2]).toBeGreaterThanOrEqual(35);
    w.close();
  });
});
