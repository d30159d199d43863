import { kengineProxyObject, kengineProxyStatus, ProxyRecord } from "./proxy-status";

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
