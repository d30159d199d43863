/**
 * Feeds a Reconciler from real watches (kubernetes-fluent-client, what Pepr's Watch bindings use)
 * so several controller instances can run in one test process without `pepr dev`.
 */
import { K8s } from "kubernetes-fluent-client";
import type { Reconciler } from "../../capabilities/reconcile";
import { WATCHED } from "../../capabilities/reconcile/watched";
import type { KubeObject } from "../../capabilities/snapshot";

export async function feed(r: Reconciler): Promise<() => void> {
  const watchers = WATCHED.map(([kind, model]) =>
    K8s(model).Watch((obj, phase) => {
      if (phase === "ADDED" || phase === "MODIFIED")
        r.ingest(kind, "upsert", obj as unknown as KubeObject);
      else if (phase === "DELETED") r.ingest(kind, "delete", obj as unknown as KubeObject);
    }),
  );
  await Promise.all(watchers.map(w => w.start()));
  return () => watchers.forEach(w => w.close());
}
