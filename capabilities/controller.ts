/**
 * The controller: registration only. The Reconciler lists and watches every kind itself (one
 * watch per kind, its snapshot the only cache; reconcile/watch.ts), so the loop (translate →
 * provision → push → status) and its inputs live in reconcile/.
 *
 * Each Pepr Watch binding is its own list + watch + cache of full objects (kubernetes-fluent-
 * client's Watcher), so the watched kinds are not bound here: a binding per kind and event
 * doubled every watch and every cache. But Pepr runs the watcher pod (and, under `pepr dev`,
 * the watch side) only for a module with at least one Watch binding, so one binding stays,
 * as small as a watch can be: the controller's own Namespace, by name (one object; its RBAC is
 * granted already, as the reconciler lists and watches Namespaces).
 */
import { ingressStatusAddressesFromEnv } from "./reconcile/ingress-status";
import { hostname } from "node:os";
import { Capability, a, metricsCollector } from "pepr";
import { electionFromEnv } from "./election";
import { kubeClient, userAgent } from "./kube/client";
import { log } from "./log";
import { serveThrough, startupMetrics } from "./metrics";
import { Reconciler } from "./reconcile";
import { watchSilenceFromEnv } from "./reconcile/watch";

export const Controller = new Capability({
  name: "kengine-controller",
  description: "Watches Gateway API objects and programs Kengine proxies.",
});

const { When } = Controller;

/** Runs only where Pepr runs watches (the watcher pod, or `pepr dev`), never during `pepr build`. */
const runsWatches =
  (process.env.PEPR_WATCH_MODE === "true" || process.env.PEPR_MODE === "dev") &&
  process.env.PEPR_MODE !== "build";

const namespace = process.env.KENGINE_NAMESPACE ?? "pepr-system";

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
  // KENGINE_WATCH_SILENCE: a watch silent this long is restarted (reconcile/watch.ts).
  const silence = watchSilenceFromEnv(process.env);
  if (!silence.ok) {
    log.error(silence.error);
    process.exit(1);
  }
  const identity = process.env.POD_NAME ?? `${hostname()}-${process.pid}`;
  reconciler = new Reconciler({
    // The replica's identity in the User-Agent: the audit log tells who wrote what.
    kube: kubeClient(undefined, { userAgent: userAgent(identity) }),
    log,
    namespace,
    identity,
    election: election.value,
    watchSilenceMs: silence.value,
    // KENGINE_INGRESS_STATUS_ADDRESSES: Ingress status.loadBalancer addresses (docs/ingress.md).
    ingressStatusAddresses: ingressStatusAddressesFromEnv(process.env),
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

// Keeps Pepr's watcher running (see above); the reconciler's own watch sees the same changes.
When(a.Namespace)
  .IsCreatedOrUpdated()
  .WithName(namespace)
  .Watch(() => undefined);
