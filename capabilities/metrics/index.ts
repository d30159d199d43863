/**
 * The controller's Prometheus metrics: one prom-client Registry for every metric of ours,
 * served by the module's own /metrics endpoint (Pepr's, on port 3000, in `pepr dev` and in the
 * watcher pod) after Pepr's metrics. prom-client is a dependency of Pepr, so `pepr build` keeps
 * it out of the bundle (Pepr's dependencies are external) and the module uses the copy Pepr's
 * image ships.
 *
 * Other parts add their metrics to `registry` (names start with `kengine_gateway_`).
 */
import { type IntervalHistogram, monitorEventLoopDelay } from "node:perf_hooks";
import { getHeapStatistics } from "node:v8";
import { Counter, Gauge, Histogram, Registry } from "prom-client";

export const METRIC_PREFIX = "kengine_gateway_";
export const registry = new Registry();

/** What serves /metrics: Pepr's MetricsCollector has this shape (`metricsCollector` in pepr). */
export interface MetricsSource {
  getMetrics: () => Promise<string>;
}

const served = new WeakSet<MetricsSource>();

/**
 * Makes one scrape of the module's /metrics show our registry after the collector's own output.
 * Pepr's HTTP handler calls `collector.getMetrics()` per request, so wrapping that property is
 * enough; calling this twice on the same collector changes nothing.
 */
export function serveThrough(collector: MetricsSource, ours: Registry = registry): void {
  if (served.has(collector)) return;
  served.add(collector);
  const theirs = collector.getMetrics.bind(collector);
  collector.getMetrics = async () => {
    const [a, b] = await Promise.all([theirs(), ours.metrics()]);
    return a && !a.endsWith("\n") ? `${a}\n${b}` : `${a}${b}`;
  };
}

/** Why a status write did not happen (the `reason` label of status_write_failures_total). */
export type StatusFailureReason =
  | "conflict" // still conflicting after the retries
  | "not_leader" // leadership ended before the write
  | "invalid" // 4xx other than 409/404: the API server refused the content
  | "server" // 5xx, timeouts, connection errors
  | "other";

/** Counters of the status writer; object kinds are the Gateway API kinds. */
export interface StatusMetrics {
  written(kind: string): void;
  unchanged(kind: string, count: number): void;
  conflict(kind: string): void;
  failed(kind: string, reason: StatusFailureReason): void;
  /** Status writes delayed or merged by the writer's rate limit. */
  coalesced(kind: string, count: number): void;
  /** One accepted write: its wait in the writer's batch and its PATCH round trip (ms). */
  timed(kind: string, waitMs: number, writeMs: number): void;
}

const statusWrites = new Counter({
  name: `${METRIC_PREFIX}status_writes_total`,
  help: "Status writes (PATCH of /status) that the API server accepted, by object kind.",
  labelNames: ["kind"],
  registers: [registry],
});
const statusUnchanged = new Counter({
  name: `${METRIC_PREFIX}status_noops_total`,
  help: "Objects whose computed status equalled the stored one, so nothing was written, by kind.",
  labelNames: ["kind"],
  registers: [registry],
});
const statusConflicts = new Counter({
  name: `${METRIC_PREFIX}status_conflicts_total`,
  help: "Status writes refused with 409 Conflict (then re-read and retried), by kind.",
  labelNames: ["kind"],
  registers: [registry],
});
const statusFailures = new Counter({
  name: `${METRIC_PREFIX}status_write_failures_total`,
  help: "Status writes given up, by kind and reason (conflict, not_leader, invalid, server, other).",
  labelNames: ["kind", "reason"],
  registers: [registry],
});
const statusCoalesced = new Counter({
  name: `${METRIC_PREFIX}status_coalesced_total`,
  help: "Status updates superseded by a newer one for the same object before being written, by kind.",
  labelNames: ["kind"],
  registers: [registry],
});

const STATUS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const statusWaitSeconds = new Histogram({
  name: `${METRIC_PREFIX}status_write_wait_seconds`,
  help: "Time a written status update waited in its batch for one of the status writer's slots, by kind.",
  labelNames: ["kind"],
  buckets: STATUS_BUCKETS,
  registers: [registry],
});
const statusWriteSeconds = new Histogram({
  name: `${METRIC_PREFIX}status_write_seconds`,
  help: "Round trip of an accepted status write (PATCH of /status, conflict retries included), by kind.",
  labelNames: ["kind"],
  buckets: STATUS_BUCKETS,
  registers: [registry],
});

export const statusMetrics: StatusMetrics = {
  written: kind => statusWrites.inc({ kind }),
  unchanged: (kind, count) => count > 0 && statusUnchanged.inc({ kind }, count),
  conflict: kind => statusConflicts.inc({ kind }),
  failed: (kind, reason) => statusFailures.inc({ kind, reason }),
  coalesced: (kind, count) => count > 0 && statusCoalesced.inc({ kind }, count),
  timed: (kind, waitMs, writeMs) => {
    statusWaitSeconds.observe({ kind }, waitMs / 1000);
    statusWriteSeconds.observe({ kind }, writeMs / 1000);
  },
};

const isLeader = new Gauge({
  name: `${METRIC_PREFIX}is_leader`,
  help: "1 while this replica holds the leader Lease (writes status, pushes config), else 0.",
  labelNames: ["lease", "identity"],
  registers: [registry],
});
const leaderTransitions = new Counter({
  name: `${METRIC_PREFIX}leader_transitions_total`,
  help: "Times this replica started or stopped leading.",
  labelNames: ["lease", "identity", "to"],
  registers: [registry],
});

const leaseAttemptSeconds = new Histogram({
  name: `${METRIC_PREFIX}lease_attempt_seconds`,
  help: "Each try to acquire or renew the leader Lease, from its read to the answer to its write, by outcome (acquired, renewed, followed, failed).",
  labelNames: ["lease", "identity", "outcome"],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});
const leaseRenewIntervalSeconds = new Histogram({
  name: `${METRIC_PREFIX}lease_renew_interval_seconds`,
  help: "Seconds between the leader's successive Lease renewals: retryPeriod (2 s) plus the round trip; at renewDeadline (10 s) the replica stops leading.",
  labelNames: ["lease", "identity"],
  buckets: [1, 2, 2.5, 3, 4, 5, 6, 8, 10, 15, 30],
  registers: [registry],
});

/** What the elector reports of one try (capabilities/election `LeaseAttempt`). */
export interface LeaseAttemptSample {
  readonly outcome: string;
  readonly ms: number;
  readonly sinceLastRenewMs?: number;
}

/** Election state of one replica (the Lease's name and this replica's identity). */
export function electionMetrics(lease: string, identity: string) {
  isLeader.set({ lease, identity }, 0);
  return {
    leading(leading: boolean): void {
      isLeader.set({ lease, identity }, leading ? 1 : 0);
      leaderTransitions.inc({ lease, identity, to: leading ? "leader" : "follower" });
    },
    attempt(a: LeaseAttemptSample): void {
      leaseAttemptSeconds.observe({ lease, identity, outcome: a.outcome }, a.ms / 1000);
      if (a.sinceLastRenewMs !== undefined)
        leaseRenewIntervalSeconds.observe({ lease, identity }, a.sinceLastRenewMs / 1000);
    },
  };
}

/**
 * When the admin CA that signs now expires (Unix time): the controller's client certificates
 * and the proxies' serving certificates are issued from it, so it must rotate well before.
 */
const adminCaExpiry = new Gauge({
  name: `${METRIC_PREFIX}admin_ca_expiry_timestamp_seconds`,
  help: "When the admin CA that signs the admin channel's certificates now expires (Unix time).",
  registers: [registry],
});

export const pkiMetrics = {
  caExpiry(notAfter: Date): void {
    adminCaExpiry.set(Math.floor(notAfter.getTime() / 1000));
  },
};

/** The controller's start-up: 0 listing (or retrying), 1 synced and building, -1 failed for good. */
export type StartupState = "starting" | "synced" | "failed";
const startupState = new Gauge({
  name: `${METRIC_PREFIX}controller_synced`,
  help: "1 once every kind is listed and the controller builds, 0 while it lists or retries, -1 when start-up failed for good (the process exits).",
  registers: [registry],
});
const startupRetries = new Counter({
  name: `${METRIC_PREFIX}startup_retries_total`,
  help: "Start-up requests (initial lists, admin CA) retried after a retryable failure.",
  registers: [registry],
});
const kindServed = new Gauge({
  name: `${METRIC_PREFIX}api_kind_served`,
  help: "1 when the API server serves the kind (its CRD is installed), 0 when it does not: the kind counts as empty.",
  labelNames: ["kind"],
  registers: [registry],
});

const cachedObjects = new Gauge({
  name: `${METRIC_PREFIX}cache_objects`,
  help: "Objects of each watched kind held in the controller's snapshot (its only cache of watched objects).",
  labelNames: ["kind"],
  registers: [registry],
});
const ingestedObjects = new Counter({
  name: `${METRIC_PREFIX}objects_ingested_total`,
  help: "Objects ingested into the snapshot by source: list (start-up and relists, one batch per kind) or watch (one event each).",
  labelNames: ["kind", "source"],
  registers: [registry],
});
const watchConnects = new Counter({
  name: `${METRIC_PREFIX}watch_requests_total`,
  help: "Watch requests opened per kind (one open watch per kind; resumed after the server ends it).",
  labelNames: ["kind"],
  registers: [registry],
});
const watchRestarts = new Counter({
  name: `${METRIC_PREFIX}watch_restarts_total`,
  help: "Watch requests that ended and were opened again, per kind and cause: closed (the server ended it at its timeout), silent (no line for the silence bound: restarted), gone (410: listed again), error (failed: retried after a back-off).",
  labelNames: ["kind", "cause"],
  registers: [registry],
});
const dataReads = new Counter({
  name: `${METRIC_PREFIX}referenced_reads_total`,
  help: "Whole-object reads (GET) of referenced Secrets and ConfigMaps (the rest are watched as metadata only), per kind and outcome: read, missing (deleted meanwhile), failed (retried).",
  labelNames: ["kind", "outcome"],
  registers: [registry],
});
let dataCounts: () => readonly { kind: string; kept: number; metadataOnly: number }[] = () => [];
new Gauge({
  name: `${METRIC_PREFIX}data_objects`,
  help: "Secrets and ConfigMaps in the snapshot, per kind: held with their data (referenced by an object of ours) or as metadata only.",
  labelNames: ["kind", "data"],
  registers: [registry],
  collect() {
    this.reset();
    for (const c of dataCounts()) {
      this.set({ kind: c.kind, data: "kept" }, c.kept);
      this.set({ kind: c.kind, data: "metadata-only" }, c.metadataOnly);
    }
  },
});
let rememberedCount: () => number = () => 0;
new Gauge({
  name: `${METRIC_PREFIX}ingest_remembered_objects`,
  help: "Objects whose newest resourceVersion the ingest layer remembers: the objects that exist, never deleted ones.",
  registers: [registry],
  collect() {
    this.set(rememberedCount());
  },
});
const firstSnapshotSeconds = new Gauge({
  name: `${METRIC_PREFIX}first_snapshot_seconds`,
  help: "Seconds from the controller's start to its first full snapshot (every kind listed).",
  registers: [registry],
});

/** The snapshot's ingest: cache sizes, objects ingested, watch requests, time to the first full snapshot. */
export const ingestMetrics = {
  cached(kind: string, objects: number): void {
    cachedObjects.set({ kind }, objects);
  },
  ingested(kind: string, source: "list" | "watch", objects = 1): void {
    ingestedObjects.inc({ kind, source }, objects);
  },
  watchRequest(kind: string): void {
    watchConnects.inc({ kind });
  },
  watchRestart(kind: string, cause: string): void {
    watchRestarts.inc({ kind, cause });
  },
  dataRead(kind: string, outcome: string): void {
    dataReads.inc({ kind, outcome });
  },
  /** What the data_objects gauge reads at scrape time (the last reconciler to register). */
  dataObjects(counts: typeof dataCounts): void {
    dataCounts = counts;
  },
  /** What the ingest_remembered_objects gauge reads at scrape time. */
  remembered(count: () => number): void {
    rememberedCount = count;
  },
  firstSnapshot(seconds: number): void {
    firstSnapshotSeconds.set(seconds);
  },
};

export const startupMetrics = {
  state(s: StartupState): void {
    startupState.set(s === "synced" ? 1 : s === "failed" ? -1 : 0);
  },
  retried(): void {
    startupRetries.inc();
  },
  served(kind: string, served: boolean): void {
    kindServed.set({ kind }, served ? 1 : 0);
  },
};

/**
 * The module's JavaScript heap at scrape time, as V8 reports it: `used` (live objects and
 * garbage not yet collected), `total` (what V8 holds from the system) and `limit`
 * (`--max-old-space-size`, or V8's default from the machine's memory). A `used` near `limit`
 * is the heap exhaustion that ends the process (docs/bench.md, memory).
 */
new Gauge({
  name: `${METRIC_PREFIX}heap_bytes`,
  help: "The module's JavaScript heap at scrape time, by kind: used, total (held by V8), limit.",
  labelNames: ["kind"],
  registers: [registry],
  collect() {
    const h = getHeapStatistics();
    this.set({ kind: "used" }, h.used_heap_size);
    this.set({ kind: "total" }, h.total_heap_size);
    this.set({ kind: "limit" }, h.heap_size_limit);
  },
});

/**
 * The module's memory outside the JavaScript heap, at scrape time (`process.memoryUsage()`):
 * `rss` (what the process holds from the system, heap included), `external` (memory of
 * C++ objects bound to JavaScript ones: Buffers, TLS, zlib) and `array_buffers` (of it,
 * Buffers and ArrayBuffers). RSS far above heap total plus external is native memory the
 * allocator keeps (docs/bench.md, memory).
 */
new Gauge({
  name: `${METRIC_PREFIX}process_memory_bytes`,
  help: "The module's process memory at scrape time, by kind: rss, external (outside the JavaScript heap), array_buffers.",
  labelNames: ["kind"],
  registers: [registry],
  collect() {
    const m = process.memoryUsage();
    this.set({ kind: "rss" }, m.rss);
    this.set({ kind: "external" }, m.external);
    this.set({ kind: "array_buffers" }, m.arrayBuffers);
  },
});

/**
 * How late the module's event loop ran, between two scrapes: `p50`, `p99` and `max` of the
 * delays Node measured (perf_hooks, 20 ms resolution). Builds, rendering and JSON work run on
 * this loop, so a long delay here is the controller itself being busy, not the API server being
 * slow: it tells the two apart when Lease renewals come late (`lease renewed late`). Measuring
 * starts at the first scrape (that one shows 0), so only a process that serves /metrics runs it.
 */
let loopDelay: IntervalHistogram | undefined;
new Gauge({
  name: `${METRIC_PREFIX}event_loop_delay_seconds`,
  help: "How late the module's event loop ran since the previous scrape: p50, p99 and max of Node's measured delays.",
  labelNames: ["quantile"],
  registers: [registry],
  collect() {
    const h = loopDelay;
    if (!h) {
      loopDelay = monitorEventLoopDelay({ resolution: 20 });
      loopDelay.enable();
    }
    const seconds = (ns: number | undefined) => (h && h.count > 0 && ns ? ns / 1e9 : 0);
    this.set({ quantile: "p50" }, seconds(h?.percentile(50)));
    this.set({ quantile: "p99" }, seconds(h?.percentile(99)));
    this.set({ quantile: "max" }, seconds(h?.max));
    h?.reset();
  },
});
