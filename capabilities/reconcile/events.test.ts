import type { FleetEvent } from "../proxies";
import { PushEvents, eventName } from "./events";

const H = "c".repeat(64);
const failed = (
  name: string,
  attempts: number,
  error: Extract<FleetEvent, { type: "failed" }>["error"],
): FleetEvent => ({ type: "failed", name, hash: H, error, attempts, retryInMs: 100 });
const refused = { kind: "connect", message: "ECONNREFUSED" } as const;
const rejected = {
  kind: "rejected",
  status: 400,
  message: "listen tcp :80: address in use",
} as const;

describe("PushEvents", () => {
  it("reports a rejection at once, once per streak, and the recovery", () => {
    const p = new PushEvents();
    const seen = [
      p.observe(failed("ns/a", 1, rejected)),
      p.observe(failed("ns/a", 2, rejected)),
      p.observe(failed("ns/a", 3, rejected)),
      p.observe({ type: "pushed", name: "ns/a", hash: H, durationMs: 5 }),
      p.observe({ type: "pushed", name: "ns/a", hash: H, durationMs: 5 }),
    ].filter(Boolean);
    expect(seen).toEqual([
      {
        proxy: "ns/a",
        reason: "PushFailed",
        type: "Warning",
        note: "proxy ns/a: proxy rejected the request (HTTP 400): listen tcp :80: address in use (retrying with back-off)",
      },
      {
        proxy: "ns/a",
        reason: "PushRecovered",
        type: "Normal",
        note: "proxy ns/a runs the current configuration again, after: proxy rejected the request (HTTP 400): listen tcp :80: address in use",
      },
    ]);
  });

  it("is quiet about a proxy that is briefly unreachable (a starting pod)", () => {
    const p = new PushEvents(3);
    expect(p.observe(failed("ns/b", 1, refused))).toBeUndefined();
    expect(p.observe(failed("ns/b", 2, refused))).toBeUndefined();
    expect(p.observe({ type: "pushed", name: "ns/b", hash: H, durationMs: 5 })).toBeUndefined();
    expect(p.observe(failed("ns/b", 3, refused))?.reason).toBe("PushFailed");
    expect(p.observe(failed("ns/b", 4, refused))).toBeUndefined();
    // a different failure in the same streak is news
    expect(p.observe(failed("ns/b", 5, rejected))?.reason).toBe("PushFailed");
    expect(p.observe({ type: "adopted", name: "ns/b", hash: H })?.reason).toBe("PushRecovered");
  });

  it("forgets a removed proxy without an Event", () => {
    const p = new PushEvents();
    p.observe(failed("ns/c", 1, rejected));
    expect(p.observe({ type: "forgotten", name: "ns/c" })).toBeUndefined();
    expect(p.observe({ type: "pushed", name: "ns/c", hash: H, durationMs: 1 })).toBeUndefined();
  });

  it("names Events per Gateway, proxy, reason and note (repeats become a series)", () => {
    const gw = { namespace: "ns", name: "edge" };
    const e = { proxy: "ns/a", reason: "PushFailed" as const, note: "x" };
    expect(eventName(gw, e)).toMatch(/^edge\.[0-9a-f]{16}$/);
    expect(eventName(gw, e)).toBe(eventName(gw, { ...e }));
    expect(eventName(gw, e)).not.toBe(eventName(gw, { ...e, note: "y" }));
    expect(eventName(gw, e)).not.toBe(eventName(gw, { ...e, proxy: "ns/b" }));
  });
});
