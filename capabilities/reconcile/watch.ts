/**
 * One watch per kind, started from the resourceVersion of that kind's list, feeding the snapshot
 * (the only cache of watched objects). The API server's own watch protocol, nothing cached here:
 * ADDED/MODIFIED/DELETED go to `ingest`, BOOKMARKs only move the resourceVersion, a watch the
 * server ends normally (its `timeoutSeconds`) resumes from the last resourceVersion, and a 410
 * Gone ("too old resource version", as an ERROR event or as the response) lists the kind again
 * and replaces it in the snapshot in one batch (`relistEvents`: objects missing from the new
 * list are deleted). Failures back off (capped exponential, jitter) and retry for ever.
 *
 * A watch silent for `silenceMs` (no line at all: neither an event nor a bookmark) is taken for
 * a dead connection (half-open: the peer or a middlebox stopped forwarding without closing) and
 * restarted from the last resourceVersion. A healthy watch is never that silent: each request
 * asks the server to end it normally before the bound (`watchTimeoutSeconds`), so a quiet kind
 * is resumed, not restarted.
 *
 * Pure orchestration over an injected stream, relist, sleep, timer and random source.
 */
import type { WatchEvent } from "../kube/client";
import { parseDuration } from "../election/env";
import { backoffDelay, BackoffPolicy } from "../proxies/backoff";
import { keyOf } from "../snapshot";
import type { Kind, KubeObject, SnapshotEvent } from "../snapshot";

/** One line of a watch response. */
export type RawWatchEvent = WatchEvent;

/**
 * Opens `path` as a watch and calls `onEvent` for every line; resolves when the server ends the
 * response, rejects on a failed request (an error with `status` for HTTP errors) or when
 * `signal` aborts.
 */
export type WatchStream = (
  path: string,
  onEvent: (event: RawWatchEvent) => void,
  signal: AbortSignal,
) => Promise<void>;

/** How long the server keeps one watch open before we resume it (seconds). */
export const WATCH_TIMEOUT_SECONDS = 300;

/** Default bound on a watch's silence before it is restarted (KENGINE_WATCH_SILENCE). */
export const DEFAULT_WATCH_SILENCE_MS = 60_000;

/**
 * The `timeoutSeconds` a watch asks for under a silence bound: four fifths of it (at most
 * WATCH_TIMEOUT_SECONDS), so the server ends a quiet healthy watch before the bound and it is
 * resumed rather than counted silent.
 */
export const watchTimeoutSeconds = (silenceMs: number): number =>
  Math.max(1, Math.min(WATCH_TIMEOUT_SECONDS, Math.floor((silenceMs * 0.8) / 1000)));

/** The environment variable that sets the silence bound (a duration: "30s", "45", "1m"). */
export const WATCH_SILENCE_ENV = "KENGINE_WATCH_SILENCE";
/** The bound may be set between these (a shorter one restarts healthy watches for nothing). */
export const MIN_WATCH_SILENCE_MS = 5_000;
export const MAX_WATCH_SILENCE_MS = 60_000;

/** The silence bound from the environment (default when unset), or why the value is refused. */
export function watchSilenceFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): { readonly ok: true; readonly value: number } | { readonly ok: false; readonly error: string } {
  const raw = env[WATCH_SILENCE_ENV];
  if (raw === undefined || raw === "") return { ok: true, value: DEFAULT_WATCH_SILENCE_MS };
  const ms = parseDuration(raw);
  if (ms === undefined || ms < MIN_WATCH_SILENCE_MS || ms > MAX_WATCH_SILENCE_MS)
    return {
      ok: false,
      error: `${WATCH_SILENCE_ENV}=${JSON.stringify(raw)}: not a duration between ${MIN_WATCH_SILENCE_MS / 1000}s and ${MAX_WATCH_SILENCE_MS / 1000}s (e.g. "30s")`,
    };
  return { ok: true, value: ms };
}

/** Why a watch request ended and another one is opened. */
export type RestartCause =
  /** The server ended it normally (its timeoutSeconds): resumed from the last resourceVersion. */
  | "closed"
  /** No line for the silence bound: aborted and resumed from the last resourceVersion. */
  | "silent"
  /** 410 Gone: the resourceVersion is too old; the kind is listed again. */
  | "gone"
  /** The request failed or the server sent an ERROR: retried after a back-off. */
  | "error";

/** A one-shot timer (injected: tests run the silence bound without real time). */
export interface WatchTimer {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const realTimer: WatchTimer = {
  set: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clear: h => clearTimeout(h as ReturnType<typeof setTimeout>),
};

/** The watch request of a kind's list path from `resourceVersion` (bookmarks on). */
export function watchPath(
  listPath: string,
  resourceVersion: string,
  timeoutSeconds = WATCH_TIMEOUT_SECONDS,
): string {
  const q = new URLSearchParams({
    watch: "1",
    allowWatchBookmarks: "true",
    resourceVersion,
    timeoutSeconds: String(timeoutSeconds),
  });
  return `${listPath}${listPath.includes("?") ? "&" : "?"}${q.toString()}`;
}

/**
 * The events that make the snapshot's `kind` equal to a fresh list: an upsert per listed object
 * (unchanged ones cost nothing in `applyAll`) and a delete per object the list no longer has.
 */
export function relistEvents(
  kind: Kind,
  current: ReadonlyMap<string, KubeObject>,
  items: readonly KubeObject[],
): SnapshotEvent[] {
  const listed = new Set<string>();
  const events: SnapshotEvent[] = [];
  for (const object of items) {
    listed.add(keyOf(object));
    events.push({ type: "upsert", kind, object });
  }
  for (const [key, object] of current)
    if (!listed.has(key)) events.push({ type: "delete", kind, object });
  return events;
}

/** What one watch line asks for. */
export type WatchStep =
  | { readonly op: "ingest"; readonly type: "upsert" | "delete"; readonly resourceVersion?: string }
  | { readonly op: "bookmark"; readonly resourceVersion?: string }
  | { readonly op: "relist" }
  | { readonly op: "error"; readonly message: string };

export function watchStep(event: RawWatchEvent): WatchStep {
  const rv = event.object?.metadata?.resourceVersion;
  switch (event.type) {
    case "ADDED":
    case "MODIFIED":
      return { op: "ingest", type: "upsert", resourceVersion: rv };
    case "DELETED":
      return { op: "ingest", type: "delete", resourceVersion: rv };
    case "BOOKMARK":
      return { op: "bookmark", resourceVersion: rv };
    case "ERROR":
      return event.object?.code === 410
        ? { op: "relist" }
        : { op: "error", message: event.object?.message ?? `watch error ${event.object?.code}` };
    default:
      return { op: "error", message: `unknown watch event type ${JSON.stringify(event.type)}` };
  }
}

export interface KindWatchDeps {
  readonly stream: WatchStream;
  /** Lists the kind again into the snapshot (one batch); its resourceVersion, undefined on failure. */
  readonly relist: () => Promise<string | undefined>;
  readonly ingest: (type: "upsert" | "delete", object: KubeObject) => void;
  readonly sleep: (ms: number) => Promise<void>;
  readonly random: () => number;
  readonly backoff: BackoffPolicy;
  /** A failed watch or relist (logged by the caller). */
  readonly onError?: (error: unknown, attempt: number, retryInMs: number) => void;
  /** Called each time a watch request is opened (metrics, tests). */
  readonly onConnect?: (resourceVersion: string) => void;
  /** Pause after a watch the server ended without a single line (never a busy loop). */
  readonly quietMs?: number;
  /** Silence bound (default DEFAULT_WATCH_SILENCE_MS); the request's timeoutSeconds follows it. */
  readonly silenceMs?: number;
  /** The silence bound's timer (default: real, unref'd). */
  readonly timer?: WatchTimer;
  /** Called each time a watch request ended and the kind is watched (or listed) again. */
  readonly onRestart?: (cause: RestartCause) => void;
}

const statusOf = (e: unknown): number | undefined => {
  const s = (e as { status?: unknown } | null)?.status;
  return typeof s === "number" ? s : undefined;
};

/** The watch of one kind; `stop()` ends it (the open request is aborted). */
export class KindWatch {
  readonly #abort = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(
    readonly kind: Kind,
    private readonly listPath: string,
    private readonly deps: KindWatchDeps,
  ) {}

  /** Starts watching from `resourceVersion` (the kind's list); undefined lists first. */
  start(resourceVersion: string | undefined): void {
    this.#loop ??= this.#run(resourceVersion);
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#loop;
  }

  /** `deps.sleep`, cut short by stop() (a back-off can be 30 s: stopping never waits for it). */
  #sleep(ms: number): Promise<void> {
    const signal = this.#abort.signal;
    if (signal.aborted) return Promise.resolve();
    let onAbort: () => void = () => {};
    const aborted = new Promise<void>(resolve => (onAbort = resolve));
    signal.addEventListener("abort", onAbort, { once: true });
    return Promise.race([this.deps.sleep(ms), aborted]).finally(() =>
      signal.removeEventListener("abort", onAbort),
    );
  }

  get stopped(): boolean {
    return this.#abort.signal.aborted;
  }

  async #run(from: string | undefined): Promise<void> {
    const d = this.deps;
    let rv = from;
    let failures = 0;
    const fail = async (error: unknown) => {
      failures++;
      const ms = backoffDelay(d.backoff, failures, d.random);
      d.onError?.(error, failures, ms);
      await this.#sleep(ms);
    };
    while (!this.stopped) {
      if (rv === undefined) {
        rv = await d.relist();
        if (this.stopped) return;
        if (rv === undefined) {
          await fail(new Error(`relist of ${this.kind} failed`));
          continue;
        }
      }
      let lines = 0;
      let gone = false;
      let silent = false;
      let error: string | undefined;
      // One request's abort: the watch stopping, or the silence bound.
      const request = new AbortController();
      const stop = () => request.abort();
      this.#abort.signal.addEventListener("abort", stop, { once: true });
      const timer = d.timer ?? realTimer;
      const silenceMs = d.silenceMs ?? DEFAULT_WATCH_SILENCE_MS;
      let silence: unknown;
      const arm = () => {
        if (silence !== undefined) timer.clear(silence);
        silence = timer.set(() => {
          silent = true;
          request.abort();
        }, silenceMs);
      };
      arm();
      try {
        d.onConnect?.(rv);
        await d.stream(
          watchPath(this.listPath, rv, watchTimeoutSeconds(silenceMs)),
          event => {
            if (gone || error !== undefined || silent) return;
            lines++;
            arm();
            const step = watchStep(event);
            switch (step.op) {
              case "ingest":
                d.ingest(step.type, event.object as unknown as KubeObject);
                if (step.resourceVersion) rv = step.resourceVersion;
                return;
              case "bookmark":
                if (step.resourceVersion) rv = step.resourceVersion;
                return;
              case "relist":
                gone = true;
                return;
              case "error":
                error = step.message;
                return;
            }
          },
          request.signal,
        );
      } catch (e) {
        if (this.stopped) return;
        if (silent) {
          // Resumed from the last resourceVersion at once when the request had delivered
          // lines; a request silent from its start backs off like a failure.
        } else if (statusOf(e) === 410) rv = undefined;
        else {
          d.onRestart?.("error");
          await fail(e);
          continue;
        }
      } finally {
        timer.clear(silence);
        this.#abort.signal.removeEventListener("abort", stop);
      }
      if (this.stopped) return;
      if (gone) rv = undefined;
      if (silent) {
        d.onRestart?.("silent");
        if (lines > 0) failures = 0;
        else await fail(new Error(`watch of ${this.kind} silent for ${silenceMs} ms`));
        continue;
      }
      d.onRestart?.(error !== undefined ? "error" : rv === undefined ? "gone" : "closed");
      if (error !== undefined) await fail(new Error(error));
      else if (gone || lines > 0) failures = 0;
      else if (rv !== undefined) await this.#sleep(d.quietMs ?? 1000);
    }
  }
}
