/** Pod status as a kubelet reports it, computed from what the runtime knows (pure). */
import type { ContainerState, ContainerStatus, Pod, PodCondition, PodStatus } from "./types";

export interface ContainerView {
  readonly name: string;
  readonly image: string;
  readonly state: ContainerState;
  readonly lastState: ContainerState | Record<string, never>;
  readonly restartCount: number;
  readonly ready: boolean;
  readonly started: boolean;
  /** Set once the container will not run again (terminated and no restart pending). */
  readonly finished: boolean;
}

export interface PodView {
  readonly podIP?: string;
  readonly hostIP: string;
  readonly startTime: string;
  readonly sandboxReady: boolean;
  readonly initDone: boolean;
  readonly init: readonly ContainerView[];
  readonly containers: readonly ContainerView[];
  readonly uid: string;
}

export function containerStatus(v: ContainerView, uid: string): ContainerStatus {
  const running = "running" in v.state;
  return {
    name: v.name,
    image: v.image,
    imageID: v.image,
    ...(running || "terminated" in v.state
      ? { containerID: `kengine-local://${uid.slice(0, 8)}-${v.name}-${v.restartCount}` }
      : {}),
    ready: v.ready,
    started: running && v.started,
    restartCount: v.restartCount,
    state: v.state,
    lastState: v.lastState,
  };
}

/** The pod phase (mirrors the kubelet's getPhase for the cases we can produce). */
export function podPhase(pod: Pod, v: PodView): string {
  const policy = pod.spec.restartPolicy ?? "Always";
  if (!v.initDone) {
    const failedInit = v.init.some(
      c => c.finished && "terminated" in c.state && c.state.terminated.exitCode !== 0,
    );
    return failedInit && policy === "Never" ? "Failed" : "Pending";
  }
  let running = 0;
  let pending = 0;
  let succeeded = 0;
  let failed = 0;
  let everRan = 0;
  for (const c of v.containers) {
    if ("running" in c.state) running++;
    else if ("waiting" in c.state) {
      if ("terminated" in c.lastState) everRan++;
      else pending++;
    } else if (c.finished) {
      if (c.state.terminated.exitCode === 0) succeeded++;
      else failed++;
    } else everRan++; // terminated, restart pending
  }
  if (pending > 0) return "Pending";
  if (running > 0 || everRan > 0) return "Running";
  if (succeeded + failed === v.containers.length) return failed > 0 ? "Failed" : "Succeeded";
  return "Pending";
}

function condition(
  prev: readonly PodCondition[] | undefined,
  type: string,
  ok: boolean,
  now: string,
  reason?: string,
): PodCondition {
  const status = ok ? "True" : "False";
  const before = prev?.find(c => c.type === type);
  const same = before?.status === status;
  return {
    type,
    status,
    ...(reason && !ok ? { reason } : {}),
    lastProbeTime: null,
    lastTransitionTime: same && before?.lastTransitionTime ? before.lastTransitionTime : now,
  };
}

/** The status to write; `now` stamps only conditions whose status changed. */
export function podStatus(pod: Pod, v: PodView, now: string): PodStatus {
  const prev = pod.status?.conditions;
  const phase = podPhase(pod, v);
  const terminal = phase === "Succeeded" || phase === "Failed";
  const containersReady =
    !terminal && v.initDone && v.containers.length > 0 && v.containers.every(c => c.ready);
  const notReady = v.containers.filter(c => !c.ready).map(c => c.name);
  const ownTypes = new Set([
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
  ]);
  const conditions: PodCondition[] = [
    condition(prev, "PodReadyToStartContainers", v.sandboxReady && !terminal, now),
    condition(prev, "Initialized", v.initDone, now, "ContainersNotInitialized"),
    condition(
      prev,
      "Ready",
      containersReady,
      now,
      terminal ? "PodCompleted" : "ContainersNotReady",
    ),
    condition(
      prev,
      "ContainersReady",
      containersReady,
      now,
      terminal ? "PodCompleted" : "ContainersNotReady",
    ),
    condition(prev, "PodScheduled", true, now),
    ...(prev ?? []).filter(c => !ownTypes.has(c.type)),
  ].map(c =>
    (c.type === "Ready" || c.type === "ContainersReady") && c.status === "False" && !terminal
      ? { ...c, message: `containers with unready status: [${notReady.join(" ")}]` }
      : c,
  );
  return {
    phase,
    conditions,
    hostIP: v.hostIP,
    hostIPs: [{ ip: v.hostIP }],
    ...(v.podIP ? { podIP: v.podIP, podIPs: [{ ip: v.podIP }] } : {}),
    startTime: v.startTime,
    ...(v.init.length ? { initContainerStatuses: v.init.map(c => containerStatus(c, v.uid)) } : {}),
    containerStatuses: v.containers.map(c => containerStatus(c, v.uid)),
    qosClass: pod.status?.qosClass ?? "BestEffort",
  };
}
