/**
 * The status writer: applies StatusUpdates only while this replica leads, each as a conditional
 * write; on a conflict it re-reads the object, recomputes and tries again (a few times). It is
 * idempotent: the caller may hand it the same results again (e.g. on becoming leader) and only
 * what differs is written.
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

export interface StatusWriterOptions {
  readonly api: StatusApi;
  readonly isLeader: () => boolean;
  /** Recomputes one object's update from a fresh read (undefined: nothing to write any more). */
  readonly recompute: (fresh: StoredObject, stale: StatusUpdate) => StatusUpdate | undefined;
  readonly maxConflictRetries?: number;
  readonly concurrency?: number;
  /** Sees every outcome (metrics/ counts them). */
  readonly observer?: StatusObserver;
}

/** Why a write was given up. */
export type FailureReason = "conflict" | "not_leader" | "invalid" | "server" | "other";

export interface StatusObserver {
  written(kind: StatusKind): void;
  conflict(kind: StatusKind): void;
  failed(kind: StatusKind, reason: FailureReason): void;
}

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
  constructor(private readonly o: StatusWriterOptions) {}

  async write(updates: readonly StatusUpdate[]): Promise<WriteReport> {
    if (!this.o.isLeader()) return { written: 0, conflicts: 0, failed: [], skippedNotLeader: true };
    let written = 0;
    let conflicts = 0;
    const failed: { update: StatusUpdate; error: string }[] = [];
    const queue = [...updates];
    const worker = async () => {
      for (let u = queue.shift(); u; u = queue.shift()) {
        const r = await this.#writeOne(u);
        conflicts += r.conflicts;
        if (r.ok) {
          written += r.wrote ? 1 : 0;
          if (r.wrote) this.o.observer?.written(u.kind);
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
        await this.o.api.writeStatus(u);
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
