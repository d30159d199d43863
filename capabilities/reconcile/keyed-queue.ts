/**
 * A bounded queue of jobs keyed by the object they are for (a Gateway, a status lane), the
 * shape the reconciler's I/O stages share (provision-queue.ts, status-queue.ts):
 *
 * - coalescing: one waiting job per key; a newer job for a waiting key replaces it in place
 *   (latest wins, the key keeps its turn), so the queue never holds an outdated state;
 * - one job per key at a time: a job offered while its key runs waits for it, then runs;
 * - bounded: at most `concurrency` jobs run and at most `limit` keys wait. A new key offered
 *   to a full queue is refused (`"full"`), never dropped silently: the caller keeps its state
 *   (the snapshot, re-planned every build) and is told by `onSpace` when to offer again;
 * - contained: a job that throws is reported (`onError`) and the queue carries on with the
 *   other keys.
 *
 * Plain promises, no timers: tests drive it with fake jobs.
 */

export interface KeyedQueueOptions<T> {
  /** Runs one job. */
  readonly run: (key: string, job: T) => Promise<void>;
  /** Jobs running at once (at least 1). */
  readonly concurrency: number;
  /** Keys waiting at most; a new key beyond it is refused (at least 1). */
  readonly limit: number;
  /** A job threw (or rejected): the error, for the log. */
  readonly onError?: (key: string, error: unknown) => void;
  /** A queue that refused a key has room again: offer what was refused. */
  readonly onSpace?: () => void;
}

/** What `offer` did with a job. */
export type Offered = "queued" | "coalesced" | "full";

export class KeyedQueue<T> {
  /** Waiting jobs in their turn (Map order), at most one per key. */
  readonly #waiting = new Map<string, T>();
  /** Keys whose job runs now. */
  readonly #running = new Set<string>();
  #refused = false;
  #idle: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(private readonly o: KeyedQueueOptions<T>) {}

  /** Queues `job` for `key` (replacing the one waiting for it) and starts what may start. */
  offer(key: string, job: T): Offered {
    if (this.#waiting.has(key)) {
      this.#waiting.set(key, job);
      return "coalesced";
    }
    if (this.#waiting.size >= Math.max(1, this.o.limit)) {
      this.#refused = true;
      return "full";
    }
    this.#waiting.set(key, job);
    this.#pump();
    return "queued";
  }

  /** Keys waiting. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /** Keys whose job runs now. */
  get running(): readonly string[] {
    return [...this.#running];
  }

  /** Whether `key` has a job waiting or running. */
  has(key: string): boolean {
    return this.#waiting.has(key) || this.#running.has(key);
  }

  /** Drops every waiting job (jobs running finish). */
  clear(): void {
    this.#waiting.clear();
    this.#settle();
  }

  /** Resolves once no job waits or runs. */
  idle(): Promise<void> {
    if (this.#waiting.size === 0 && this.#running.size === 0) return Promise.resolve();
    if (!this.#idle) {
      let resolve!: () => void;
      const promise = new Promise<void>(r => (resolve = r));
      this.#idle = { promise, resolve };
    }
    return this.#idle.promise;
  }

  #pump(): void {
    for (const [key, job] of this.#waiting) {
      if (this.#running.size >= Math.max(1, this.o.concurrency)) break;
      if (this.#running.has(key)) continue;
      this.#waiting.delete(key);
      this.#running.add(key);
      void this.#start(key, job);
    }
  }

  async #start(key: string, job: T): Promise<void> {
    try {
      await this.o.run(key, job);
    } catch (e) {
      this.o.onError?.(key, e);
    }
    this.#running.delete(key);
    this.#pump();
    this.#settle();
  }

  #settle(): void {
    if (this.#refused && this.#waiting.size < Math.max(1, this.o.limit)) {
      this.#refused = false;
      this.o.onSpace?.();
    }
    if (this.#waiting.size === 0 && this.#running.size === 0 && this.#idle) {
      const { resolve } = this.#idle;
      this.#idle = undefined;
      resolve();
    }
  }
}
