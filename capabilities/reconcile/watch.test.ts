import fc from "fast-check";
import { applyAll, emptySnapshot, keyOf } from "../snapshot";
import type { KubeObject } from "../snapshot";
import {
  DEFAULT_WATCH_SILENCE_MS,
  KindWatch,
  RawWatchEvent,
  RestartCause,
  WatchTimer,
  relistEvents,
  watchPath,
  watchSilenceFromEnv,
  watchStep,
  watchTimeoutSeconds,
} from "./watch";

const obj = (name: string, rv: string): KubeObject => ({
  kind: "HTTPRoute",
  metadata: { name, namespace: "ns", resourceVersion: rv },
});
const ev = (type: string, name: string, rv: string): RawWatchEvent => ({
  type,
  object: obj(name, rv) as RawWatchEvent["object"],
});

/** One scripted watch response: lines then a normal end, or a failed request. */
type Response = { lines: RawWatchEvent[] } | { fail: { status?: number; message: string } };

/** A watch harness: scripted responses, then requests hang until the watch stops. */
function harness(responses: Response[], relistRvs: (string | undefined)[] = []) {
  const paths: string[] = [];
  const ingested: string[] = [];
  const sleeps: number[] = [];
  let relists = 0;
  let idle: () => void = () => {};
  const idleNow = new Promise<void>(r => (idle = r));
  const watch = new KindWatch("HTTPRoute", "/apis/x/v1/httproutes", {
    stream: (path, onEvent, signal) => {
      paths.push(path);
      const r = responses.shift();
      if (!r) {
        idle();
        return new Promise((_, reject) =>
          signal.addEventListener("abort", () => reject(new Error("aborted"))),
        );
      }
      if ("fail" in r) return Promise.reject(Object.assign(new Error(r.fail.message), r.fail));
      for (const l of r.lines) onEvent(l);
      return Promise.resolve();
    },
    relist: () => {
      relists++;
      return Promise.resolve(relistRvs.shift());
    },
    ingest: (type, o) => ingested.push(`${type} ${o.metadata.name}@${o.metadata.resourceVersion}`),
    sleep: ms => {
      sleeps.push(ms);
      return Promise.resolve();
    },
    random: () => 0.5,
    backoff: { initialMs: 100, maxMs: 1000, factor: 2, jitter: 0 },
    quietMs: 7,
  });
  const rvOf = (p: string) => new URL(p, "http://x").searchParams.get("resourceVersion");
  return {
    watch,
    paths,
    rvs: () => paths.map(rvOf),
    ingested,
    sleeps,
    relists: () => relists,
    idle: idleNow,
  };
}

describe("watchPath", () => {
  it("asks for a watch from the resourceVersion with bookmarks and a server timeout", () => {
    const u = new URL(watchPath("/api/v1/services", "42", 300), "http://x");
    expect(u.pathname).toBe("/api/v1/services");
    expect(Object.fromEntries(u.searchParams)).toEqual({
      watch: "1",
      allowWatchBookmarks: "true",
      resourceVersion: "42",
      timeoutSeconds: "300",
    });
  });
});

describe("watchStep", () => {
  it("maps the watch protocol's event types", () => {
    expect(watchStep(ev("ADDED", "a", "2"))).toEqual({
      op: "ingest",
      type: "upsert",
      resourceVersion: "2",
    });
    expect(watchStep(ev("MODIFIED", "a", "3"))).toEqual({
      op: "ingest",
      type: "upsert",
      resourceVersion: "3",
    });
    expect(watchStep(ev("DELETED", "a", "4"))).toEqual({
      op: "ingest",
      type: "delete",
      resourceVersion: "4",
    });
    expect(watchStep(ev("BOOKMARK", "", "5"))).toEqual({ op: "bookmark", resourceVersion: "5" });
    expect(watchStep({ type: "ERROR", object: { code: 410, message: "too old" } })).toEqual({
      op: "relist",
    });
    expect(watchStep({ type: "ERROR", object: { code: 500, message: "boom" } })).toEqual({
      op: "error",
      message: "boom",
    });
  });
});

describe("KindWatch", () => {
  it("watches from the list's resourceVersion and resumes from the last one it saw", async () => {
    const h = harness([
      { lines: [ev("ADDED", "a", "11"), ev("MODIFIED", "a", "12")] },
      { lines: [ev("BOOKMARK", "", "20")] },
      { lines: [ev("DELETED", "a", "21")] },
    ]);
    h.watch.start("10");
    await h.idle;
    await h.watch.stop();
    expect(h.rvs()).toEqual(["10", "12", "20", "21"]);
    expect(h.ingested).toEqual(["upsert a@11", "upsert a@12", "delete a@21"]);
    expect(h.relists()).toBe(0);
    expect(h.sleeps).toEqual([]);
  });

  it("lists again on 410 Gone (an ERROR event or the response) and watches from the new list", async () => {
    const h = harness(
      [
        {
          lines: [
            ev("ADDED", "a", "11"),
            { type: "ERROR", object: { code: 410 } },
            ev("ADDED", "b", "12"),
          ],
        },
        { fail: { status: 410, message: "gone" } },
      ],
      ["50", "60"],
    );
    h.watch.start("10");
    await h.idle;
    await h.watch.stop();
    // lines after the ERROR are not applied: the relist replaces the kind
    expect(h.ingested).toEqual(["upsert a@11"]);
    expect(h.relists()).toBe(2);
    expect(h.rvs()).toEqual(["10", "50", "60"]);
  });

  it("backs off after failures, growing, and starts over after a watch that delivered", async () => {
    const h = harness([
      { fail: { message: "ECONNREFUSED" } },
      { fail: { status: 500, message: "boom" } },
      { lines: [{ type: "ERROR", object: { code: 500, message: "etcd" } }] },
      { lines: [ev("ADDED", "a", "11")] },
      { fail: { message: "reset" } },
    ]);
    h.watch.start("10");
    await h.idle;
    await h.watch.stop();
    expect(h.sleeps).toEqual([100, 200, 400, 100]);
    expect(h.rvs()).toEqual(["10", "10", "10", "10", "11", "11"]);
  });

  it("pauses after a watch that ended without a line, never spinning", async () => {
    const h = harness([{ lines: [] }, { lines: [] }]);
    h.watch.start("10");
    await h.idle;
    await h.watch.stop();
    expect(h.sleeps).toEqual([7, 7]);
  });

  it("lists first when started without a resourceVersion, retrying until the kind is served", async () => {
    const h = harness([], [undefined, undefined, "30"]);
    h.watch.start(undefined);
    await h.idle;
    await h.watch.stop();
    expect(h.relists()).toBe(3);
    expect(h.sleeps).toEqual([100, 200]);
    expect(h.rvs()).toEqual(["30"]);
  });

  it("stops at once while backing off", async () => {
    let sleeping: () => void = () => {};
    const asleep = new Promise<void>(r => (sleeping = r));
    const w = new KindWatch("HTTPRoute", "/x", {
      stream: () => Promise.reject(Object.assign(new Error("refused"), { code: "ECONNREFUSED" })),
      relist: () => Promise.resolve("1"),
      ingest: () => {},
      sleep: () => {
        sleeping();
        return new Promise<void>(() => {}); // a back-off that would never end by itself
      },
      random: () => 0,
      backoff: { initialMs: 30_000, maxMs: 30_000, factor: 2, jitter: 0 },
    });
    w.start("1");
    await asleep;
    await w.stop(); // resolves: the sleep is cut short
    expect(w.stopped).toBe(true);
  });
});

/** Timers run by hand: `fire()` runs the due ones (the silence bound without real time). */
class HandTimer implements WatchTimer {
  #next = 0;
  readonly armed = new Map<number, { fn: () => void; ms: number }>();
  set(fn: () => void, ms: number): unknown {
    const id = ++this.#next;
    this.armed.set(id, { fn, ms });
    return id;
  }
  clear(handle: unknown): void {
    this.armed.delete(handle as number);
  }
  /** Runs every armed timer (each watch request arms one; a line re-arms it). */
  fire(): void {
    const due = [...this.armed.values()];
    this.armed.clear();
    for (const t of due) t.fn();
  }
}

/**
 * A fake transport: each request delivers its scripted lines and then stays open without a
 * byte (a half-open connection) until aborted, as the real client does.
 */
function silentTransport(script: RawWatchEvent[][]) {
  const opened: { path: string; aborted: boolean }[] = [];
  const waiters: (() => void)[] = [];
  const stream = (path: string, onEvent: (e: RawWatchEvent) => void, signal: AbortSignal) => {
    const request = { path, aborted: false };
    opened.push(request);
    for (const line of script.shift() ?? []) onEvent(line);
    for (const w of waiters.splice(0)) w();
    return new Promise<void>((_, reject) =>
      signal.addEventListener("abort", () => {
        request.aborted = true;
        reject(Object.assign(new Error("aborted"), { name: "AbortError" }));
      }),
    );
  };
  /** Resolves once `n` requests were opened. */
  const opens = async (n: number) => {
    while (opened.length < n) await new Promise<void>(r => waiters.push(r));
  };
  return { stream, opened, opens };
}

describe("KindWatch silence bound", () => {
  const setup = (script: RawWatchEvent[][], silenceMs = 30_000) => {
    const timer = new HandTimer();
    const t = silentTransport(script);
    const causes: RestartCause[] = [];
    const sleeps: number[] = [];
    const ingested: string[] = [];
    const watch = new KindWatch("Secret", "/api/v1/secrets", {
      stream: t.stream,
      relist: () => Promise.resolve("1"),
      ingest: (type, o) =>
        ingested.push(`${type} ${o.metadata.name}@${o.metadata.resourceVersion}`),
      sleep: ms => {
        sleeps.push(ms);
        return Promise.resolve();
      },
      random: () => 0.5,
      backoff: { initialMs: 100, maxMs: 1000, factor: 2, jitter: 0 },
      silenceMs,
      timer,
      onRestart: c => causes.push(c),
    });
    const rv = (i: number) =>
      new URL(t.opened[i]!.path, "http://x").searchParams.get("resourceVersion");
    return { timer, t, causes, sleeps, ingested, watch, rv };
  };

  it("restarts a watch silent past the bound from the last resourceVersion it saw, at once", async () => {
    const h = setup([[ev("ADDED", "a", "11"), ev("BOOKMARK", "", "15")], []]);
    h.watch.start("10");
    await h.t.opens(1);
    // every line re-armed the bound: one timer armed, for the configured silence
    expect([...h.timer.armed.values()].map(t => t.ms)).toEqual([30_000]);
    h.timer.fire();
    await h.t.opens(2);
    expect(h.t.opened[0]!.aborted).toBe(true);
    expect(h.rv(1)).toBe("15");
    expect(h.causes).toEqual(["silent"]);
    expect(h.sleeps).toEqual([]);
    expect(h.ingested).toEqual(["upsert a@11"]);
    await h.watch.stop();
    expect(h.t.opened[1]!.aborted).toBe(true);
  });

  it("backs off when a request stays silent from its start (the server is unreachable)", async () => {
    const h = setup([[], [], []]);
    h.watch.start("10");
    await h.t.opens(1);
    h.timer.fire();
    await h.t.opens(2);
    h.timer.fire();
    await h.t.opens(3);
    expect(h.causes).toEqual(["silent", "silent"]);
    expect(h.sleeps).toEqual([100, 200]);
    expect([h.rv(0), h.rv(1), h.rv(2)]).toEqual(["10", "10", "10"]);
    await h.watch.stop();
  });

  it("never fires while lines keep coming, and a healthy watch asks the server to end it before the bound", async () => {
    const h = setup([[ev("ADDED", "a", "11")]], 60_000);
    h.watch.start("10");
    await h.t.opens(1);
    const timeout = Number(
      new URL(h.t.opened[0]!.path, "http://x").searchParams.get("timeoutSeconds"),
    );
    expect(timeout * 1000).toBeLessThan(60_000);
    expect(h.causes).toEqual([]);
    await h.watch.stop();
    expect(h.timer.armed.size).toBe(0);
  });
});

describe("watch silence settings", () => {
  it("defaults to 60 s and takes a duration between 5 s and 60 s", () => {
    expect(watchSilenceFromEnv({})).toEqual({ ok: true, value: DEFAULT_WATCH_SILENCE_MS });
    expect(DEFAULT_WATCH_SILENCE_MS).toBeLessThanOrEqual(60_000);
    expect(watchSilenceFromEnv({ KENGINE_WATCH_SILENCE: "30s" })).toEqual({
      ok: true,
      value: 30_000,
    });
    expect(watchSilenceFromEnv({ KENGINE_WATCH_SILENCE: "45" })).toEqual({
      ok: true,
      value: 45_000,
    });
    for (const bad of ["2m", "1s", "soon", "0"])
      expect(watchSilenceFromEnv({ KENGINE_WATCH_SILENCE: bad })).toMatchObject({ ok: false });
  });

  it("asks for a server timeout below every bound it accepts", () => {
    fc.assert(
      fc.property(fc.integer({ min: 5_000, max: 60_000 }), ms => {
        const t = watchTimeoutSeconds(ms);
        expect(t).toBeGreaterThanOrEqual(1);
        expect(t * 1000).toBeLessThan(ms);
      }),
    );
  });
});

describe("relistEvents", () => {
  it("makes the kind's map equal to the list, in one batch, whatever it held before", () => {
    const names = fc.uniqueArray(fc.constantFrom("a", "b", "c", "d", "e", "f"), { maxLength: 6 });
    const rv = fc.constantFrom("1", "2");
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom("a", "b", "c", "d", "e", "f"), rv), { maxLength: 6 }),
        names,
        rv,
        (before, listedNames, listedRv) => {
          const start = applyAll(
            emptySnapshot(),
            before.map(([n, r]) => ({ type: "upsert", kind: "HTTPRoute", object: obj(n, r) })),
          ).snapshot;
          const items = listedNames.map(n => obj(n, listedRv));
          const next = applyAll(
            start,
            relistEvents("HTTPRoute", start.objects.HTTPRoute, items),
          ).snapshot;
          expect([...next.objects.HTTPRoute.keys()].sort()).toEqual(items.map(keyOf).sort());
          for (const o of items)
            expect(next.objects.HTTPRoute.get(keyOf(o))?.metadata.resourceVersion).toBe(listedRv);
          // other kinds' maps are shared, not copied
          expect(next.objects.Gateway).toBe(start.objects.Gateway);
        },
      ),
    );
  });
});
