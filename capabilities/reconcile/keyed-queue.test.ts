import fc from "fast-check";
import { KeyedQueue } from "./keyed-queue";

/** Fake jobs the test finishes by hand: each run waits until released. */
function harness(concurrency: number, limit: number) {
  const started: { key: string; job: number }[] = [];
  const release = new Map<string, (fail?: boolean) => void>();
  const errors: string[] = [];
  let spaces = 0;
  let maxRunning = 0;
  const q: KeyedQueue<number> = new KeyedQueue<number>({
    concurrency,
    limit,
    run: (key, job) => {
      if (release.has(key)) throw new Error(`two jobs of ${key} at once`);
      started.push({ key, job });
      maxRunning = Math.max(maxRunning, q.running.length);
      return new Promise<void>((resolve, reject) =>
        release.set(key, fail => {
          release.delete(key);
          if (fail) reject(new Error(`job ${job} failed`));
          else resolve();
        }),
      );
    },
    onError: (key, e) => errors.push(`${key}: ${(e as Error).message}`),
    onSpace: () => spaces++,
  });
  const settle = () => new Promise(r => setImmediate(r));
  return {
    q,
    started,
    errors,
    release,
    settle,
    get spaces() {
      return spaces;
    },
    get maxRunning() {
      return maxRunning;
    },
  };
}

describe("KeyedQueue", () => {
  it("runs waiting keys in the order they were first offered", async () => {
    const h = harness(1, 10);
    h.q.offer("a", 1);
    h.q.offer("b", 2);
    h.q.offer("c", 3);
    h.q.offer("b", 4); // b keeps its turn, with its latest job
    for (let i = 0; i < 3; i++) {
      h.release.values().next().value!();
      await h.settle();
    }
    expect(h.started).toEqual([
      { key: "a", job: 1 },
      { key: "b", job: 4 },
      { key: "c", job: 3 },
    ]);
  });

  it("coalesces a key's waiting jobs: only the latest runs, after the one running", async () => {
    const h = harness(4, 10);
    expect(h.q.offer("gw", 1)).toBe("queued");
    expect(h.q.offer("gw", 2)).toBe("queued"); // waits: gw runs
    expect(h.q.offer("gw", 3)).toBe("coalesced");
    expect(h.started.map(s => s.job)).toEqual([1]);
    h.release.get("gw")!();
    await h.settle();
    expect(h.started.map(s => s.job)).toEqual([1, 3]);
    h.release.get("gw")!();
    await h.q.idle();
    expect(h.started.map(s => s.job)).toEqual([1, 3]);
  });

  it("refuses a new key when full, keeps the ones waiting, and says when there is room", async () => {
    const h = harness(1, 2);
    h.q.offer("a", 1); // runs
    h.q.offer("b", 2);
    h.q.offer("c", 3);
    expect(h.q.offer("d", 4)).toBe("full");
    expect(h.q.offer("b", 5)).toBe("coalesced"); // a waiting key still takes its latest state
    expect(h.spaces).toBe(0);
    h.release.get("a")!();
    await h.settle();
    expect(h.spaces).toBe(1);
    expect(h.q.offer("d", 4)).toBe("queued");
    expect(h.started.map(s => s.job)).toEqual([1, 5]);
  });

  it("a failing job is reported and does not hold back the other keys", async () => {
    const h = harness(1, 10);
    h.q.offer("bad", 1);
    h.q.offer("good", 2);
    h.release.get("bad")!(true);
    await h.settle();
    expect(h.errors).toEqual(["bad: job 1 failed"]);
    expect(h.started.map(s => s.key)).toEqual(["bad", "good"]);
    h.release.get("good")!();
    await h.q.idle();
  });

  it("a job that throws before its first await is contained too", async () => {
    const seen: string[] = [];
    const q = new KeyedQueue<number>({
      concurrency: 1,
      limit: 4,
      run: key => {
        if (key === "bad") throw new Error("sync");
        seen.push(key);
        return Promise.resolve();
      },
      onError: key => seen.push(`error ${key}`),
    });
    q.offer("bad", 1);
    q.offer("good", 2);
    await q.idle();
    expect(seen).toEqual(["error bad", "good"]);
  });

  it("clear drops waiting jobs; running ones finish", async () => {
    const h = harness(1, 10);
    h.q.offer("a", 1);
    h.q.offer("b", 2);
    h.q.clear();
    expect(h.q.waiting).toBe(0);
    h.release.get("a")!();
    await h.q.idle();
    expect(h.started.map(s => s.key)).toEqual(["a"]);
  });

  it("property: bounded, one job per key at a time, and every key's last accepted job runs last", async () => {
    const op = fc.oneof(
      fc.record({ offer: fc.constantFrom("a", "b", "c", "d", "e") }),
      fc.record({ finish: fc.nat(4), fail: fc.boolean() }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(op, { maxLength: 60 }),
        async (concurrency, limit, ops) => {
          const h = harness(concurrency, limit);
          const lastAccepted = new Map<string, number>();
          let n = 0;
          for (const o of ops) {
            if ("offer" in o) {
              const job = ++n;
              if (h.q.offer(o.offer, job) !== "full") lastAccepted.set(o.offer, job);
            } else {
              const running = [...h.release.values()];
              running[o.finish % Math.max(1, running.length)]?.(o.fail);
            }
            await h.settle();
            expect(h.q.running.length).toBeLessThanOrEqual(concurrency);
            expect(h.q.waiting).toBeLessThanOrEqual(limit);
          }
          // drain
          while (h.release.size) {
            for (const r of [...h.release.values()]) r();
            await h.settle();
          }
          await h.q.idle();
          expect(h.maxRunning).toBeLessThanOrEqual(concurrency);
          for (const [key, job] of lastAccepted) {
            const ran = h.started.filter(s => s.key === key).map(s => s.job);
            expect(ran[ran.length - 1]).toBe(job);
            // a key's jobs run in the order they were offered
            expect([...ran].sort((x, y) => x - y)).toEqual(ran);
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
