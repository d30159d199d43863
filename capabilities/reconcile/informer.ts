/**
 * The informer stage: lists and watches every kind (list.ts, watch.ts; one watch per kind) into
 * the snapshot, keeping the data of referenced Secrets and ConfigMaps only (referenced-data.ts),
 * and records what changed in the dirty set. Its output is what a build reads: the snapshot and
 * whether translation must run again (`take`). Relevant changes are announced through `notify`.
 */
import type { KubeClient } from "../kube/client";
import { ingestMetrics, startupMetrics } from "../metrics";
import {
  ChangeKind,
  KINDS,
  Kind,
  KubeObject,
  Snapshot,
  SnapshotEvent,
  apply,
  applyAll,
  asMetadataOnly,
  emptySnapshot,
  isSynced,
  metadataOnly,
  relevantChange,
} from "../snapshot";
import { LIST_PATHS, kindPath } from "../snapshot/kinds";
import { DirtySet } from "./dirty-set";
import { HeldEchoes } from "./echoes";
import { Ingest, ingressBackendChange } from "./ingest";
import { Listed, RetryDeps, RetryPolicy, StartError, listAll } from "./list";
import type { Logger } from "./logger";
import {
  DATA_KINDS,
  DataKind,
  ReferencedData,
  isDataKind,
  listAccept,
  watchAccept,
} from "./referenced-data";
import { DEFAULT_WATCH_SILENCE_MS, KindWatch, relistEvents } from "./watch";

export interface InformerDeps {
  readonly kube: Pick<KubeClient, "request" | "watch">;
  readonly log: Logger;
  /** Whether each kind is watched after its list (false: the caller feeds `ingest`). */
  readonly watch?: boolean;
  /** A watch silent this long is restarted (watch.ts). */
  readonly watchSilenceMs?: number;
  /** Retries of referenced-data reads back off like the start-up requests. */
  readonly retry: RetryPolicy;
  readonly sleep: (ms: number) => Promise<void>;
  /** The owner is stopping: lists and watches end. */
  readonly stopped: () => boolean;
  /** A change a build must see (batched by the owner); `config` when translation reads it. */
  readonly notify: (change?: ChangeKind) => void;
  /** A build should run now (a read settled, a kind became served). */
  readonly requestBuild: () => void;
  /** The clock of the build timings and where a change's arrival is recorded (build-timings.ts). */
  readonly timings: { now(): number; received(at: number, snapshotMs: number): void };
}

/** What a build takes from the informer. */
export interface InformerOutput {
  readonly snapshot: Snapshot;
  /** Whether anything translation reads changed since the last take. */
  readonly translate: boolean;
}

export class Informer {
  #snapshot: Snapshot = emptySnapshot();
  /** Status-only updates not yet in #snapshot (echoes.ts). */
  readonly #echoes = new HeldEchoes();
  /** Drops late events, strips objects, tells our objects apart (ingest.ts). */
  readonly #ingest = new Ingest();
  /** What changed since the last build, and whether it must translate again (dirty-set.ts). */
  readonly #dirty = new DirtySet();
  /** Secrets and ConfigMaps: data only of the referenced ones, read when wanted (referenced-data.ts). */
  readonly #data: ReferencedData;
  /** Secrets the last plans read besides the snapshot's references (bring-your-own credentials). */
  #planSecrets: ReadonlySet<string> = new Set();
  /** Kinds the API server does not serve (start-up lists answered 404). */
  readonly #missing = new Set<Kind>();
  /** The one watch of each kind, started from that kind's list (watch.ts). */
  readonly #watches = new Map<Kind, KindWatch>();

  constructor(private readonly d: InformerDeps) {
    this.#data = new ReferencedData({
      get: (kind, namespace, name) => d.kube.request("GET", kindPath(kind, namespace, name)),
      deliver: (kind, object) => this.ingest(kind, "upsert", object),
      snapshot: () => this.current(),
      onSettled: () => d.requestBuild(),
      sleep: d.sleep,
      random: Math.random,
      backoff: d.retry.backoff,
      onRead: (kind, key, outcome, error) => {
        ingestMetrics.dataRead(kind, outcome);
        d.log[outcome === "failed" ? "warn" : "debug"]("referenced object read", {
          kind,
          name: key,
          outcome,
          ...(error !== undefined && {
            error: error instanceof Error ? error.message : String(error),
          }),
        });
      },
    });
    ingestMetrics.dataObjects(() => this.#dataCounts());
    ingestMetrics.remembered(() => this.#ingest.remembered);
  }

  /** The snapshot with every event ingested so far. */
  current(): Snapshot {
    return (this.#snapshot = this.#echoes.flush(this.#snapshot));
  }

  /**
   * The build's input, or undefined while the snapshot is not whole yet or referenced Secrets
   * and ConfigMaps are being read (the build runs when they are, or after the wait bound, so a
   * new reference is translated with its data). Taking clears the dirty set.
   */
  take(): InformerOutput | undefined {
    const snapshot = this.current();
    if (!isSynced(snapshot) || this.#data.holdsBuilds()) return undefined;
    return { snapshot, translate: this.#dirty.take().translate };
  }

  /** Whether the snapshot is whole (every kind listed). */
  get synced(): boolean {
    return isSynced(this.current());
  }

  /** Everything changed: the next build translates again (a refused object, a kind relisted). */
  markAll(): void {
    this.#dirty.markAll();
  }

  /** The Secrets the latest plans read: their data is kept (and read if missing). */
  planned(secrets: ReadonlySet<string>): void {
    this.#planSecrets = secrets;
    this.#syncData();
  }

  /** Kinds the API server does not serve (their CRD is not installed): empty and synced. */
  get missingKinds(): readonly Kind[] {
    return [...this.#missing];
  }

  /** Sizes of what ingest remembers besides the snapshot (tests: churn leaves nothing behind). */
  get state(): { readonly remembered: number; readonly reading: number } {
    return { remembered: this.#ingest.remembered, reading: this.#data.reading };
  }

  /** Referenced objects being read. */
  get reading(): number {
    return this.#data.reading;
  }

  /** Resolves when no referenced object is being read. */
  idle(): Promise<void> {
    return this.#data.idle();
  }

  /**
   * A Watch event (or an initial-list item). Stale events (older resourceVersion) are dropped; a
   * Secret or ConfigMap keeps its data only when referenced (referenced-data.ts).
   */
  ingest(kind: Kind, type: "upsert" | "delete", object: KubeObject): void {
    const i = this.#ingest.event(kind, type, object, this.#planSecrets);
    if (!i) return;
    const event = this.#data.admitEvent(
      i.event,
      isDataKind(kind) ? this.current() : this.#snapshot,
    );
    if (!event) return;
    this.#apply(event, i.ours);
    this.#syncData();
  }

  /**
   * Lists every kind once (each list one batch into the snapshot, then that kind's watch from
   * the list's resourceVersion). Rejects with a StartError when a list fails for good; returns
   * early once stopped.
   */
  async start(retry: RetryPolicy, deps: RetryDeps): Promise<void> {
    for (const kind of KINDS) {
      const listed = await listAll<KubeObject>(
        path => this.d.kube.request("GET", path, undefined, undefined, listAccept(kind)),
        LIST_PATHS[kind],
        retry,
        deps,
      );
      if (this.d.stopped()) return;
      if (!listed.ok) throw StartError.of(`list ${kind}`, listed);
      this.#listed(kind, listed.value);
      this.#watchKind(
        kind,
        listed.value.found ? listed.value.resourceVersion : undefined,
        retry,
        deps,
      );
    }
  }

  /**
   * Lists again the kinds that were not served (at every resync): a CRD installed later is
   * picked up even if no watch delivers its objects. One try each; never throws.
   */
  async relistMissing(retry: RetryPolicy, deps: RetryDeps): Promise<void> {
    for (const kind of [...this.#missing]) {
      if (this.#watches.has(kind)) continue; // its watch lists it until it is served
      const listed = await listAll<KubeObject>(
        path => this.d.kube.request("GET", path),
        LIST_PATHS[kind],
        { ...retry, retryAttempts: 1, deniedAttempts: 1 },
        deps,
      );
      if (listed.ok && listed.value.found) {
        this.#listed(kind, listed.value);
        this.#dirty.markAll();
        this.d.requestBuild();
      }
    }
  }

  /** Stops the watches and the reads. */
  async stop(): Promise<void> {
    await Promise.all([...this.#watches.values()].map(w => w.stop()));
    this.#data.stop();
  }

  /**
   * After a change: reads the Secrets and ConfigMaps that became referenced, and puts those no
   * longer referenced back to their metadata (one batch; nothing translation reads changes).
   */
  #syncData(): void {
    const events = this.#data.sync(this.#snapshot, this.#planSecrets);
    if (events.length === 0) return;
    const current = this.current();
    for (const e of events) this.#dirty.observe(current, e);
    this.#snapshot = applyAll(current, events).snapshot;
    this.d.log.debug("data dropped: no longer referenced", { objects: events.length });
  }

  /** Secrets and ConfigMaps held with their data and as metadata only (metrics at scrape time). */
  #dataCounts(): { kind: DataKind; kept: number; metadataOnly: number }[] {
    const s = this.#snapshot;
    return DATA_KINDS.map(kind => {
      let meta = 0;
      for (const o of s.objects[kind].values()) if (metadataOnly(o)) meta++;
      return { kind, kept: s.objects[kind].size - meta, metadataOnly: meta };
    });
  }

  /**
   * Status-only updates stay relevant: a status someone else changed (e.g. an earlier leader's)
   * is rewritten; our own writes cost one more build that finds nothing to write.
   */
  #apply(event: SnapshotEvent, ours = false): void {
    const timings = this.d.timings;
    const at = timings.now();
    // A status-only update (our own status write coming back, mostly) is held and applied with
    // the others like it (echoes.ts), and built without haste.
    const replaced = this.#echoes.hold(this.#snapshot, event);
    if (replaced && event.type === "upsert") {
      this.#dirty.observe(this.#snapshot, event);
      if (relevantChange(this.#snapshot, event.kind, replaced, event.object) || ours) {
        timings.received(at, timings.now() - at);
        this.#logChange(event, ours);
        this.d.notify("status");
      }
      return;
    }
    const current = this.current();
    this.#dirty.observe(current, event);
    const r = apply(current, event);
    this.#snapshot = r.snapshot;
    if (event.type !== "synced")
      ingestMetrics.cached(event.kind, r.snapshot.objects[event.kind].size);
    const relevant = r.relevant || (isSynced(r.snapshot) && ingressBackendChange(current, event));
    if (relevant || (ours && isSynced(r.snapshot))) {
      timings.received(at, timings.now() - at);
      this.#logChange(event, ours);
      this.d.notify("config");
    }
  }

  /** Which change started (or joined) the next build: with the build lines, a slow one explained. */
  #logChange(event: SnapshotEvent, ours: boolean): void {
    this.d.log.debug("change", {
      kind: event.kind,
      type: event.type,
      ...(event.type !== "synced" && {
        name: `${event.object.metadata.namespace ?? ""}/${event.object.metadata.name}`,
      }),
      ours,
    });
  }

  /**
   * A list of one kind into the snapshot as one batch (the kind's map copied once, not per
   * item): its objects replace the kind's (objects no longer listed are deleted); a kind not
   * served counts as empty.
   */
  #listed(kind: Kind, listed: Listed<KubeObject>): void {
    startupMetrics.served(kind, listed.found);
    if (!listed.found) {
      if (!this.#missing.has(kind))
        this.d.log.warn("kind not served by the API server (CRD not installed): counted as empty", {
          kind,
          path: LIST_PATHS[kind],
        });
      this.#missing.add(kind);
    } else if (this.#missing.delete(kind))
      this.d.log.info("kind now served by the API server: picked up", {
        kind,
        objects: listed.items.length,
      });
    let items = listed.found
      ? this.#ingest.listed(
          kind,
          isDataKind(kind) ? listed.items.map(asMetadataOnly) : listed.items,
        )
      : [];
    if (isDataKind(kind)) items = this.#data.listed(kind, items, this.current());
    const before = this.current();
    const r = applyAll(before, [
      ...relistEvents(kind, before.objects[kind] as ReadonlyMap<string, KubeObject>, items),
      { type: "synced", kind },
    ]);
    this.#snapshot = r.snapshot;
    ingestMetrics.ingested(kind, "list", items.length);
    ingestMetrics.cached(kind, r.snapshot.objects[kind].size);
    if (r.snapshot.objects[kind] !== before.objects[kind]) this.#dirty.markAll();
    if (r.relevant || (isSynced(before) && r.snapshot !== before)) this.d.notify();
    this.#syncData();
  }

  /**
   * The one watch of `kind`, from its list's resourceVersion (undefined: the kind is not served
   * yet; the watch lists it again, backing off, until it is). Events go through `ingest`; a
   * 410 Gone lists the kind again (one batch, #listed).
   */
  #watchKind(
    kind: Kind,
    resourceVersion: string | undefined,
    retry: RetryPolicy,
    deps: RetryDeps,
  ): void {
    const kube = this.d.kube;
    const watch = kube.watch?.bind(kube);
    if (!watch || this.d.watch === false || this.#watches.has(kind) || this.d.stopped()) return;
    const accept = watchAccept(kind);
    const w: KindWatch = new KindWatch(kind, LIST_PATHS[kind], {
      stream: (path, onEvent, signal) => watch(path, onEvent, signal, accept),
      relist: async (): Promise<string | undefined> => {
        const listed = await listAll<KubeObject>(
          path => kube.request("GET", path, undefined, undefined, listAccept(kind)),
          LIST_PATHS[kind],
          { ...retry, retryAttempts: 1, deniedAttempts: 1 },
          { ...deps, onRetry: undefined, stopped: (): boolean => this.d.stopped() || w.stopped },
        );
        if (!listed.ok || this.d.stopped()) return undefined;
        this.#listed(kind, listed.value);
        return listed.value.found ? listed.value.resourceVersion : undefined;
      },
      ingest: (type, object) => {
        ingestMetrics.ingested(kind, "watch");
        // metadata only, as asked (watchAccept): never a data kind's data from a watch
        this.ingest(kind, type, isDataKind(kind) ? asMetadataOnly(object) : object);
      },
      sleep: deps.sleep,
      random: deps.random,
      backoff: retry.backoff,
      silenceMs: this.d.watchSilenceMs,
      onConnect: () => ingestMetrics.watchRequest(kind),
      onRestart: cause => {
        ingestMetrics.watchRestart(kind, cause);
        if (cause === "silent")
          this.d.log.warn("watch silent past its bound: restarted", {
            kind,
            silenceMs: this.d.watchSilenceMs ?? DEFAULT_WATCH_SILENCE_MS,
          });
        else if (cause !== "closed") this.d.log.debug("watch restarted", { kind, cause });
      },
      onError: (error, attempt, retryInMs) =>
        this.d.log[this.#missing.has(kind) ? "debug" : "warn"]("watch failed, retrying", {
          kind,
          attempt,
          retryInMs,
          error: error instanceof Error ? error.message : String(error),
        }),
    });
    this.#watches.set(kind, w);
    w.start(resourceVersion);
  }
}

/** The retry deps of the start-up requests: each retry counted and logged. */
export const startupRetryDeps = (
  log: Pick<Logger, "warn">,
  sleep: (ms: number) => Promise<void>,
  stopped: () => boolean,
): RetryDeps => ({
  sleep,
  random: Math.random,
  stopped,
  onRetry: (what, error, attempt, delayMs) => {
    startupMetrics.retried();
    log.warn("start-up request failed, retrying", {
      request: what,
      attempt,
      retryInMs: delayMs,
      error: error instanceof Error ? error.message : String(error),
    });
  },
});
