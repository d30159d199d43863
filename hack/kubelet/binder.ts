/**
 * Binds unscheduled Pods to the single local node, standing in for kube-scheduler: watches
 * Pods with an empty spec.nodeName whose schedulerName is the default and creates their
 * pods/binding subresource.
 */
import { Api, ApiError, Informer, KubeObject, keyOf } from "./api";
import type { Logger } from "./log";

export interface UnboundPod extends KubeObject {
  readonly spec: { readonly nodeName?: string; readonly schedulerName?: string };
}

/** Whether this node's binder should bind the pod (pure). */
export function wantsBinding(pod: UnboundPod): boolean {
  const sched = pod.spec.schedulerName ?? "default-scheduler";
  return !pod.spec.nodeName && sched === "default-scheduler" && !pod.metadata.deletionTimestamp;
}

export function bindingFor(pod: UnboundPod, nodeName: string) {
  return {
    apiVersion: "v1",
    kind: "Binding",
    metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid },
    target: { apiVersion: "v1", kind: "Node", name: nodeName },
  };
}

export class Binder {
  private readonly inFlight = new Set<string>();
  private informer: Informer<UnboundPod> | undefined;

  constructor(
    private readonly api: Api,
    private readonly nodeName: string,
    private readonly log: Logger,
  ) {}

  start(): Informer<UnboundPod> {
    this.informer = this.api.inform<UnboundPod>(
      "/api/v1/pods?fieldSelector=" + encodeURIComponent("spec.nodeName="),
      (key, pod) => {
        if (pod && wantsBinding(pod)) void this.bind(key, pod);
      },
    );
    return this.informer;
  }

  private async bind(key: string, pod: UnboundPod): Promise<void> {
    if (this.inFlight.has(key)) return;
    this.inFlight.add(key);
    try {
      await this.api.post(
        `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}/binding`,
        bindingFor(pod, this.nodeName),
      );
      this.log.info(`bound pod ${keyOf(pod)} to ${this.nodeName}`);
    } catch (e) {
      // 409: already bound (or gone); anything else is retried on the next pod event.
      if (!(e instanceof ApiError && (e.status === 409 || e.status === 404))) {
        this.log.warn(`binding ${key}: ${String(e)}; retrying`);
        setTimeout(() => {
          const again = this.informer?.cache.get(key);
          if (again && wantsBinding(again)) void this.bind(key, again);
        }, 2000);
      }
    } finally {
      this.inFlight.delete(key);
    }
  }
}
