/**
 * Heap held per stage of the controller's pure pipeline: `node
 * --expose-gc --import tsx hack/bench/heap.ts [routes] [gateways]` ingests the bench workload
 * (HTTPRoutes with the two managedFields entries the API server records, stripped on ingest as
 * the controller does), translates it (IncrementalTranslator), renders and seals each Gateway's
 * config (plan.ts's cache) and computes status, and prints the heap used after full garbage
 * collections after each stage (MiB), so each stage's share is what it keeps alive.
 */
import { writeHeapSnapshot } from "node:v8";
import { newAuthority } from "../../capabilities/pki/rotation";
import { ingestable } from "../../capabilities/reconcile/ingest";
import { sealedFor } from "../../capabilities/reconcile/plan";
import { IncrementalTranslator } from "../../capabilities/reconcile/reuse";
import { podManagementSpec } from "../../capabilities/workload";
import {
  CONTROLLER_NAME,
  Kind,
  KubeObject,
  applyAll,
  emptySnapshot,
  KINDS,
} from "../../capabilities/snapshot";
import {
  StatusKind,
  StatusMemo,
  StoredObject,
  computeStatusUpdates,
} from "../../capabilities/status";
import { snapshotObjects } from "./workload";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc");
const heap = (): number => {
  for (let i = 0; i < 4; i++) gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
};
const routes = Number(process.argv[2] ?? 1000);
const gateways = Number(process.argv[3] ?? 1);
const base = heap();
// As listed from the API server: a fresh parse per object, with managedFields.
const listed = JSON.parse(
  JSON.stringify(
    snapshotObjects({ routes, gateways }).map(o => ({
      ...o,
      metadata: {
        ...o.metadata,
        resourceVersion: "1",
        uid: `00000000-0000-0000-0000-${String(Math.random()).slice(2, 14)}`,
        managedFields: [
          {
            manager: "kubectl",
            operation: "Update",
            fieldsV1: { "f:spec": { ".": {}, "f:rules": {} } },
          },
          {
            manager: "kengine-gateway",
            operation: "Update",
            subresource: "status",
            fieldsV1: { "f:status": { ".": {}, "f:parents": {} } },
          },
        ],
      },
    })),
  ),
) as KubeObject[];
let snapshot = applyAll(emptySnapshot(), [
  ...listed.map(o => ({
    type: "upsert" as const,
    kind: o.kind as Kind,
    object: ingestable(o.kind as Kind, o),
  })),
  ...KINDS.map(kind => ({ type: "synced" as const, kind })),
]).snapshot;
listed.length = 0;
const afterSnapshot = heap();
const translator = new IncrementalTranslator();
const t = translator.translate(snapshot, { controllerName: CONTROLLER_NAME }).result;
const afterTranslate = heap();
const spec = podManagementSpec(newAuthority(Date.now()).certificatePem);
const sealed = t.gateways.map(ir => sealedFor(ir, spec));
const afterRender = heap();
const stored = new Map<string, StoredObject>();
const memo = new StatusMemo();
const updates = computeStatusUpdates({
  results: t.statuses,
  current: (kind: StatusKind, ns: string | undefined, name: string) => {
    const key = `${kind}/${ns ?? ""}/${name}`;
    let o = stored.get(key);
    if (!o) stored.set(key, (o = { metadata: { name, namespace: ns }, status: {} }));
    return o;
  },
  controllerName: CONTROLLER_NAME,
  now: "2026-11-24T00:00:00Z",
  memo,
});
const afterStatus = heap();
const r = (n: number) => Math.round(n * 10) / 10;
console.log(
  JSON.stringify({
    routes,
    gateways,
    heapMiB: {
      runtime: r(base),
      snapshot: r(afterSnapshot - base),
      translate: r(afterTranslate - afterSnapshot),
      render: r(afterRender - afterTranslate),
      statusUpdates: r(afterStatus - afterRender),
      total: r(afterStatus),
    },
    configBytes: sealed.map(x => (x.ok ? x.value.bytes.length : -1)),
    updates: updates.length,
  }),
);
if (process.env.HEAP_SNAPSHOT) console.log(writeHeapSnapshot(process.env.HEAP_SNAPSHOT));
// keep everything alive until here
if (snapshot.objects.HTTPRoute.size < 0) snapshot = emptySnapshot();
