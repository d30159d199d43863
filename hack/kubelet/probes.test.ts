import { probeTimings, ProbeCounter, resolvePort } from "./probes";

describe("probes", () => {
  it("resolve named ports and apply API defaults", () => {
    const ports = [{ name: "http", containerPort: 3000 }];
    expect(resolvePort("http", ports)).toBe(3000);
    expect(resolvePort("8080", ports)).toBe(8080);
    expect(resolvePort(81, ports)).toBe(81);
    expect(resolvePort("nope", ports)).toBeUndefined();
    expect(probeTimings({})).toEqual({
      initialDelayMs: 0,
      periodMs: 10_000,
      timeoutMs: 1000,
      successThreshold: 1,
      failureThreshold: 3,
    });
  });
  it("change their result only after the thresholds", () => {
    const c = new ProbeCounter(probeTimings({ failureThreshold: 2, successThreshold: 2 }), true);
    expect(c.record(false)).toBe(true);
    expect(c.record(false)).toBe(false);
    expect(c.record(true)).toBe(false);
    expect(c.record(true)).toBe(true);
  });
});
