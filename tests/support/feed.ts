/**
 * Feeds a Reconciler from real watches (kubernetes-fluent-client, what Pepr's Watch bindings use)
 * so several controller instances can run in one test process without `pepr dev`.
 */
import type { Reconciler } from "../../capabilities/reconcile";
import { WATCHED, watchKind } from "../../capabilities/reconcile/watched";

export async function feed(r: Reconciler): Promise<() => void> {
  const watchers = WATCHED.map(([kind, model]) =>
    watchKind(kind, model, (k, type, obj) => r.ingest(k, type, obj)),
  );
  await Promise.all(watchers.map(w => w.start()));
  return () => watchers.forEach(w => w.close());
}
