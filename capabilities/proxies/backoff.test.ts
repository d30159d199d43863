import { backoffDelay, DEFAULT_BACKOFF, ManualClock } from "./backoff";

describe("backoffDelay", () => {
  const policy = { initialMs: 100, maxMs: 1000, factor: 2, jitter: 0.5 };
  it("doubles from the initial delay up to the cap", () => {
    expect([1, 2, 3, 4, 5, 6, 50].map(n => backoffDelay(policy, n, () => 0.999999))).toEqual([
      100, 200, 400, 800, 1000, 1000, 1000,
    ]);
  });
  it("randomises the jittered share of each delay", () => {
    expect([1, 2, 5].map(n => backoffDelay(policy, n, () => 0))).toEqual([50, 100, 500]);
    expect(backoffDelay({ ...policy, jitter: 0 }, 3, () => 0)).toBe(400);
  });
  it("stays finite for huge attempt counts", () => {
    expect(backoffDelay(DEFAULT_BACKOFF, 10_000, () => 0.5)).toBeLessThanOrEqual(
      DEFAULT_BACKOFF.maxMs,
    );
  });
});

describe("ManualClock", () => {
  it("fires due timers in order, and not cancelled ones", () => {
    const clock = new ManualClock(1000);
    const fired: string[] = [];
    clock.setTimer(30, () => fired.push(`b@${clock.now()}`));
    clock.setTimer(10, () => fired.push(`a@${clock.now()}`));
    const cancel = clock.setTimer(20, () => fired.push("cancelled"));
    cancel();
    clock.advance(15);
    expect(fired).toEqual(["a@1010"]);
    clock.advance(100);
    expect(fired).toEqual(["a@1010", "b@1030"]);
    expect(clock.now()).toBe(1115);
    expect(clock.pending()).toEqual([]);
  });
});
