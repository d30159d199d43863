/**
 * When the manager talks to the CA: renewal at two thirds of the lifetime, exponential
 * back-off that never undercuts the CA's Retry-After, and the decision per stored state.
 */
import fc from "fast-check";
import { retryAfterSeconds } from "./client";
import { StoredState } from "./issuers";
import { decide, renewalTime, retryTime } from "./schedule";

const RUNS = Number(process.env.KG_PROPERTY_RUNS ?? 200);
const t = (ms: number) => new Date(Date.UTC(2026, 10, 24) + ms);
const backoff = { baseMs: 30_000, maxMs: 3_600_000 };

describe("ACME scheduling", () => {
  it("renews two thirds into the lifetime", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e10 }),
        fc.integer({ min: 3, max: 1e10 }),
        (a, life) => {
          const r = renewalTime(t(a), t(a + life)).getTime();
          expect(r).toBeGreaterThan(t(a).getTime());
          expect(r).toBeLessThan(t(a + life).getTime());
          expect(Math.abs(r - t(a + (life * 2) / 3).getTime())).toBeLessThanOrEqual(1);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("backs off exponentially up to the cap, never sooner than Retry-After", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100 }),
        fc.option(fc.integer({ min: 0, max: 86_400 }), { nil: undefined }),
        (failures, after) => {
          const wait = retryTime(t(0), failures, after, backoff).getTime() - t(0).getTime();
          expect(wait).toBeGreaterThanOrEqual((after ?? 0) * 1000);
          expect(wait).toBeGreaterThanOrEqual(Math.min(backoff.maxMs, backoff.baseMs));
          expect(wait).toBeLessThanOrEqual(Math.max(backoff.maxMs, (after ?? 0) * 1000));
          const next = retryTime(t(0), failures + 1, undefined, backoff).getTime() - t(0).getTime();
          const same = retryTime(t(0), failures, undefined, backoff).getTime() - t(0).getTime();
          expect(next).toBeGreaterThanOrEqual(same);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("reads Retry-After as seconds or as an HTTP date", () => {
    expect(retryAfterSeconds("120")).toBe(120);
    expect(retryAfterSeconds(new Date(t(90_000)).toUTCString(), t(0))).toBe(90);
    expect(retryAfterSeconds("soon")).toBeUndefined();
    expect(retryAfterSeconds(undefined)).toBeUndefined();
  });

  const state = (s: Partial<StoredState>): StoredState => ({
    hasCertificate: false,
    failures: 0,
    ...s,
  });
  it("orders a missing certificate, renews a due one, resumes a pending order, waits otherwise", () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.option(fc.integer({ min: -1e6, max: 1e6 }), { nil: undefined }),
        fc.option(fc.integer({ min: -1e6, max: 1e6 }), { nil: undefined }),
        fc.boolean(),
        (has, renewIn, retryIn, pending) => {
          const s = state({
            hasCertificate: has,
            ...(renewIn !== undefined && { renewAt: t(renewIn) }),
            ...(retryIn !== undefined && { retryAt: t(retryIn) }),
            ...(pending && { state: "Pending", order: "https://ca/order/1" }),
          });
          const d = decide(s, t(0));
          const due = !has || (renewIn !== undefined && renewIn <= 0);
          const blocked = retryIn !== undefined && retryIn > 0;
          expect(d.kind).toBe(due && !blocked ? "order" : "wait");
          if (d.kind === "order")
            expect(d.why).toBe(pending ? "resume" : has ? "renewal" : "missing");
          if (d.kind === "wait" && due) expect(d.until).toEqual(t(retryIn!));
        },
      ),
      { numRuns: RUNS },
    );
  });
});
