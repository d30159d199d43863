/**
 * The status writer: applies StatusUpdates only while this replica leads, each as a conditional
 * write; on a conflict it re-reads the object, recomputes and tries again (a few times). It is
 * idempotent: the caller may hand it the same results again (e.g. on becoming leader) and only
 * what differs is written.
 *
 * Batching and rate limiting: each write() call is the complete set of updates wanted now.
 * An object written less than `minIntervalMs(kind)` ago (or being written) is not written again
 * at once: its update waits and is replaced by newer ones (coalesced) until the interval ends,
 * then only the latest is written; an update a later call no longer asks for is dropped. So a
 * burst of route changes costs one write per route and about one Gateway write per interval,
 * while a change after a quiet period is written at once. Urgent updates (an address, or a
 * condition's status or reason changes) are never held back, only serialised per object.
 *
 * The writer remembers the objects its writes returned: `freshest()` gives the caller the newer
 * of that and its (possibly lagging) watch cache, so a build that runs before the watch delivers
 * our own write neither writes the same status again nor conflicts with itself.
 */
import { StatusKind, StatusUpdate, StoredObject } from "./compute";

/** Where statuses are read and written (status-api.ts talks to the API server). */
export interface StatusApi {
  read(
    kind: StatusKind,
    namespace: string | undefined,
    name: string,
  ): Promise<StoredObject | undefined>;
  /** Conditional on resourceVersion; rejects with an error whose `status` is 409 on conflict. */
  writeStatus(update: StatusUpdate): Promise<StoredObject>;
}

export interface WriteReport {
  readonly written: number;
  readonly conflicts: number;
  readonly failed: readonly { readonly update: StatusUpdate; readonly error: string }[];
  readonly skippedNotLeader: boolean;
}

/**
 * How often a burst rewrites a GatewayClass, Gateway or ListenerSet whose counts (attachedRoutes)
 * or messages change: a route attached in a burst shows in its Gateway's status at most this
 * long after its own (docs/bench.md, settle).
 */
export const PARENT_STATUS_INTERVAL_MS = 250;

/** How many failed writes a log line names; the rest are counted by error. */
export const LOGGED_FAILED_WRITES = 20;

/**
 * A bounded account of failed writes for one log line: how many, how many per error, and the
 * first `max` objects by name. (A lost lease fails every write of a pass: at thousands of routes
 * one line naming each was megabytes, built while the controller was short of memory.)
 */
export function failedWritesSummary(
  failed: WriteReport["failed"],
  max = LOGGED_FAILED_WRITES,
): { count: number; byError: Record<string, number>; first: string[] } {
  // errors may name their object: at most `max` distinct ones, each cut at 200 characters
  const cut = (e: string) => (e.length > 200 ? `${e.slice(0, 200)}…` : e);
  const byError: Record<string, number> = {};
  let distinct = 0;
  for (const f of failed) {
    let key = cut(f.error);
    if (byError[key] === undefined && distinct++ >= max) key = "(other errors)";
    byError[key] = (byError[key] ?? 0) + 1;
  }
  return {
    count: failed.length,
    byError,
    first: failed
      .slice(0, max)
      .map(f => `${f.update.kind} ${f.update.namespace ?? ""}/${f.update.name}: ${cut(f.error)}`),
  };
}

export interface StatusWriterOptions {
  readonly api: StatusApi;
  readonly isLeader: () => boolean;
  /** Recomputes one object's update from a fresh read (undefined: nothing to write any more). */
  readonly recompute: (fresh: StoredObject, stale: StatusUpdate) => StatusUpdate | undefined;
  readonly maxConflictRetries?: number;
  readonly concurrency?: number;
  /** Sees every outcome (metrics/ counts them). */
  readonly observer?: StatusObserver;
  /** Minimum time between two writes of one object, by kind (default 0: no limit). */
  readonly minIntervalMs?: (kind: StatusKind) => number;
  /** Reports of writes done later (rate-limited updates). */
  readonly onDeferredReport?: (report: WriteReport) => void;
}

/** Why a write was given up. */
export type FailureReason = "conflict" | "not_leader" | "invalid" | "server" | "other";

export interface StatusObserver {
  written(kind: StatusKind): void;
  conflict(kind: StatusKind): void;
  failed(kind: StatusKind, reason: FailureReason): void;
  /** Updates replaced by a newer one for the same object before being written. */
  coalesced?(kind: StatusKind, count: number): void;
  /**
   * An accepted write: how long it waited in its batch for a slot, and its round trip (ms,
   * conflict retries included).
   */
  timed?(kind: StatusKind, waitMs: number, writeMs: number): void;
}

/** At most this many keys in the log of written objects. */
const MAX_LOG = 4096;

const keyOf = (kind: StatusKind, namespace: string | undefined, name: string) =>
  `${kind}/${namespace ?? ""}/${name}`;

/** resourceVersions are opaque, but the API server's are integers: compare them if so. */
const newer = (a: string | undefined, b: string | undefined): boolean =>
  !!a && /^\d+$/.test(a) && (!b || (/^\d+$/.test(b) && BigInt(a) > BigInt(b)));

const reasonOf = (e: unknown): FailureReason => {
  const code = statusOf(e);
  if (code === 409) return "conflict";
  if (code !== undefined && code >= 400 && code < 500) return "invalid";
  if (code !== undefined && code >= 500) return "server";
  if (e instanceof Error && /timed out|ECONN|EPIPE|socket/i.test(e.message)) return "server";
  return "other";
};

const statusOf = (e: unknown): number | undefined => (e as { status?: number } | null)?.status;

export class StatusWriter {
  /** Objects as our writes returned them, by key (dropped once the watch cache caught up). */
  readonly #written = new Map<string, StoredObject>();
  /** Keys (`kind/namespace/name`) of the objects whose written copy changed, in order. */
  readonly #log: string[] = [];
  #logStart = 0;

  /** A position in the log of written objects (`writtenSince`). */
  get version(): number {
    return this.#logStart + this.#log.length;
  }

  /**
   * Keys of the objects whose written copy (what `freshest` may answer) changed since
   * `version`; undefined when that is too long ago to say.
   */
  writtenSince(version: number): ReadonlySet<string> | undefined {
    if (version < this.#logStart) return undefined;
    return new Set(this.#log.slice(version - this.#logStart));
  }
  /** When each object was last written (started), by key. */
  readonly #lastWriteAt = new Map<string, number>();
  readonly #inflight = new Set<string>();
  /** Rate-limited updates waiting for their object's interval to end, by key. */
  #pending = new Map<string, StatusUpdate>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(private readonly o: StatusWriterOptions) {}

  /** Updates waiting for their object's rate limit. */
  get pending(): number {
    return this.#pending.size;
  }

  /**
   * The newer of `cached` (the caller's watch cache) and what our last write of that object
   * returned. A deleted object (no cached copy) stays deleted.
   */
  freshest(
    kind: StatusKind,
    namespace: string | undefined,
    name: string,
    cached: StoredObject | undefined,
  ): StoredObject | undefined {
    const key = keyOf(kind, namespace, name);
    if (!cached) {
      this.#written.delete(key);
      return undefined;
    }
    const mine = this.#written.get(key);
    if (!mine) return cached;
    if (newer(mine.metadata?.resourceVersion, cached.metadata?.resourceVersion)) return mine;
    this.#written.delete(key); // the watch has caught up
    return cached;
  }

  /** Stops the timer of rate-limited writes (they are dropped). */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#pending.clear();
  }

  /**
   * Writes what is due now and keeps the rate-limited rest for later; `updates` is the complete
   * set wanted now (pending updates it no longer contains are dropped).
   */
  async write(updates: readonly StatusUpdate[]): Promise<WriteReport> {
    if (!this.o.isLeader()) {
      this.#pending.clear();
      return { written: 0, conflicts: 0, failed: [], skippedNotLeader: true };
    }
    const now = Date.now();
    // Forgotten after 10 minutes: an object deleted before the watch caught up with our write
    // of it is never asked for again, so nothing else would remove its written copy.
    for (const [key, at] of this.#lastWriteAt)
      if (now - at > 600_000) {
        this.#lastWriteAt.delete(key);
        this.#written.delete(key);
      }
    const due: StatusUpdate[] = [];
    const later = new Map<string, StatusUpdate>();
    for (const u of updates) {
      const key = keyOf(u.kind, u.namespace, u.name);
      if (this.#pending.has(key)) this.o.observer?.coalesced?.(u.kind, 1);
      const last = this.#lastWriteAt.get(key);
      const wait = this.#interval(u);
      if (this.#inflight.has(key) || (last !== undefined && now - last < wait)) later.set(key, u);
      else due.push(u);
    }
    this.#pending = later;
    this.#schedule();
    return this.#writeAll(due);
  }

  /** How long after its last write an update may be written: 0 for urgent ones. */
  #interval(u: StatusUpdate): number {
    return u.urgent ? 0 : (this.o.minIntervalMs?.(u.kind) ?? 0);
  }

  #schedule(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#closed || this.#pending.size === 0) return;
    const now = Date.now();
    let at = Infinity;
    for (const [key, u] of this.#pending) {
      const last = this.#lastWriteAt.get(key) ?? 0;
      at = Math.min(at, last + this.#interval(u));
    }
    this.#timer = setTimeout(() => void this.#flush(), Math.max(10, at - now));
    this.#timer.unref?.();
  }

  async #flush(): Promise<void> {
    this.#timer = undefined;
    const now = Date.now();
    const due: StatusUpdate[] = [];
    for (const [key, u] of this.#pending) {
      const last = this.#lastWriteAt.get(key) ?? 0;
      if (this.#inflight.has(key) || now - last < this.#interval(u)) continue;
      due.push(u);
      this.#pending.delete(key);
    }
    this.#schedule();
    if (!due.length) return;
    if (!this.o.isLeader()) {
      this.#pending.clear();
      return;
    }
    const report = await this.#writeAll(due);
    this.o.onDeferredReport?.(report);
    this.#schedule();
  }

  async #writeAll(updates: readonly StatusUpdate[]): Promise<WriteReport> {
    let written = 0;
    let conflicts = 0;
    const failed: { update: StatusUpdate; error: string }[] = [];
    const queue = [...updates];
    const batchAt = performance.now();
    const worker = async () => {
      for (let u = queue.shift(); u; u = queue.shift()) {
        const key = keyOf(u.kind, u.namespace, u.name);
        this.#inflight.add(key);
        this.#lastWriteAt.set(key, Date.now());
        const startAt = performance.now();
        const r = await this.#writeOne(u).finally(() => this.#inflight.delete(key));
        conflicts += r.conflicts;
        if (r.ok) {
          written += r.wrote ? 1 : 0;
          if (r.wrote) {
            this.o.observer?.written(u.kind);
            this.o.observer?.timed?.(u.kind, startAt - batchAt, performance.now() - startAt);
          }
        } else {
          failed.push({ update: u, error: r.error });
          this.o.observer?.failed(u.kind, r.reason);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, this.o.concurrency ?? 8) }, worker));
    return { written, conflicts, failed, skippedNotLeader: false };
  }

  async #writeOne(
    first: StatusUpdate,
  ): Promise<
    | { ok: true; wrote: boolean; conflicts: number }
    | { ok: false; error: string; reason: FailureReason; conflicts: number }
  > {
    let u: StatusUpdate | undefined = first;
    let conflicts = 0;
    for (let attempt = 0; u; attempt++) {
      // Leadership can end mid-batch: a follower must not write.
      if (!this.o.isLeader())
        return { ok: false, error: "lost leadership", reason: "not_leader", conflicts };
      try {
        const stored = await this.o.api.writeStatus(u);
        const key = keyOf(u.kind, u.namespace, u.name);
        if (stored?.metadata?.resourceVersion) {
          this.#log.push(key);
          if (this.#log.length > MAX_LOG) {
            this.#logStart += this.#log.length - MAX_LOG / 2;
            this.#log.splice(0, this.#log.length - MAX_LOG / 2);
          }
          this.#written.set(key, {
            metadata: {
              name: stored.metadata.name,
              namespace: stored.metadata.namespace,
              resourceVersion: stored.metadata.resourceVersion,
            },
            status: stored.status,
          });
        }
        return { ok: true, wrote: true, conflicts };
      } catch (e) {
        const code = statusOf(e);
        if (code === 404) return { ok: true, wrote: false, conflicts }; // deleted meanwhile
        if (code === 409) this.o.observer?.conflict(u.kind);
        if (code !== 409 || attempt >= (this.o.maxConflictRetries ?? 3)) {
          const error = e instanceof Error ? e.message : String(e);
          return { ok: false, error, reason: reasonOf(e), conflicts };
        }
        conflicts++;
        const fresh = await this.o.api.read(u.kind, u.namespace, u.name).catch(() => undefined);
        if (!fresh) return { ok: true, wrote: false, conflicts };
        u = this.o.recompute(fresh, u);
      }
    }
    return { ok: true, wrote: false, conflicts };
  }
}
