/**
 * The end of the restart scenario of the cluster benchmarks (hack/bench/cluster.ts): after the
 * module was killed and started again, waits until it leads with status current and reads what
 * its restart cost from its own metrics.
 */
import { moduleMetrics } from "./cluster-metrics";
import { ClusterResults } from "./cluster-types";
import { now, sleep } from "./stats";

/** The restart result for `routes` routes; tKilled, tSynced: when the module was killed and when its caches filled. */
export async function restartResult(
  routes: number,
  tKilled: number,
  tSynced: number,
): Promise<NonNullable<ClusterResults["restart"]>> {
  let tCurrent = 0;
  let metric: Awaited<ReturnType<typeof moduleMetrics>> | undefined;
  for (const deadline = now() + 600_000; now() < deadline; await sleep(20)) {
    metric = await moduleMetrics();
    const leading = metric("kengine_gateway_is_leader") >= 1;
    const proxies = metric("kengine_gateway_proxies");
    const programmed = metric("kengine_gateway_proxies", 'state="Programmed"');
    const statusPass =
      metric("kengine_gateway_status_writes_total") + metric("kengine_gateway_status_noops_total") >
      0;
    if (leading && proxies > 0 && programmed === proxies && statusPass) {
      tCurrent = now();
      break;
    }
  }
  if (!tCurrent || !metric)
    throw new Error("the restarted controller never led with status current");
  const firstSnapshotS = metric("kengine_gateway_first_snapshot_seconds");
  return {
    routes,
    firstSnapshotS: Math.round(firstSnapshotS * 100) / 100,
    afterCachesFilledS: Math.round((tCurrent - tSynced) / 10) / 100,
    totalS: Math.round((tCurrent - tKilled) / 10) / 100,
    proxiesReloaded: metric("kengine_gateway_proxy_pushes_total", 'result="success"'),
    // of those pushes: whole configs (/load) and route-table deltas
    proxyLoads: metric("kengine_gateway_proxy_pushes_by_kind_total", 'kind="load"'),
    proxyDeltas: metric("kengine_gateway_proxy_pushes_by_kind_total", 'kind="delta"'),
  };
}
