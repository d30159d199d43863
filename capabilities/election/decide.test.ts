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
