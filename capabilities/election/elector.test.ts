import { LeaseAttempt, LeaderElector, microTime } from "./elector";
import { ConflictError, LeaseRecord, LeaseStore, LeaseWrite } from "./types";

/** An in-memory Lease with the API server's optimistic concurrency. */
function memoryStore(initial?: LeaseWrite): LeaseStore & { current(): LeaseRecord | undefined } {
  let rv = 1;
  let current: LeaseRecord | undefined = initial && { ...initial, resourceVersion: String(rv) };
  return {
    current: () => current,
    get: () => Promise.resolve(current),
    create: r => {
      if (current) return Promise.reject(new ConflictError());
      current = { ...r, resourceVersion: String(++rv) };
      return Promise.resolve(current);
    },
    update: (r, version) => {
      if (current?.resourceVersion !== version) return Promise.reject(new ConflictError());
      current = { ...r, resourceVersion: String(++rv) };
      return Promise.resolve(current);
    },
  };
}

const cfg = {
  namespace: "ns",
  name: "lease",
  identity: "new",
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};
const t0 = Date.UTC(2026, 10, 24, 3, 0, 0);
const clockAt = (now: { t: number }) => ({ now: () => now.t, sleep: () => Promise.resolve() });
const events = () => ({ onStartedLeading: () => {}, onStoppedLeading: () => {} });
const held = (holder: string, renewedAt: number): LeaseWrite => ({
  holderIdentity: holder,
  leaseDurationSeconds: 15,
  acquireTime: microTime(renewedAt - 60_000),
  renewTime: microTime(renewedAt),
  leaseTransitions: 3,
});

describe("LeaderElector", () => {
  it("a restarted replica takes a Lease that expired before it started, on its first try", async () => {
    const now = { t: t0 };
    const store = memoryStore(held("old-pod", t0 - 20_000));
    const e = new LeaderElector(store, cfg, events(), clockAt(now));
    expect(await e.tryAcquireOrRenew()).toBe(true);
    expect(store.current()).toMatchObject({ holderIdentity: "new", leaseTransitions: 4 });
  });

  it("waits for a live Lease until leaseDuration after its renewTime, not after its own first look", async () => {
    const now = { t: t0 };
    const store = memoryStore(held("old-pod", t0 - 10_000));
    const e = new LeaderElector(store, cfg, events(), clockAt(now));
    expect(await e.tryAcquireOrRenew()).toBe(false);
    expect(e.leader()).toBe("old-pod");
    now.t = t0 + 4_999;
    expect(await e.tryAcquireOrRenew()).toBe(false);
    now.t = t0 + 5_000; // renewTime + 15 s: 10 s before a first-look judgement would allow
    expect(await e.tryAcquireOrRenew()).toBe(true);
    expect(store.current()?.holderIdentity).toBe("new");
  });

  it("renews its own Lease at once after a restart with the same identity", async () => {
    const now = { t: t0 };
    const store = memoryStore(held("new", t0 - 1_000));
    const e = new LeaderElector(store, cfg, events(), clockAt(now));
    expect(await e.tryAcquireOrRenew()).toBe(true);
    expect(store.current()).toMatchObject({ holderIdentity: "new", leaseTransitions: 3 });
  });
});

describe("LeaderElector.stop", () => {
  it("ends the loop and releases the Lease without waiting for the retry period", async () => {
    const now = { t: t0 };
    const store = memoryStore();
    let started = () => {};
    const leading = new Promise<void>(r => (started = r));
    const e = new LeaderElector(
      store,
      cfg,
      { onStartedLeading: () => started(), onStoppedLeading: () => {} },
      // a retry period that never ends by itself
      { now: () => now.t, sleep: () => new Promise<void>(() => {}) },
    );
    e.start();
    await leading;
    await e.stop(); // resolves although the loop's sleep never does
    expect(store.current()?.holderIdentity).toBe("");
    expect(e.isLeader()).toBe(false);
  });
});

describe("LeaderElector attempts", () => {
  it("times each try and reports the interval between the leader's renewals", async () => {
    const now = { t: t0 };
    const base = memoryStore();
    // every Lease request takes 30 ms of the clock
    const slow =
      <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
      async (...a: A) => {
        now.t += 30;
        return f(...a);
      };
    const store: LeaseStore = {
      get: slow(base.get),
      create: slow(base.create),
      update: slow(base.update),
    };
    const seen: LeaseAttempt[] = [];
    const e = new LeaderElector(
      store,
      cfg,
      { ...events(), onAttempt: a => seen.push(a) },
      clockAt(now),
    );
    expect(await e.tryAcquireOrRenew()).toBe(true); // get + create
    now.t = t0 + 2_000;
    expect(await e.tryAcquireOrRenew()).toBe(true); // get + update
    now.t = t0 + 9_000; // a late renewal
    expect(await e.tryAcquireOrRenew()).toBe(true);
    expect(seen).toEqual([
      { outcome: "acquired", ms: 60 },
      { outcome: "renewed", ms: 60, sinceLastRenewMs: 2_000 },
      { outcome: "renewed", ms: 60, sinceLastRenewMs: 7_000 },
    ]);

    // another replica's live Lease: followed; a failing read: failed
    const other = new LeaderElector(
      store,
      { ...cfg, identity: "other" },
      { ...events(), onAttempt: a => seen.push(a) },
      clockAt(now),
    );
    expect(await other.tryAcquireOrRenew()).toBe(false);
    const failing = new LeaderElector(
      { ...store, get: () => Promise.reject(new Error("connection refused")) },
      cfg,
      { ...events(), onAttempt: a => seen.push(a) },
      clockAt(now),
    );
    expect(await failing.tryAcquireOrRenew()).toBe(false);
    expect(seen.slice(3)).toEqual([
      { outcome: "followed", ms: 30 },
      { outcome: "failed", ms: 0 },
    ]);
  });
});
