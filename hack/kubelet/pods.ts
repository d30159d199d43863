/**
 * The node's pod manager: watches Pods bound to this node, starts a PodWorker for each,
 * stops it gracefully on deletion and then removes the Pod object (grace 0), as a kubelet does.
 */
import { Api, ApiError, Informer } from "./api";
import type { Logger } from "./log";
import { PodDeps, PodWorker } from "./pod";
import type { Pod } from "./types";

export class PodManager {
  readonly workers = new Map<string, PodWorker>();
  private readonly terminating = new Set<string>();
  private informer: Informer<Pod> | undefined;

  constructor(
    private readonly api: Api,
    private readonly nodeName: string,
    private readonly deps: PodDeps,
    private readonly log: Logger,
  ) {}

  start(): Informer<Pod> {
    this.informer = this.api.inform<Pod>(
      "/api/v1/pods?fieldSelector=" + encodeURIComponent(`spec.nodeName=${this.nodeName}`),
      (key, pod) => this.onPod(key, pod),
    );
    return this.informer;
  }

  /** Finds a running pod's worker by namespace and name. */
  find(namespace: string, name: string): PodWorker | undefined {
    return this.workers.get(`${namespace}/${name}`);
  }

  private onPod(key: string, pod: Pod | undefined): void {
    const worker = this.workers.get(key);
    if (!pod) {
      // Gone from the API (force-deleted or after our own final delete): stop at once.
      if (worker) void this.finish(key, worker, 2000, false);
      return;
    }
    if (worker && worker.uid !== pod.metadata.uid) {
      // Same name, new pod (e.g. a StatefulSet): retire the old one first.
      void this.finish(key, worker, 2000, false).then(() =>
        this.onPod(key, this.informer?.cache.get(key)),
      );
      return;
    }
    if (pod.metadata.deletionTimestamp) {
      const grace =
        pod.metadata.deletionGracePeriodSeconds ?? pod.spec.terminationGracePeriodSeconds ?? 30;
      if (worker) {
        worker.update(pod);
        void this.finish(key, worker, grace * 1000, true, true);
      } else if (!this.terminating.has(key)) {
        void this.deletePod(pod);
      }
      return;
    }
    if (worker) {
      worker.update(pod);
      return;
    }
    if (pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") return;
    const w = new PodWorker(pod, this.deps);
    this.workers.set(key, w);
    this.log.info(`pod ${key}: starting`);
    w.start().catch(e => this.log.error(`pod ${key}: ${String(e)}`));
  }

  private async finish(
    key: string,
    w: PodWorker,
    graceMs: number,
    deleteObject: boolean,
    /** The pod was deleted with a grace period: preStop hooks run first (lifecycle.ts). */
    preStop = false,
  ): Promise<void> {
    if (this.terminating.has(key)) return;
    this.terminating.add(key);
    try {
      this.log.info(`pod ${key}: stopping (grace ${graceMs / 1000}s)`);
      await w.stop(graceMs, false, preStop);
      this.deps.ipam.release(w.uid);
      if (deleteObject) {
        await w.flushStatus().catch(() => undefined);
        await this.deletePod(w.pod);
      }
    } catch (e) {
      this.log.error(`pod ${key}: stopping failed: ${String(e)}`);
    } finally {
      if (this.workers.get(key) === w) this.workers.delete(key);
      this.terminating.delete(key);
    }
  }

  private async deletePod(pod: Pod): Promise<void> {
    try {
      await this.api.delete(
        `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`,
        {
          apiVersion: "v1",
          kind: "DeleteOptions",
          gracePeriodSeconds: 0,
          preconditions: { uid: pod.metadata.uid },
        },
      );
      this.log.info(`pod ${pod.metadata.namespace}/${pod.metadata.name}: deleted`);
    } catch (e) {
      if (!(e instanceof ApiError && (e.status === 404 || e.status === 409))) {
        this.log.warn(`pod ${pod.metadata.namespace}/${pod.metadata.name}: delete: ${String(e)}`);
      }
    }
  }

  /** Stops every pod quickly (kubelet shutdown). */
  async stopAll(graceMs: number): Promise<void> {
    this.informer?.stop();
    await Promise.all(
      [...this.workers.values()].map(w => w.stop(graceMs, true).catch(() => undefined)),
    );
  }
}
