/**
 * Ad-hoc driver for profiling the render half of an incremental build: one changed
 * route among N per build, translated incrementally (reconcile/reuse.ts) and then rendered and
 * sealed (reconcile/plan.ts `sealedFor`), many times. `node --cpu-prof --expose-gc --import tsx
 * hack/bench/incremental-render.ts [routes] [gateways] [changes]` prints the render's CPU per
 * build (median, ms), the entries rendered and reused, and the heap used after a GC (when
 * `--expose-gc`) with every Gateway sealed.
 */
import { fragmentCounts } from "../../capabilities/caddy/render-memo";
import { sealedFor } from "../../capabilities/reconcile/plan";
import { IncrementalTranslator } from "../../capabilities/reconcile/reuse";
import { newAuthority } from "../../capabilities/pki/rotation";
import { podManagementSpec } from "../../capabilities/workload";
import {
  CONTROLLER_NAME,
  KubeObject,
  Snapshot,
  apply,
  snapshotOf,
} from "../../capabilities/snapshot";
import { median } from "./stats";
import { snapshotObjects } from "./workload";

const [routesArg, gatewaysArg, changesArg] = process.argv.slice(2);
const routes = Number(routesArg ?? 3000);
const gateways = Number(gatewaysArg ?? 1);
const changes = Number(changesArg ?? 200);
const spec = podManagementSpec(newAuthority(Date.now()).certificatePem);
const objects = snapshotObjects({ routes, gateways });
const routeObjs = objects.filter(o => o.kind === "HTTPRoute");
const cpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const gc = (globalThis as { gc?: () => void }).gc;
const heapMiB = (): number | undefined => {
  if (!gc) return undefined;
  gc();
  gc();
  return Math.round((process.memoryUsage().heapUsed / 2 ** 20) * 10) / 10;
};
const heapBefore = heapMiB();
let snapshot: Snapshot = snapshotOf(objects);
const translator = new IncrementalTranslator();
const render: number[] = [];
const rendered: number[] = [];
let heapAfter: number | undefined;
let bytes = 0;
for (let k = -3; k < changes; k++) {
  if (k >= 0) {
    const before = routeObjs[(k * 197) % routeObjs.length]! as KubeObject & { spec: object };
    const changed = {
      ...before,
      spec: { ...before.spec, hostnames: [`changed${k}.bench.local`] },
    } as KubeObject;
    snapshot = apply(snapshot, { type: "upsert", kind: "HTTPRoute", object: changed }).snapshot;
  }
  const t = translator.translate(snapshot, { controllerName: CONTROLLER_NAME }).result;
  const f0 = fragmentCounts().rendered;
  const c0 = cpu();
  for (const ir of t.gateways) {
    const sealed = sealedFor(ir, spec);
    if (sealed.ok) bytes = Math.max(bytes, sealed.value.size ?? sealed.value.bytes.length);
  }
  const c1 = cpu();
  if (k === -1) heapAfter = heapMiB();
  if (k < 0) continue;
  render.push(c1 - c0);
  rendered.push(fragmentCounts().rendered - f0);
}
const round = (ms: number): number => Math.round(ms * 100) / 100;
console.log(
  JSON.stringify({
    routes,
    gateways,
    changes,
    renderCpuMs: round(median(render)),
    entriesRendered: median(rendered),
    configBytes: bytes,
    heapUsedMiB: { workload: heapBefore, translatedAndSealed: heapAfter },
  }),
);
