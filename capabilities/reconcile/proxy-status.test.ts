import type { ProxyState } from "../proxies";
import {
  decideProxyStatusWrite,
  KengineProxyStatus,
  kengineProxyObject,
  kengineProxyStatus,
  PROXY_STATUS_POLICY,
  ProxyRecord,
  ProxyStatusTrack,
  writtenTrack,
} from "./proxy-status";

const base: ProxyRecord = {
  namespace: "ns",
  gateway: "gw",
  pod: "gw-kengine-abc",
  podUid: "u1",
  address: "10.244.0.5:19443",
  state: undefined,
};
const H1 = "a".repeat(64);
const H2 = "b".repeat(64);
const t0 = new Date("2026-11-21T08:00:00Z");
const t1 = new Date("2026-11-21T09:00:00Z");

describe("kengineProxyObject", () => {
  it("is owned by the pod and names its Gateway", () => {
    const o = kengineProxyObject(base);
    expect(o.metadata.ownerReferences).toEqual([
      { apiVersion: "v1", kind: "Pod", name: "gw-kengine-abc", uid: "u1" },
    ]);
    expect(o.spec).toEqual({ gateway: "gw", pod: "gw-kengine-abc", address: "10.244.0.5:19443" });
  });
});

describe("kengineProxyStatus", () => {
  it("says Synced with matching short hashes when the proxy runs the desired config", () => {
    const s = kengineProxyStatus(
      {
        ...base,
        state: {
          phase: "Programmed",
          desiredHash: H1,
          hash: H1,
          at: t0.getTime(),
          verifiedAt: undefined,
        },
      },
      undefined,
      t0,
    );
    expect(s).toMatchObject({
      desiredHash: "aaaaaaaaaaaa",
      appliedHash: "aaaaaaaaaaaa",
      lastSyncTime: "2026-11-21T08:00:00Z",
      channel: { state: "Verified" },
    });
    expect(s.conditions[0]).toMatchObject({
      type: "Synced",
      status: "True",
      lastTransitionTime: "2026-11-21T08:00:00Z",
    });
  });

  it("keeps the proxy's refusal verbatim and the previously applied hash", () => {
    const s = kengineProxyStatus(
      {
        ...base,
        state: {
          phase: "Failed",
          desiredHash: H2,
          applied: { hash: H1, at: t0.getTime() },
          error: {
            kind: "rejected",
            status: 400,
            message: "listen tcp :80: address already in use",
          },
          message: "proxy rejected the request (HTTP 400): listen tcp :80: address already in use",
          attempts: 3,
          since: t0.getTime(),
          nextAttemptAt: t1.getTime(),
        },
      },
      undefined,
      t1,
    );
    expect(s).toMatchObject({
      desiredHash: "bbbbbbbbbbbb",
      appliedHash: "aaaaaaaaaaaa",
      attempts: 3,
      channel: { state: "Verified" },
    });
    expect(s.lastError).toContain("address already in use");
    expect(s.conditions[0]).toMatchObject({ status: "False", reason: "Rejected" });
  });

  it("moves lastTransitionTime only when Synced changes", () => {
    const programmed = {
      ...base,
      state: {
        phase: "Programmed" as const,
        desiredHash: H1,
        hash: H1,
        at: t0.getTime(),
        verifiedAt: undefined,
      },
    };
    const first = kengineProxyStatus(programmed, undefined, t0);
    expect(kengineProxyStatus(programmed, first, t1).conditions[0].lastTransitionTime).toBe(
      "2026-11-21T08:00:00Z",
    );
    const pending = kengineProxyStatus(
      {
        ...base,
        state: { phase: "Pending", desiredHash: H2, applied: { hash: H1, at: t0.getTime() } },
      },
      first,
      t1,
    );
    expect(pending.conditions[0]).toMatchObject({
      status: "False",
      reason: "Pending",
      lastTransitionTime: "2026-11-21T09:00:00Z",
    });
  });
});

/** One proxy as the reconciler sees it at every build: compute, decide, maybe write. */
class Proxy {
  track: ProxyStatusTrack | undefined;
  written: KengineProxyStatus[] = [];
  why: string[] = [];
  recheckAt: number | undefined;
  build(state: ProxyState, now: number): void {
    const status = kengineProxyStatus({ ...base, state }, this.track?.written, new Date(now));
    const rolling = state.phase === "Pending" && state.applied !== undefined;
    const { decision, track } = decideProxyStatusWrite(this.track, status, rolling, now);
    this.track = track;
    this.recheckAt = decision.write ? undefined : decision.recheckAt;
    if (decision.write) {
      this.written.push(status);
      this.why.push(decision.why);
      this.track = writtenTrack(track, status);
    }
  }
  last(): KengineProxyStatus | undefined {
    return this.written[this.written.length - 1];
  }
}
const hash = (i: number) => i.toString(16).padStart(64, "0");
const T = t0.getTime();
const programmedAt = (i: number, at: number): ProxyState => ({
  phase: "Programmed",
  desiredHash: hash(i),
  hash: hash(i),
  at,
  verifiedAt: at,
});
const pushing = (i: number, appliedAt: number): ProxyState => ({
  phase: "Pending",
  desiredHash: hash(i),
  applied: { hash: hash(i - 1), at: appliedAt },
});
const rejected = (i: number, attempts: number, message = "listen tcp :80: address in use") =>
  ({
    phase: "Failed",
    desiredHash: hash(i),
    applied: { hash: hash(i - 1), at: T },
    error: { kind: "rejected", status: 400, message },
    message: `proxy rejected the request (HTTP 400): ${message}`,
    attempts,
    since: T,
    nextAttemptAt: T + 1000,
  }) as const;

describe("decideProxyStatusWrite", () => {
  it("writes a route change's new hash once the proxy has run it steadily, not the push in between", () => {
    const p = new Proxy();
    p.build(programmedAt(1, T), T);
    expect(p.why).toEqual(["first"]);
    p.build(pushing(2, T), T + 10_000);
    expect(p.written).toHaveLength(1); // Pending while loading: not a state to show
    p.build(programmedAt(2, T + 10_300), T + 10_300);
    expect(p.written).toHaveLength(1);
    expect(p.recheckAt).toBe(T + 10_300 + PROXY_STATUS_POLICY.settleMs);
    p.build(programmedAt(2, T + 10_300), p.recheckAt!);
    expect(p.why).toEqual(["first", "settled"]);
    expect(p.last()).toMatchObject({
      appliedHash: hash(2).slice(0, 12),
      desiredHash: hash(2).slice(0, 12),
    });
    // Synced never left True in what was written: its transition time is the first write's
    expect(p.last()!.conditions[0]).toMatchObject({
      status: "True",
      lastTransitionTime: "2026-11-21T08:00:00Z",
    });
  });

  it("writes nothing during 100 changes in 120 s, the settled truth after, and at most every maxStale", () => {
    const p = new Proxy();
    p.build(programmedAt(1, T), T);
    let now = T + 1000;
    for (let i = 2; i < 102; i++) {
      p.build(pushing(i, now - 900), now);
      now += 300;
      p.build(programmedAt(i, now), now);
      now += 900;
    }
    expect(p.written).toHaveLength(1);
    p.build(programmedAt(101, now - 900), p.recheckAt!);
    expect(p.why).toEqual(["first", "settled"]);
    expect(p.last()!.appliedHash).toBe(hash(101).slice(0, 12));

    // endless churn: one write per maxStale, with the truth of that moment
    const q = new Proxy();
    q.build(programmedAt(1, T), T);
    now = T + 1000;
    for (let i = 2; now < T + 2.5 * PROXY_STATUS_POLICY.maxStaleMs; i++) {
      q.build(pushing(i, now), now);
      now += 1200;
    }
    expect(q.why).toEqual(["first", "stale", "stale"]);
  });

  it("writes a refusal, a new message and the recovery at once; retry counts once they settle", () => {
    const p = new Proxy();
    p.build(programmedAt(1, T), T);
    p.build(rejected(2, 1), T + 1000);
    expect(p.last()).toMatchObject({ attempts: 1, lastError: expect.stringContaining("in use") });
    expect(p.last()!.conditions[0]).toMatchObject({ status: "False", reason: "Rejected" });
    p.build(rejected(2, 2), T + 2000);
    p.build(rejected(2, 3), T + 4000);
    expect(p.written).toHaveLength(2);
    p.build(rejected(2, 3), T + 9000);
    expect(p.last()).toMatchObject({ attempts: 3 });
    p.build(rejected(2, 4, "another problem"), T + 9500);
    expect(p.last()!.lastError).toContain("another problem");
    p.build(programmedAt(3, T + 10_000), T + 10_000);
    expect(p.last()!.conditions[0]).toMatchObject({ status: "True", reason: "Synced" });
    expect(p.why).toEqual(["first", "transition", "settled", "transition", "transition"]);
  });

  it("writes at once a proxy that lost its config (restarted, unreachable) or got its first", () => {
    const p = new Proxy();
    p.build({ phase: "Pending", desiredHash: hash(1), applied: undefined }, T);
    p.build(programmedAt(1, T + 500), T + 500);
    p.build({ phase: "Pending", desiredHash: hash(1), applied: undefined }, T + 60_000);
    expect(p.why).toEqual(["first", "transition", "transition"]);
    expect(p.last()!.appliedHash).toBe("");
  });
});
