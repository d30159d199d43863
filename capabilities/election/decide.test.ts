import fc from "fast-check";
import { changed, decide } from "./decide";
import { microTime } from "./elector";
import { LeaseRecord } from "./types";

const rec = (holderIdentity: string, renewTime = "t1", resourceVersion = "1"): LeaseRecord => ({
  holderIdentity,
  leaseDurationSeconds: 15,
  renewTime,
  leaseTransitions: 0,
  resourceVersion,
});

describe("decide", () => {
  it("creates a missing Lease", () => {
    expect(decide("a", { record: undefined, observedAt: 0 }, 0)).toEqual({ op: "create" });
  });
  it("renews its own Lease", () => {
    expect(decide("a", { record: rec("a"), observedAt: 0 }, 99_000)).toEqual({ op: "renew" });
  });
  it("takes over a released Lease at once", () => {
    expect(decide("a", { record: rec(""), observedAt: 1000 }, 1000)).toEqual({ op: "takeover" });
  });
  it("follows a live leader until leaseDuration after it last saw a change, on its own clock", () => {
    expect(decide("a", { record: rec("b"), observedAt: 1000 }, 15_999)).toEqual({
      op: "follow",
      leader: "b",
      retryAt: 16_000,
    });
    expect(decide("a", { record: rec("b"), observedAt: 1000 }, 16_000)).toEqual({ op: "takeover" });
  });
});

describe("decide: expiry from renewTime", () => {
  const t0 = Date.UTC(2026, 10, 24, 3, 0, 0);
  const lease = (renewedAt: number) => rec("b", microTime(renewedAt));

  it("takes a Lease its holder stopped renewing long ago at once, on its first look", () => {
    // a restarted replica: it sees the record for the first time now, renewed 60 s ago
    const now = t0 + 60_000;
    expect(decide("a", { record: lease(t0), observedAt: now }, now)).toEqual({ op: "takeover" });
  });

  it("follows a live Lease until leaseDuration after its renewTime", () => {
    const seenAt = t0 + 5_000;
    expect(decide("a", { record: lease(t0), observedAt: seenAt }, t0 + 14_999)).toEqual({
      op: "follow",
      leader: "b",
      retryAt: t0 + 15_000,
    });
    expect(decide("a", { record: lease(t0), observedAt: seenAt }, t0 + 15_000)).toEqual({
      op: "takeover",
    });
  });

  it("never waits longer than its own look allows when the holder's clock runs ahead", () => {
    // renewTime 60 s in this replica's future: judged from when it saw the record
    expect(decide("a", { record: lease(t0 + 60_000), observedAt: t0 }, t0 + 15_000)).toEqual({
      op: "takeover",
    });
  });

  it("for any renewTime and first look, expires at the earlier of the two plus leaseDuration", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -100_000, max: 100_000 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.integer({ min: 0, max: 200_000 }),
        (renewOffset, observedOffset, elapsed) => {
          const renewedAt = t0 + renewOffset;
          const observedAt = t0 + observedOffset;
          const now = t0 + elapsed;
          const expiry = Math.min(renewedAt, observedAt) + 15_000;
          const d = decide("a", { record: lease(renewedAt), observedAt }, now);
          expect(d).toEqual(
            now >= expiry ? { op: "takeover" } : { op: "follow", leader: "b", retryAt: expiry },
          );
        },
      ),
    );
  });

  it("falls back to its own look when renewTime is missing or not a time", () => {
    const r = { ...rec("b"), renewTime: undefined };
    expect(decide("a", { record: r, observedAt: t0 }, t0 + 14_999).op).toBe("follow");
    expect(decide("a", { record: rec("b", "garbage"), observedAt: t0 }, t0 + 15_000).op).toBe(
      "takeover",
    );
  });
});

describe("changed", () => {
  it("sees a renewal, a new holder or a new version", () => {
    expect(changed(rec("a"), rec("a"))).toBe(false);
    expect(changed(rec("a"), rec("a", "t2"))).toBe(true);
    expect(changed(rec("a"), rec("b"))).toBe(true);
    expect(changed(rec("a"), rec("a", "t1", "2"))).toBe(true);
    expect(changed(undefined, rec("a"))).toBe(true);
  });
});

describe("microTime", () => {
  it("formats with six fractional digits, as the API's MicroTime", () => {
    expect(microTime(Date.UTC(2026, 10, 21, 8, 0, 0, 123))).toBe("2026-11-21T08:00:00.123000Z");
  });
});
