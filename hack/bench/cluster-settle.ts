/**
 * Scenario "settle": 1,000 HTTPRoutes created on Gateway main (16 creates in flight, each through
 * the admission webhook), timed until every route is Accepted and the Gateway's listener counts
 * them. Five samples per run: after each one but the last, the routes are deleted and the
 * Gateway's count falls back to 0 before the next create begins.
 *
 * Each sample also reads, from the module's /metrics before and after, what the tail is made of:
 * route status writes (how many, their mean wait for one of the writer's slots, their mean PATCH
 * round trip), the Gateway's writes (rate-limited to one per 250 ms), and the time from the last
 * route Accepted to the Gateway's count (that interval's share).
 */
import { MAIN, NS } from "./cluster-setup";
import { createRoutes } from "./cluster-setup";
import { moduleMetrics } from "./cluster-metrics";
import { gatewayStatus, until, watchAccepted } from "./cluster-watch";
import { Kube } from "./kube";
import { median, now, round } from "./stats";

export const SETTLE_SAMPLES = 5;

export interface SettleSample {
  /** From the first create to the last create's answer. */
  readonly createMs: number;
  /** From the last create's answer to the last route Accepted (as the watch saw it). */
  readonly acceptedAfterLastCreateMs: number;
  /** From the last create's answer to the Gateway's listener counting every route. */
  readonly afterLastCreateMs: number;
  /** Route status writes during the sample, their mean wait for a slot and mean round trip. */
  readonly routeWrites: number;
  readonly routeWaitMeanMs: number;
  readonly routeWriteMeanMs: number;
  readonly gatewayWrites: number;
}

export interface SettleResult {
  readonly routes: number;
  /** Medians over the samples (the row's figures). */
  readonly ms: number;
  readonly createMs: number;
  readonly afterLastCreateMs: number;
  readonly maxAfterLastCreateMs: number;
  readonly samples: readonly SettleSample[];
}

interface Counters {
  routeWrites: number;
  routeWaitSum: number;
  routeWriteSum: number;
  gatewayWrites: number;
}

async function counters(): Promise<Counters> {
  const m = await moduleMetrics();
  const route = 'kind="HTTPRoute"';
  return {
    routeWrites: m("kengine_gateway_status_write_seconds_count", route),
    routeWaitSum: m("kengine_gateway_status_write_wait_seconds_sum", route),
    routeWriteSum: m("kengine_gateway_status_write_seconds_sum", route),
    gatewayWrites: m("kengine_gateway_status_writes_total", 'kind="Gateway"'),
  };
}

const attached = async (kube: Kube, n: number): Promise<true | undefined> =>
  (await gatewayStatus(kube, MAIN)).status?.listeners?.[0]?.attachedRoutes === n ? true : undefined;

/** One sample: create `routes`, wait until all are Accepted and counted. */
async function sample(
  kube: Kube,
  routes: readonly { metadata: { name: string } }[],
): Promise<SettleSample & { ms: number }> {
  const before = await counters();
  const settled = watchAccepted(kube, `bench-set=${MAIN}`, MAIN, routes.length, 600_000);
  const t0 = now();
  await createRoutes(kube, routes);
  const tCreated = now();
  const tAccepted = await settled;
  await until(`attachedRoutes ${routes.length}`, () => attached(kube, routes.length), 600_000, 20);
  const tDone = Math.max(tAccepted, now());
  const after = await counters();
  const writes = after.routeWrites - before.routeWrites;
  const mean = (sum: number) => (writes > 0 ? round((sum * 1000) / writes) : 0);
  return {
    ms: Math.round(tDone - t0),
    createMs: Math.round(tCreated - t0),
    acceptedAfterLastCreateMs: Math.round(tAccepted - tCreated),
    afterLastCreateMs: Math.round(tDone - tCreated),
    routeWrites: writes,
    routeWaitMeanMs: mean(after.routeWaitSum - before.routeWaitSum),
    routeWriteMeanMs: mean(after.routeWriteSum - before.routeWriteSum),
    gatewayWrites: after.gatewayWrites - before.gatewayWrites,
  };
}

/** `count` samples; main keeps the routes of the last one. */
export async function settleSamples(
  kube: Kube,
  routes: readonly { metadata: { name: string } }[],
  count: number,
  log: (l: string) => void,
): Promise<SettleResult> {
  const samples: (SettleSample & { ms: number })[] = [];
  for (let k = 0; k < count; k++) {
    const s = await sample(kube, routes);
    samples.push(s);
    log(`settle sample ${k + 1}/${count}: ${JSON.stringify(s)}`);
    if (k === count - 1) break;
    await Kube.each(routes, 16, r =>
      kube.delete({
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "HTTPRoute",
        metadata: { name: r.metadata.name, namespace: NS },
      } as never),
    );
    await until("attachedRoutes 0", () => attached(kube, 0), 600_000, 50);
  }
  const med = (f: (s: SettleSample & { ms: number }) => number) =>
    Math.round(median(samples.map(f)));
  return {
    routes: routes.length,
    ms: med(s => s.ms),
    createMs: med(s => s.createMs),
    afterLastCreateMs: med(s => s.afterLastCreateMs),
    maxAfterLastCreateMs: Math.max(...samples.map(s => s.afterLastCreateMs)),
    samples: samples.map(({ ms: _ms, ...rest }) => rest),
  };
}
