import fc from "fast-check";
import { MIN_GRACE_AFTER_PRE_STOP_MS, preStopPlan } from "./lifecycle";
import type { Container } from "./types";

const withSleep = (seconds: number): Container => ({
  name: "proxy",
  lifecycle: { preStop: { sleep: { seconds } } },
});

describe("preStopPlan", () => {
  it("no hook: SIGTERM at once with the whole grace period", () => {
    expect(preStopPlan({ name: "c" }, 30_000)).toEqual({ sleepMs: 0, graceAfterMs: 30_000 });
  });

  it("a sleep hook runs first, the rest of the grace period follows", () => {
    expect(preStopPlan(withSleep(5), 30_000)).toEqual({ sleepMs: 5000, graceAfterMs: 25_000 });
  });

  it("the sleep never outlasts the grace period, and at least 2 s follow it", () => {
    fc.assert(
      fc.property(fc.nat(120), fc.nat(120_000), (seconds, graceMs) => {
        const p = preStopPlan(withSleep(seconds), graceMs);
        expect(p.sleepMs).toBeLessThanOrEqual(graceMs);
        expect(p.sleepMs).toBeLessThanOrEqual(seconds * 1000);
        expect(p.graceAfterMs).toBeGreaterThanOrEqual(MIN_GRACE_AFTER_PRE_STOP_MS);
        if (seconds * 1000 <= graceMs) expect(p.sleepMs).toBe(seconds * 1000);
      }),
    );
  });

  it("exec and httpGet hooks are named as skipped, not run", () => {
    const p = preStopPlan(
      { name: "c", lifecycle: { preStop: { exec: { command: ["/bin/true"] } } } },
      30_000,
    );
    expect(p).toEqual({ sleepMs: 0, graceAfterMs: 30_000, skipped: "preStop exec hook not run" });
  });
});
