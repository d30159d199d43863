/**
 * A controller in the test process: the Reconciler as `pepr dev` runs it (lists and watches the
 * API server, elects a leader, provisions managed proxies), one proxy replica, short election
 * timings, only errors logged. Returns what stops it.
 */
import { kubeClient } from "../../capabilities/kube/client";
import { DEFAULT_PROXY_SETTINGS } from "../../capabilities/provision";
import { Reconciler } from "../../capabilities/reconcile";
import { quietLogger } from "./manifests";

export async function startReconciler(
  namespace: string,
  identity: string,
): Promise<() => Promise<void>> {
  const reconciler = new Reconciler({
    kube: kubeClient(),
    log: quietLogger,
    namespace,
    identity,
    trafficIntervalMs: 0,
    defaults: { ...DEFAULT_PROXY_SETTINGS, replicas: 1 },
    election: { name: identity, leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 500 },
  });
  await reconciler.start();
  return async () => {
    await reconciler.stop();
  };
}
