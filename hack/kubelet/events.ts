/**
 * Pod events as a kubelet records them (Pulled, Created, Started, Killing, BackOff, Unhealthy,
 * Failed), so `kubectl describe pod` tells what happened. Repeats of the same event for the
 * same object are dropped for a minute, standing in for the kubelet's event aggregation.
 */
import { randomBytes } from "node:crypto";
import type { Api } from "./api";
import type { Logger } from "./log";

export type EventType = "Normal" | "Warning";

export interface InvolvedPod {
  readonly name: string;
  readonly namespace?: string;
  readonly uid?: string;
}

const repeatWindowMs = 60_000;

/** The core/v1 Event for a pod (pure apart from the name suffix and time it is given). */
export function podEvent(
  pod: InvolvedPod,
  container: string | undefined,
  type: EventType,
  reason: string,
  message: string,
  host: string,
  now: string,
  suffix: string,
) {
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: `${pod.name}.${suffix}`, namespace: pod.namespace ?? "default" },
    involvedObject: {
      apiVersion: "v1",
      kind: "Pod",
      name: pod.name,
      namespace: pod.namespace ?? "default",
      uid: pod.uid,
      ...(container ? { fieldPath: `spec.containers{${container}}` } : {}),
    },
    type,
    reason,
    message,
    source: { component: "kubelet", host },
    reportingComponent: "kubelet",
    reportingInstance: host,
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  };
}

export class EventRecorder {
  private readonly recent = new Map<string, number>();

  constructor(
    private readonly api: Api,
    private readonly host: string,
    private readonly log: Logger,
  ) {}

  record(
    pod: InvolvedPod,
    container: string | undefined,
    type: EventType,
    reason: string,
    message: string,
  ): void {
    const key = `${pod.uid}/${container ?? ""}/${reason}/${message}`;
    const nowMs = Date.now();
    const last = this.recent.get(key);
    if (last !== undefined && nowMs - last < repeatWindowMs) return;
    this.recent.set(key, nowMs);
    if (this.recent.size > 5000) {
      for (const [k, t] of this.recent) if (nowMs - t >= repeatWindowMs) this.recent.delete(k);
    }
    const now = new Date(nowMs).toISOString().replace(/\.\d+Z$/, "Z");
    const ev = podEvent(
      pod,
      container,
      type,
      reason,
      message,
      this.host,
      now,
      randomBytes(8).toString("hex"),
    );
    this.api.post(`/api/v1/namespaces/${ev.metadata.namespace}/events`, ev).catch(e => {
      // A namespace being deleted refuses new events; that is expected, not worth a line.
      if (!String(e).includes("is being terminated")) {
        this.log.warn(`event ${reason} for ${ev.metadata.namespace}/${pod.name}: ${String(e)}`);
      }
    });
  }
}
