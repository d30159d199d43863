/**
 * The controller: Watch bindings feed the reconciler's snapshot. Registration only; the loop
 * (translate → provision → push → status) lives in reconcile/.
 */
import { hostname } from "node:os";
import { Capability, metricsCollector } from "pepr";
import { electionFromEnv } from "./election";
import { kubeClient, userAgent } from "./kube/client";
import { log } from "./log";
import { serveThrough, startupMetrics } from "./metrics";
import { Reconciler } from "./reconcile";
import { OPTIONAL_KINDS, WATCHED, watchKind } from "./reconcile/watched";
import type { KubeObject } from "./snapshot";

export const Controller = new Capability({
  name: "kengine-controller",
  description: "Watches Gateway API objects and programs Kengine proxies.",
});

const { When } = Controller;

/** Runs only where Pepr runs watches (the watcher pod, or `pepr dev`), never during `pepr build`. */
const runsWatches =
  (process.env.PEPR_WATCH_MODE === "true" || process.env.PEPR_MODE === "dev") &&
  process.env.PEPR_MODE !== "build";

let reconciler: Reconciler | undefined;
if (runsWatches) {
  // Our metrics appear on the module's /metrics (Pepr's server, port 3000) after Pepr's own.
  serveThrough(metricsCollector);
  // KENGINE_LEASE_NAME / _LEASE_DURATION / _RENEW_DEADLINE / _RETRY_PERIOD (election/env.ts).
  const election = electionFromEnv(process.env);
  if (!election.ok) {
    log.error(election.error);
    process.exit(1);
  }
  const identity = process.env.POD_NAME ?? `${hostname()}-${process.pid}`;
  reconciler = new Reconciler({
    // The replica's identity in the User-Agent: the audit log tells who wrote what.
    kube: kubeClient(undefined, { userAgent: userAgent(identity) }),
    log,
    namespace: process.env.KENGINE_NAMESPACE ?? "pepr-system",
    identity,
    election: election.value,
  });
  // Start-up requests are retried while their failure can pass (reconcile/list.ts); what
  // cannot pass (RBAC still refusing after retries, a bug) ends the process visibly, so
  // Kubernetes restarts it and the pod's restarts show it: never a watcher that runs without
  // programming. Pepr 1.1.4's /healthz always answers OK (a static handler on its private
  // express app), so the state is on /metrics: kengine_gateway_controller_synced.
  reconciler.start().catch(e => {
    startupMetrics.state("failed");
    log.error("controller failed to start: exiting", {
      error: e instanceof Error ? (e.stack ?? e.message) : String(e),
    });
    process.exit(1);
  });
  const shutdown = () => void reconciler?.stop().finally(() => process.exit(0));
  process.once("SIGTERM", shutdown);
  process.once("SIGINT", shutdown);
}

// Kinds a cluster may not serve are watched by the controller itself (watched.ts
// OPTIONAL_KINDS: Pepr's watch of a resource that is not served ends the process).
if (runsWatches)
  for (const [kind, model] of WATCHED.filter(([k]) => OPTIONAL_KINDS.has(k)))
    void watchKind(kind, model, (k, type, obj) => reconciler?.ingest(k, type, obj), {
      resyncDelaySec: 10,
    })
      .start()
      .catch(e => log.warn("cannot start a watch", { kind, error: String(e) }));

for (const [kind, model] of WATCHED.filter(([k]) => !OPTIONAL_KINDS.has(k))) {
  When(model)
    .IsCreatedOrUpdated()
    .Watch(obj => reconciler?.ingest(kind, "upsert", obj as unknown as KubeObject));
  When(model)
    .IsDeleted()
    .Watch(obj => reconciler?.ingest(kind, "delete", obj as unknown as KubeObject));
}
