/**
 * What the cluster benchmarks (hack/bench/cluster.ts) take and give: the scenarios, their
 * options and the shape of their results (hack/bench/index.ts writes them to the report).
 */
import { readFileSync } from "node:fs";
import type { SettleResult } from "./cluster-settle";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";

export const CLUSTER_SCENARIOS = [
  "admission",
  "settle",
  "propagation",
  "churn",
  "fanout",
  "apiRequests",
  "proxyMemory",
  "memory",
  "restart",
] as const;
export type ClusterScenario = (typeof CLUSTER_SCENARIOS)[number];

export interface ClusterOptions {
  readonly only: ReadonlySet<ClusterScenario>;
  /** Steady-state window per proxy count for apiRequests (seconds). */
  readonly apiWindowS: number;
  readonly fanout: readonly number[];
  readonly log: (line: string) => void;
  /** Profile the module: CPU profile and heap snapshots are written here. */
  readonly profileDir?: string;
  /** Called after every scenario with the results so far. */
  readonly onProgress?: (results: ClusterResults) => void;
  /**
   * The module's V8 flags (its process only, not `pepr dev`'s build): by default the deployed
   * module's (`deployedNodeFlags`); `--heap-limit=MiB` replaces the old-space limit.
   */
  readonly moduleFlags: readonly string[];
}

/**
 * The V8 flags the deployed module runs with: the `NODE_OPTIONS` of package.json's `pepr.env`,
 * which Pepr writes into the watcher and admission Deployments (and the Helm chart's values).
 */
export function deployedNodeFlags(packageJson: string): string[] {
  const pkg = JSON.parse(readFileSync(packageJson, "utf8")) as {
    pepr?: { env?: Record<string, string> };
  };
  return (pkg.pepr?.env?.NODE_OPTIONS ?? "").split(/\s+/).filter(Boolean);
}

/** The flags with the old-space limit replaced (`limitMiB` 0: none). */
export const withHeapLimit = (flags: readonly string[], limitMiB: number): string[] => [
  ...flags.filter(f => !f.startsWith("--max-old-space-size=")),
  ...(limitMiB > 0 ? [`--max-old-space-size=${limitMiB}`] : []),
];

/** The old-space limit the flags set (MiB; 0: none). */
export const heapLimitOf = (flags: readonly string[]): number =>
  Number(
    flags.find(f => f.startsWith("--max-old-space-size="))?.slice("--max-old-space-size=".length) ??
      0,
  );
/** One reading of the module's memory (MiB): its RSS and what the RSS is made of. */
/** The module ran out of heap on the way (heapWatch). */
export interface HeapExhausted {
  /** HTTPRoutes in its cache then. */
  readonly routesCached: number;
  readonly heapUsedMiB: number;
  /** V8's limit (old space and young generation). */
  readonly heapLimitMiB: number;
  /** Status writes refused because it had lost the lease meanwhile. */
  readonly notLeaderWrites: number;
}

export interface MemoryReading {
  readonly routes: number;
  readonly rssMiB: number;
  readonly heapLimitMiB?: number;
  /** The module's V8 flags (the deployed NODE_OPTIONS unless the run changed them). */
  readonly nodeFlags?: string;
  /** RssFile: mapped files, mostly the node binary's own code (shared, clean). */
  readonly fileMiB?: number;
  /** RssAnon: the V8 heap, malloc'd memory, buffers. */
  readonly anonMiB?: number;
  /** V8's heap as the module's own gauges give it (kengine_gateway_heap_bytes). */
  readonly heapUsedMiB?: number;
  readonly heapTotalMiB?: number;
  /** Set when the module ran out of heap before `routes` settled. */
  readonly heapExhausted?: HeapExhausted;
}

export interface PropagationResult {
  flavor: ProxyFlavor;
  existingRoutes: number;
  /** From the API server's answer to the create to the proxy's first 200 for the new host. */
  p50Ms: number;
  p99Ms: number;
  /** A local Caddy's own POST /load of the same config with the new route, this flavour. */
  proxyLoadMs: number;
  samples: number[];
  pollsPerSecond: number;
  proxyLoadSamples: number[];
  controllerCpuMs: number;
  /** Mean ms per build of each phase over the samples (kengine_gateway_build_phase_seconds). */
  buildPhaseMeanMs: Record<string, number>;
}

export interface ChurnResult {
  flavor: ProxyFlavor;
  existingRoutes: number;
  changes: number;
  /** Of the changes, updates of the route the "changed" client requests. */
  changedRouteUpdates: number;
  /** Sending the changes; then until the last update is served and the Gateway programmed. */
  churnS: number;
  convergenceS: number;
  /** A GET every ~20 ms on a new connection: not a 200 is a failure (status or connection error). */
  stable: { requests: number; failures: number };
  changed: { requests: number; failures: number };
  failureSamples: { atMs: number; status: number; error?: string }[];
  /** Configs main's proxy took meanwhile: whole /loads and route-table deltas. */
  proxyLoads: number;
  proxyDeltas: number;
  controllerCpuMs: number;
  proxyCpuMs?: number;
  buildPhaseMeanMs: Record<string, number>;
}

export interface ClusterResults {
  admission?: {
    rps: number;
    p50Ms: number;
    p99Ms: number;
    requests: number;
    achievedRps: number;
    errors: number;
    denied: number;
    wrongDecisions: number;
    /** CPU time (user + system) of the module's process per request over the timed window. */
    cpuMsPerRequest: number;
    /**
     * The module's own decision time (kengine_gateway_admission_decision_seconds: ownership
     * look-ups and rules, Pepr's request handling excluded), HTTPRoute, every request the module
     * served: the histogram bucket bounds (ms) that p50 and p99 fall in.
     */
    decisionP50AtMostMs?: number;
    decisionP99AtMostMs?: number;
    /**
     * Event-loop delay of the benchmark's own process over the window (p99, max): a request's
     * latency includes any time the sender itself was not running.
     */
    driverLoopDelayP99Ms: number;
    driverLoopDelayMaxMs: number;
  };
  settle?: SettleResult;
  /** Main's proxy on the Bundled flavour (route-table deltas), then on stock Caddy (/load). */
  propagation?: { bundled?: PropagationResult; caddy?: PropagationResult };
  churn?: { bundled?: ChurnResult; caddy?: ChurnResult };
  /** VmRSS of main's proxy (Caddy) with `routes` routes programmed by the controller. */
  proxyMemory?: { flavor: ProxyFlavor; routes: number; rssMiB: number; controllerRssMiB: number };
  fanout?: {
    proxies: number;
    ms: number;
    samples: number[];
    proxyCpuMs: number;
    controllerCpuMs: number;
    proxyPids: number;
  }[];
  fanoutNote?: string;
  apiRequests?: {
    proxies1: number;
    proxies20: number;
    windowS: number;
    routeChanges: number;
    byKind1: Record<string, number>;
    byKind20: Record<string, number>;
    allClients1: number;
    allClients20: number;
  };
  /** The module's RSS; heapLimitMiB: its --max-old-space-size (0: none). */
  memory?: MemoryReading[];
  /**
   * The controller killed (SIGKILL: no Lease release) and started again with every route in
   * place: from its first full snapshot ("caches filled", its own log line) to leading with
   * status current (every proxy of the Gateway known to run the current config, and a status
   * pass done) and how many proxies it reloaded (pushes; adopting needs none).
   */
  restart?: {
    routes: number;
    /** The new process's own kengine_gateway_first_snapshot_seconds (lists of every kind). */
    firstSnapshotS: number;
    /** From "snapshot synced" in its output to leader with status current. */
    afterCachesFilledS: number;
    /** From the kill to leader with status current (includes pepr dev's build). */
    totalS: number;
    /** Successful config pushes of the new process (kengine_gateway_proxy_pushes_total). */
    proxiesReloaded: number;
    proxyLoads: number;
    proxyDeltas: number;
  };
  /** When the cluster part began (it may have waited for the lock long after the run began). */
  clusterStartedAt?: string;
  /** Scenarios that failed in this run, with the reason. */
  errors?: Record<string, string>;
}
