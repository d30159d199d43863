import fc from "fast-check";
import { KubeError } from "../kube/client";
import { DEFAULT_RETRY, RetryDeps, classify, listAll, retrying } from "./list";

/** A fake API server: pages of a fixed list, with scripted failures before answers. */
class FakeApi {
  readonly paths: string[] = [];
  constructor(
    private readonly items: readonly number[],
    /** Failures to answer with, one per request, before the real answer. */
    private readonly failures: unknown[] = [],
    /** Expire the continue token once after this many successful pages (410). */
    private expireAfterPages?: number,
  ) {}
  pages = 0;
  get = async (path: string): Promise<{ items: number[]; metadata: { continue?: string } }> => {
    this.paths.push(path);
    const failure = this.failures.shift();
    if (failure !== undefined) throw failure;
    const q = new URLSearchParams(path.slice(path.indexOf("?") + 1));
    const limit = Number(q.get("limit"));
    const from = q.has("continue") ? Number(q.get("continue")) : 0;
    if (from > 0 && this.expireAfterPages !== undefined && this.pages >= this.expireAfterPages) {
      this.expireAfterPages = undefined;
      throw new KubeError(410, '{"reason":"Expired"}', `GET ${path}`);
    }
    this.pages++;
    const next = from + limit;
    return {
      items: this.items.slice(from, next),
      metadata: next < this.items.length ? { continue: String(next) } : {},
    };
  };
}

const deps = (): RetryDeps & { slept: number[] } => {
  const slept: number[] = [];
  return { slept, sleep: async ms => void slept.push(ms), random: () => 0.5 };
};
const refused = () => Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });

describe("classify", () => {
  it.each([
    [new KubeError(500, "", "x"), "retry"],
    [new KubeError(503, "", "x"), "retry"],
    [new KubeError(429, "", "x"), "retry"],
    [new KubeError(401, "", "x"), "denied"],
    [new KubeError(403, "", "x"), "denied"],
    [new KubeError(404, "", "x"), "missing"],
    [new KubeError(400, "", "x"), "fatal"],
    [new KubeError(410, "", "x"), "fatal"],
    [refused(), "retry"],
    [Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }), "retry"],
    [new Error("GET /api/v1/secrets: timed out"), "retry"],
    [new TypeError("cannot read properties of undefined"), "fatal"],
  ])("case %#", (e, want) => expect(classify(e)).toBe(want));
});

describe("listAll", () => {
  it("returns every item, in order, whatever the page size", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer(), { maxLength: 60 }),
        fc.integer({ min: 1, max: 20 }),
        async (items, pageSize) => {
          const api = new FakeApi(items);
          const r = await listAll(api.get, "/api/v1/secrets", DEFAULT_RETRY, deps(), pageSize);
          expect(r).toEqual({
            ok: true,
            value: { found: true, items, resourceVersion: undefined },
          });
          expect(api.paths).toHaveLength(Math.max(1, Math.ceil(items.length / pageSize)));
          for (const p of api.paths) expect(p).toContain(`limit=${pageSize}`);
        },
      ),
    );
  });

  it("retries retryable failures with growing, capped delays, then succeeds", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.constantFrom(
            () => refused(),
            () => new KubeError(503, "", "GET"),
            () => new KubeError(429, "", "GET"),
            () => new Error("GET /x: timed out"),
          ),
          { maxLength: 12 },
        ),
        async makers => {
          const api = new FakeApi(
            [1, 2, 3, 4, 5],
            makers.map(m => m()),
          );
          const d = deps();
          const r = await listAll(api.get, "/apis/x", DEFAULT_RETRY, d, 2);
          expect(r.ok && r.value.found && r.value.items).toEqual([1, 2, 3, 4, 5]);
          expect(d.slept).toHaveLength(makers.length);
          for (let i = 1; i < d.slept.length; i++)
            expect(d.slept[i]).toBeGreaterThanOrEqual(d.slept[i - 1]!);
          for (const ms of d.slept) expect(ms).toBeLessThanOrEqual(DEFAULT_RETRY.backoff.maxMs);
        },
      ),
    );
  });

  it("restarts the list from the first page when the continue token expired (410)", async () => {
    const items = Array.from({ length: 10 }, (_, i) => i);
    const api = new FakeApi(items, [], 2);
    const r = await listAll(api.get, "/apis/x", DEFAULT_RETRY, deps(), 3);
    expect(r.ok && r.value.found && r.value.items).toEqual(items);
    // pages 1, 2, then 410 on page 3, then 1..4 again
    expect(api.paths.filter(p => !p.includes("continue="))).toHaveLength(2);
  });

  it("reports a resource the API server does not serve (404) as not found", async () => {
    const api = new FakeApi([], [new KubeError(404, "not found", "GET")]);
    expect(await listAll(api.get, "/apis/x", DEFAULT_RETRY, deps())).toEqual({
      ok: true,
      value: { found: false },
    });
  });

  it("gives up on 401/403 after the allowed attempts", async () => {
    const denied = Array.from({ length: 10 }, () => new KubeError(403, "forbidden", "GET"));
    const api = new FakeApi([1], denied);
    const r = await listAll(api.get, "/apis/x", DEFAULT_RETRY, deps());
    expect(r).toMatchObject({ ok: false, failure: "denied" });
    expect(api.paths).toHaveLength(DEFAULT_RETRY.deniedAttempts);
  });

  it("recovers from 403 within the allowed attempts", async () => {
    const denied = Array.from(
      { length: DEFAULT_RETRY.deniedAttempts - 1 },
      () => new KubeError(403, "forbidden", "GET"),
    );
    const r = await listAll(new FakeApi([7], denied).get, "/apis/x", DEFAULT_RETRY, deps());
    expect(r.ok && r.value.found && r.value.items).toEqual([7]);
  });

  it("fails at once on what cannot pass (a bug, a bad request)", async () => {
    const api = new FakeApi([1], [new TypeError("boom")]);
    const r = await listAll(api.get, "/apis/x", DEFAULT_RETRY, deps());
    expect(r).toMatchObject({ ok: false, failure: "fatal" });
    expect(api.paths).toHaveLength(1);
  });
});

describe("retrying", () => {
  it("stops retrying once told the controller stops", async () => {
    let calls = 0;
    const r = await retrying(
      "x",
      async () => {
        calls++;
        throw refused();
      },
      DEFAULT_RETRY,
      { ...deps(), stopped: () => calls >= 3 },
    );
    expect(r).toMatchObject({ ok: false, failure: "fatal" });
    expect(calls).toBe(3);
  });
});
