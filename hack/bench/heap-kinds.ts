/**
 * Heap per watched object, by kind: `node --expose-gc --import tsx hack/bench/heap-kinds.ts [n]`
 * lists n objects of each kind the bench workload holds (HTTPRoutes, Services, their
 * EndpointSlices, Gateways) as from the API server (a fresh parse each, with the two
 * managedFields entries the API server records), ingests them into an otherwise empty snapshot
 * as the controller does (stripped, one batch) and prints the heap they keep, in bytes per
 * object after full garbage collections. What translation adds per route: heap.ts.
 */
import { ingestable } from "../../capabilities/reconcile/ingest";
import { Kind, KubeObject, applyAll, emptySnapshot } from "../../capabilities/snapshot";
import { gateways, httpRoutes, services } from "./workload";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc");
const heap = (): number => {
  for (let i = 0; i < 4; i++) gc();
  return process.memoryUsage().heapUsed;
};
const n = Number(process.argv[2] ?? 5000);

/** As listed from the API server: a fresh parse per object, with managedFields. */
const listed = (objects: readonly KubeObject[]): KubeObject[] =>
  JSON.parse(
    JSON.stringify(
      objects.map((o, i) => ({
        ...o,
        metadata: {
          ...o.metadata,
          resourceVersion: String(1000 + i),
          uid: `00000000-0000-0000-0000-${String(i).padStart(12, "0")}`,
          managedFields: [
            { manager: "kubectl", operation: "Update", fieldsV1: { "f:spec": { ".": {} } } },
            {
              manager: "kengine-gateway",
              operation: "Update",
              subresource: "status",
              fieldsV1: { "f:status": { ".": {} } },
            },
          ],
        },
      })),
    ),
  ) as KubeObject[];

const opts = { routes: n, gateways: n, services: n };
const all = services(opts);
const samples: Record<string, () => KubeObject[]> = {
  HTTPRoute: () => listed(httpRoutes({ ...opts, gateways: 10, services: 100 })),
  Service: () => listed(all.filter(o => o.kind === "Service")),
  EndpointSlice: () => listed(all.filter(o => o.kind === "EndpointSlice")),
  Gateway: () => listed(gateways(opts)),
};
const out: Record<string, number> = {};
const kept: unknown[] = [];
for (const [kind, make] of Object.entries(samples)) {
  const before = heap();
  let objects: KubeObject[] | undefined = make();
  const snapshot = applyAll(
    emptySnapshot(),
    objects.map(o => ({
      type: "upsert" as const,
      kind: kind as Kind,
      object: ingestable(kind as Kind, o),
    })),
  ).snapshot;
  objects = undefined;
  out[kind] = Math.round((heap() - before) / n);
  kept.push(snapshot);
}
console.log(JSON.stringify({ objects: n, bytesPerObject: out }));
if (kept.length < 0) console.log(kept);
