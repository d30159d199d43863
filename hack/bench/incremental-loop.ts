/**
 * Ad-hoc driver for profiling the pure part of an incremental build: the snapshot
 * event, translation and status of one changed route (or EndpointSlice) among N routes, many
 * times, without rendering. `node --cpu-prof --import tsx hack/bench/incremental-loop.ts
 * [routes] [gateways] [changes] [route|route+status|slice]` prints CPU per phase (medians, ms);
 * `route+status`: before each route change, the Gateway's status changes (as our own status
 * write of it comes back on a cluster).
 */
import {
  CONTROLLER_NAME,
  KubeObject,
  Snapshot,
  apply,
  snapshotOf,
} from "../../capabilities/snapshot";
import { IncrementalTranslator } from "../../capabilities/reconcile/reuse";
import { StatusMemo, computeStatusUpdates } from "../../capabilities/status";
import { Stored } from "./incremental";
import { median } from "./stats";

const round = (ms: number): number => Math.round(ms * 100) / 100;
import { snapshotObjects } from "./workload";

const [routesArg, gatewaysArg, changesArg, what] = process.argv.slice(2);
const routes = Number(routesArg ?? 3000);
const gateways = Number(gatewaysArg ?? 1);
const changes = Number(changesArg ?? 200);
const objects = snapshotObjects({ routes, gateways });
const routeObjs = objects.filter(o => o.kind === "HTTPRoute");
const slices = objects.filter(o => o.kind === "EndpointSlice");
const cpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const stored = new Stored(objects);
let snapshot: Snapshot = snapshotOf(objects);
const translator = new IncrementalTranslator();
const memo = new StatusMemo();
const phases = { snapshot: [] as number[], translate: [] as number[], status: [] as number[] };
for (let k = -3; k < changes; k++) {
  const c0 = cpu();
  if (k >= 0) {
    if (what === "slice") {
      const before = slices[(k * 7) % slices.length]! as KubeObject & { endpoints: unknown[] };
      const changed = {
        ...before,
        metadata: { ...before.metadata, resourceVersion: `s${k}` },
        endpoints: k % 2 ? before.endpoints : before.endpoints.slice(0, 1),
      } as KubeObject;
      snapshot = apply(snapshot, {
        type: "upsert",
        kind: "EndpointSlice",
        object: changed,
      }).snapshot;
    } else {
      if (what === "route+status") {
        // as on a cluster: our status write of the Gateway (attachedRoutes) comes back as an
        // update of the Gateway with the same spec and a new status
        const gw = snapshot.objects.Gateway.values().next().value as KubeObject;
        snapshot = apply(snapshot, {
          type: "upsert",
          kind: "Gateway",
          object: {
            ...gw,
            metadata: { ...gw.metadata, resourceVersion: `g${k}` },
            status: { conditions: [], listeners: [{ name: "x", attachedRoutes: k }] },
          } as KubeObject,
        }).snapshot;
      }
      const before = routeObjs[(k * 197) % routeObjs.length]! as KubeObject & { spec: object };
      const changed = {
        ...before,
        spec: { ...before.spec, hostnames: [`changed${k}.bench.local`] },
      } as KubeObject;
      snapshot = apply(snapshot, { type: "upsert", kind: "HTTPRoute", object: changed }).snapshot;
    }
  }
  const c1 = cpu();
  const t = translator.translate(snapshot, { controllerName: CONTROLLER_NAME }).result;
  const c2 = cpu();
  stored.written(
    computeStatusUpdates({
      results: t.statuses,
      current: stored.current,
      controllerName: CONTROLLER_NAME,
      now: "2026-11-24T00:00:00Z",
      memo,
      stored: stored.source(),
    }),
  );
  const c3 = cpu();
  if (k < 0) continue;
  phases.snapshot.push(c1 - c0);
  phases.translate.push(c2 - c1);
  phases.status.push(c3 - c2);
}
const m = Object.fromEntries(Object.entries(phases).map(([p, v]) => [p, round(median(v))]));
console.log(JSON.stringify({ routes, gateways, changes, what: what ?? "route", cpuMs: m }));
