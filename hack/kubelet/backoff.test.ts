import { restartDelayMs, shouldRestart } from "./backoff";

describe("restart back-off", () => {
  it("restarts at once, then 10s doubling to 5 minutes", () => {
    expect([1, 2, 3, 4, 5, 10].map(restartDelayMs)).toEqual([
      0, 10_000, 20_000, 40_000, 80_000, 300_000,
    ]);
  });
  it("follows restartPolicy", () => {
    expect(shouldRestart(undefined, 0)).toBe(true);
    expect(shouldRestart("OnFailure", 0)).toBe(false);
    expect(shouldRestart("OnFailure", 1)).toBe(true);
    expect(shouldRestart("Never", 1)).toBe(false);
  });
});
