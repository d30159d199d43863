import { ProxyState } from "../proxies";
import { ManualClock } from "./testing/manual-clock";
import { KengineProxyWrites, StatusQueue } from "./status-queue";

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>(r => (resolve = r));
  return { promise, resolve };
};
const tick = () => new Promise(r => setImmediate(r));

describe("StatusQueue", () => {
  it("writes each lane one hand-over at a time; the latest waiting one wins", async () => {
    const q = new StatusQueue({ error: () => {} });
    const first = deferred();
    const ran: string[] = [];
    q.offer("objects", async () => {
      ran.push("objects 1");
      await first.promise;
    });
    for (const n of [2, 3, 4])
      q.offer("objects", async () => {
        ran.push(`objects ${n}`);
      });
    await tick();
    expect(ran).toEqual(["objects 1"]);
    first.resolve();
    await q.idle();
    expect(ran).toEqual(["objects 1", "objects 4"]);
  });

  it("a lane held up by slow writes does not hold up the other lane", async () => {
    const q = new StatusQueue({ error: () => {} });
    const slow = deferred();
    const ran: string[] = [];
    q.offer("objects", () => slow.promise);
    q.offer("proxies", async () => {
      ran.push("proxies");
    });
    await tick();
    expect(ran).toEqual(["proxies"]);
    slow.resolve();
    await q.idle();
  });

  it("a failed write is logged; the lane writes the next hand-over", async () => {
    const errors: string[] = [];
    const q = new StatusQueue({ error: (_m, meta) => errors.push(String(meta?.["lane"])) });
    const ran: number[] = [];
    q.offer("objects", () => Promise.reject(new Error("boom")));
    await q.idle();
    q.offer("objects", async () => {
      ran.push(2);
    });
    await q.idle();
    expect(errors).toEqual(["objects"]);
    expect(ran).toEqual([2]);
  });
});

describe("KengineProxyWrites", () => {
  const start = Date.parse("2026-01-01T00:00:00Z");
  const plan = {
    key: "apps/gw",
    proxies: [{ name: "apps/gw-proxy-1", pod: "gw-proxy-1", uid: "p1", address: "10.244.0.9" }],
    targets: [],
  };
  const programmed = (hash: string, at: number): ProxyState => ({
    phase: "Programmed",
    desiredHash: hash,
    hash,
    at,
    verifiedAt: at,
  });

  function setup() {
    const clock = new ManualClock(start);
    const requests: string[] = [];
    let fail = false;
    let state: ProxyState | undefined = programmed("h1", start);
    let rechecks = 0;
    const w = new KengineProxyWrites({
      kube: {
        request: async <T>(method: string, path: string): Promise<T> => {
          if (fail) throw new Error("unavailable");
          requests.push(`${method} ${path.split("?")[0]!.split("/").slice(-2).join("/")}`);
          return {} as T;
        },
      },
      log: { debug: () => {} },
      fleet: () => ({ state: () => state }),
      admin: () => undefined,
      recheck: () => rechecks++,
      clock,
    });
    return {
      w,
      clock,
      requests,
      setState: (s: ProxyState | undefined) => (state = s),
      setFail: (f: boolean) => (fail = f),
      rechecks: () => rechecks,
    };
  }

  it("creates the object once and writes its status; the same status is not written again", async () => {
    const s = setup();
    await s.w.write([plan], new Date(start));
    await s.w.write([plan], new Date(start + 1000));
    expect(s.requests).toEqual(["PATCH kengineproxies/gw-proxy-1", "PATCH gw-proxy-1/status"]);
    s.w.forget(); // a new leader term writes everything again
    await s.w.write([plan], new Date(start + 2000));
    expect(s.requests).toHaveLength(4);
  });

  it("holds a routine change back until it settles, and comes back for it on the clock", async () => {
    const s = setup();
    await s.w.write([plan], new Date(start));
    s.setState(programmed("h2", start + 100));
    await s.w.write([plan], new Date(start + 100));
    expect(s.requests).toHaveLength(2); // held back
    expect(s.clock.pending()).toHaveLength(1);
    s.clock.advance(s.clock.pending()[0]! - start - 1);
    expect(s.rechecks()).toBe(0);
    s.clock.advance(1);
    expect(s.rechecks()).toBe(1);
    await s.w.write([plan], new Date(s.clock.now()));
    expect(s.requests).toEqual([
      "PATCH kengineproxies/gw-proxy-1",
      "PATCH gw-proxy-1/status",
      "PATCH gw-proxy-1/status",
    ]);
  });

  it("a failed write is tried again at the next hand-over", async () => {
    const s = setup();
    s.setFail(true);
    await s.w.write([plan], new Date(start));
    s.setFail(false);
    await s.w.write([plan], new Date(start + 1000));
    expect(s.requests).toEqual(["PATCH kengineproxies/gw-proxy-1", "PATCH gw-proxy-1/status"]);
  });

  it("stop cancels the recheck", async () => {
    const s = setup();
    await s.w.write([plan], new Date(start));
    s.setState(programmed("h2", start + 100));
    await s.w.write([plan], new Date(start + 100));
    s.w.stop();
    s.clock.advance(600_000);
    expect(s.rechecks()).toBe(0);
  });
});
