/**
 * Scenario "deltaAck": where a Bundled proxy's acknowledgement of a one-route change goes.
 * A real Caddy (our build) with its mTLS management listener runs the 3,000-route workload
 * (one Gateway); a real push engine (`Fleet`, `AdminClient`) then takes it through new routes
 * one at a time, each a one-key route-table delta, as the controller does. Measured per
 * sample, apart from the cluster's load:
 *
 * - `pushMs`: the push engine's own duration of the delta (what the controller's
 *   `acknowledged` phase holds, minus its queueing);
 * - `newConnectionMs`: a small admin GET on a new mTLS connection (`GET /id/…`: the admin
 *   client closes those connections after one request), and `keptConnectionMs`: a route-table
 *   read on the connections the client keeps for route-table requests; their difference is
 *   what a handshake costs;
 * - `proxyCpuMs`: Caddy's CPU per delta (user + system, 10 ms ticks, summed over the samples).
 */
import { Fleet, FleetEvent } from "../../capabilities/proxies";
import { sealGatewayConfig } from "../../capabilities/reconcile/plan";
import { snapshotOf } from "../../capabilities/snapshot";
import { translate } from "../../capabilities/translate";
import { CONTROLLER_NAME } from "../../capabilities/ownership";
import { startManagedCaddy } from "../../tests/support/managed-caddy";
import { listenerPortOffset } from "../../tests/support/ports";
import { caddyPid, cpuMs } from "./config-load";
import { median, now, quantile, round } from "./stats";
import { httpRoute, snapshotObjects, WorkloadOptions } from "./workload";

export interface DeltaAckResult {
  readonly routes: number;
  readonly samples: number;
  readonly pushMs: { readonly p50: number; readonly p99: number };
  readonly newConnectionMs: { readonly p50: number; readonly p99: number };
  readonly keptConnectionMs: { readonly p50: number; readonly p99: number };
  readonly proxyCpuMsPerDelta: number;
  readonly kinds: Record<string, number>;
}

const spread = (xs: number[]) => ({ p50: round(median(xs)), p99: round(quantile(xs, 0.99)) });

export async function benchDeltaAck(routes = 3000, samples = 30): Promise<DeltaAckResult> {
  const proxy = await startManagedCaddy("bench-delta");
  const events: FleetEvent[] = [];
  const fleet = new Fleet({ client: proxy.client, onEvent: e => events.push(e) });
  const opts: WorkloadOptions = { routes, gateways: 1 };
  const base = snapshotObjects(opts);
  const portOffset = listenerPortOffset();
  const sealed = (extra: number) => {
    const objects = [
      ...base,
      ...Array.from({ length: extra }, (_, k) => httpRoute(routes + k, opts, true)),
    ];
    const t = translate(snapshotOf(objects), { controllerName: CONTROLLER_NAME });
    const r = sealGatewayConfig(t.gateways[0], proxy.spec, {
      bindHost: "127.0.0.1",
      portOffset,
    });
    if (!r.ok) throw new Error(`seal: ${JSON.stringify(r.error)}`);
    return r.value;
  };
  const pushed = async (config: ReturnType<typeof sealed>) => {
    const from = events.length;
    fleet.update([{ endpoint: proxy.endpoint, config }]);
    await fleet.settled();
    const e = events.slice(from).find(x => x.type === "pushed" || x.type === "failed");
    if (e?.type !== "pushed") throw new Error(`push failed: ${JSON.stringify(e)}`);
    return e;
  };
  try {
    await pushed(sealed(0));
    const pid = caddyPid(proxy.caddy);
    const push: number[] = [];
    const fresh: number[] = [];
    const keptMs: number[] = [];
    const kinds: Record<string, number> = {};
    let cpu = 0;
    for (let k = 1; k <= samples; k++) {
      const config = sealed(k);
      const c0 = cpuMs(pid);
      const e = await pushed(config);
      cpu += cpuMs(pid) - c0;
      push.push(e.type === "pushed" ? e.durationMs : NaN);
      const kind = e.type === "pushed" ? (e.kind ?? "load") : "failed";
      kinds[kind] = (kinds[kind] ?? 0) + 1;
      let t0 = now();
      const id = await proxy.client.runsConfig(proxy.endpoint, config.hash);
      if (!id.ok) throw new Error(`GET /id: ${JSON.stringify(id.error)}`);
      fresh.push(now() - t0);
      t0 = now();
      const tables = await proxy.client.routeTables(proxy.endpoint);
      if (!tables.ok) throw new Error(`route tables: ${JSON.stringify(tables.error)}`);
      keptMs.push(now() - t0);
    }
    return {
      routes,
      samples,
      pushMs: spread(push),
      newConnectionMs: spread(fresh),
      keptConnectionMs: spread(keptMs),
      proxyCpuMsPerDelta: round(cpu / samples),
      kinds,
    };
  } finally {
    fleet.close();
    await proxy.stop();
  }
}
