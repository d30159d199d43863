/**
 * Container lifecycle hooks the local kubelet runs, as a node's kubelet does when a pod is
 * deleted: a container's `lifecycle.preStop` runs before its SIGTERM, inside the pod's grace
 * period, and the container gets at least two more seconds after it. Only the `sleep` action
 * is run here (the proxies use it: their image has no shell); `exec` and `httpGet` hooks are
 * reported and skipped. Pure.
 */
import type { Container } from "./types";

/** What the kubelet gives a container after its preStop hook, however long that took. */
export const MIN_GRACE_AFTER_PRE_STOP_MS = 2000;

export interface PreStopPlan {
  /** How long the preStop sleep lasts (ms), bounded by the grace period. */
  readonly sleepMs: number;
  /** Grace left for SIGTERM → SIGKILL once the hook ended. */
  readonly graceAfterMs: number;
  /** A hook the local kubelet does not run (exec, httpGet), for the log. */
  readonly skipped?: string;
}

export function preStopPlan(c: Container, graceMs: number): PreStopPlan {
  const hook = c.lifecycle?.preStop;
  if (!hook) return { sleepMs: 0, graceAfterMs: graceMs };
  if (hook.sleep) {
    const sleepMs = Math.max(0, Math.min(hook.sleep.seconds * 1000, graceMs));
    return {
      sleepMs,
      graceAfterMs: Math.max(graceMs - sleepMs, MIN_GRACE_AFTER_PRE_STOP_MS),
    };
  }
  const kind = Object.keys(hook).join(", ") || "empty";
  return { sleepMs: 0, graceAfterMs: graceMs, skipped: `preStop ${kind} hook not run` };
}
