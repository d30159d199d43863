import { electionFromEnv, parseDuration } from "./env";

describe("parseDuration", () => {
  it("reads Go-style durations and plain seconds", () => {
    expect(parseDuration("15s")).toBe(15_000);
    expect(parseDuration("500ms")).toBe(500);
    expect(parseDuration("1m")).toBe(60_000);
    expect(parseDuration("2.5")).toBe(2500);
    expect(parseDuration("0s")).toBeUndefined();
    expect(parseDuration("fast")).toBeUndefined();
  });
});

describe("electionFromEnv", () => {
  it("defaults to the Lease kengine-gateway-leader, 15 s / 10 s / 2 s", () => {
    expect(electionFromEnv({})).toEqual({
      ok: true,
      value: {
        name: "kengine-gateway-leader",
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
      },
    });
  });
  it("takes every setting from the environment", () => {
    expect(
      electionFromEnv({
        KENGINE_LEASE_NAME: "other",
        KENGINE_LEASE_DURATION: "30s",
        KENGINE_RENEW_DEADLINE: "20s",
        KENGINE_RETRY_PERIOD: "500ms",
      }),
    ).toEqual({
      ok: true,
      value: {
        name: "other",
        leaseDurationMs: 30_000,
        renewDeadlineMs: 20_000,
        retryPeriodMs: 500,
      },
    });
  });
  it("names every bad value", () => {
    const r = electionFromEnv({ KENGINE_LEASE_NAME: "Bad_Name", KENGINE_RETRY_PERIOD: "soon" });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error).toContain('KENGINE_LEASE_NAME="Bad_Name"');
      expect(r.error).toContain('KENGINE_RETRY_PERIOD="soon": not a duration');
    }
  });
  it("refuses a renew deadline not shorter than the lease duration", () => {
    const r = electionFromEnv({ KENGINE_LEASE_DURATION: "10s" });
    expect(r).toEqual({
      ok: false,
      error:
        "leader election settings: KENGINE_LEASE_DURATION (10000 ms) must be longer than KENGINE_RENEW_DEADLINE (10000 ms)",
    });
  });
});
