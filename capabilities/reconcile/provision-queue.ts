/**
 * Provisioning stage: each Gateway's managed-proxy objects (its Service replacement, then its
 * Deployment/Service/Secrets/…, then the objects its settings no longer call for) applied in a
 * bounded queue of its own (keyed-queue.ts), one job per Gateway, latest plan wins. The build
 * hands a Gateway's plan over and goes on to push: a push never waits behind provisioning, and
 * one Gateway's slow or failing API calls hold back neither the others nor the next change.
 */
import { KubeManifest } from "../workload";
import { createHash } from "node:crypto";
import { KubeClient, statusOf } from "../kube/client";
import { isManagedByUs } from "../ownership/proxies";

import { Clock, KubeObject, Snapshot, systemClock } from "../snapshot";
import { objectPath } from "../snapshot/kinds";
import { KeyedQueue, Offered } from "./keyed-queue";
import type { GatewayPlan } from "./plan";
import type { Logger } from "./logger";

const FIELD_MANAGER = "kengine-gateway";

/** What one Gateway's provisioning needs from its plan. */
export type ProvisionPlan = Pick<GatewayPlan, "key" | "manifests" | "stale" | "replaceService">;

export interface ProvisionQueueOptions {
  readonly kube: Pick<KubeClient, "request">;
  readonly log: Logger;
  /** The current snapshot (a watched object gone missing is applied again). */
  readonly snapshot: () => Snapshot;
  /** Only the leader provisions: asked when a job starts. */
  readonly isLeader: () => boolean;
  /** Gateways provisioned at once (default 8). */
  readonly concurrency?: number;
  /** Gateways waiting at most (default 4096); beyond: refused, `onSpace` asks for them again. */
  readonly limit?: number;
  /** A Gateway's provisioning running longer than this is logged as slow (default 5 s). */
  readonly slowMs?: number;
  /** The queue has room again after refusing a Gateway (the reconciler builds again). */
  readonly onSpace?: () => void;
  readonly clock?: Clock;
}

export class ProvisionQueue {
  readonly #queue: KeyedQueue<ProvisionPlan>;
  /** Path → hash of what was last applied ("deleted": removed), per leader term. */
  readonly #applied = new Map<string, string>();
  /**
   * "namespace/name|address" of proxies' Services deleted to be made again for that address
   * (plan.ts): once each per leader term, so a platform that drops or ignores the requested
   * address cannot make us delete the Service over and over (the Service then keeps requesting
   * it in place, and the Gateway says AddressNotAssigned or AddressNotUsable).
   */
  readonly #replaced = new Set<string>();

  constructor(private readonly o: ProvisionQueueOptions) {
    this.#queue = new KeyedQueue<ProvisionPlan>({
      concurrency: o.concurrency ?? 8,
      limit: o.limit ?? 4096,
      run: (key, plan) => this.#run(key, plan),
      onError: (key, e) => o.log.error("provisioning failed", { gateway: key, error: String(e) }),
      onSpace: o.onSpace,
    });
  }

  /** Hands a Gateway's plan over (replacing the one waiting for that Gateway). */
  offer(plan: ProvisionPlan): Offered {
    return this.#queue.offer(plan.key, plan);
  }

  /** Everything is applied again at the next offer (resync: repairs deletions). */
  reapplyAll(): void {
    this.#applied.clear();
  }

  /** A new leader term: re-apply everything, and a Service may be replaced once more. */
  newTerm(): void {
    this.#applied.clear();
    this.#replaced.clear();
  }

  /** Leadership lost or stopping: drops the waiting plans (running ones finish). */
  clear(): void {
    this.#queue.clear();
  }

  /** Resolves once no Gateway waits or provisions. */
  idle(): Promise<void> {
    return this.#queue.idle();
  }

  /** Gateways provisioning now. */
  get running(): readonly string[] {
    return this.#queue.running;
  }

  async #run(key: string, p: ProvisionPlan): Promise<void> {
    if (!this.o.isLeader()) return;
    const clock = this.o.clock ?? systemClock;
    const slow = clock.setTimeout(
      () =>
        this.o.log.warn("provisioning is slow for a Gateway: its pushes do not wait for it", {
          gateway: key,
        }),
      this.o.slowMs ?? 5_000,
    );
    try {
      await this.#replaceServices(p.replaceService ? [p.replaceService] : []);
      await this.#provision(p.manifests);
      await this.#removeStale(p.stale);
    } finally {
      clock.clearTimeout(slow);
    }
  }

  /**
   * Deletes proxies' Services that must be made again to get another address (plan.ts
   * replaceService); only the very object planned on (uid precondition), once per address.
   */
  async #replaceServices(services: NonNullable<GatewayPlan["replaceService"]>[]): Promise<void> {
    const key = (s: (typeof services)[number]) => `${s.namespace}/${s.name}|${s.address}`;
    for (const s of services) {
      if (this.#replaced.has(key(s))) continue;
      this.#replaced.add(key(s));
      try {
        await this.o.kube.request("DELETE", objectPath("v1", "Service", s.namespace, s.name), {
          preconditions: { uid: s.uid },
        });
        this.o.log.info("re-creating the proxies' Service for its requested address", {
          service: `${s.namespace}/${s.name}`,
        });
      } catch (e) {
        if (statusOf(e) !== 404 && statusOf(e) !== 409) {
          this.#replaced.delete(key(s));
          this.o.log.warn("cannot re-create the proxies' Service", {
            service: `${s.namespace}/${s.name}`,
            error: String(e),
          });
        }
      }
    }
  }

  /** Deletes objects of ours that the settings no longer call for (once per leader term). */
  async #removeStale(stale: GatewayPlan["stale"]): Promise<void> {
    for (const o of stale) {
      const path = objectPath(o.apiVersion, o.kind, o.namespace, o.name);
      if (this.#applied.get(path) === "deleted") continue;
      try {
        let options: object | undefined;
        if (o.onlyIfOurs) {
          const found = await this.o.kube.request<KubeObject>("GET", path);
          if (!isManagedByUs(found)) {
            this.#applied.set(path, "deleted"); // not ours: leave it alone
            continue;
          }
          options = { preconditions: { uid: found.metadata.uid } };
        }
        await this.o.kube.request("DELETE", path, options);
        this.o.log.info("removed", { kind: o.kind, object: `${o.namespace}/${o.name}` });
      } catch (e) {
        if (statusOf(e) !== 404) {
          this.o.log.warn("cannot remove", {
            kind: o.kind,
            object: `${o.namespace}/${o.name}`,
            error: String(e),
          });
          continue;
        }
      }
      this.#applied.set(path, "deleted");
    }
  }

  /** Server-side applies what changed since it was last applied (and what went missing). */
  async #provision(manifests: readonly KubeManifest[]): Promise<void> {
    const snapshot = this.o.snapshot();
    await Promise.all(
      manifests.map(async m => {
        // A namespace being deleted takes its Gateway with it: the API server refuses new
        // objects there, so nothing is applied (and no error logged on every build until it is gone).
        if (terminating(snapshot, m.metadata.namespace)) return;
        const path = objectPath(m.apiVersion, m.kind, m.metadata.namespace, m.metadata.name);
        const body = JSON.stringify(m);
        const hash = createHash("sha256").update(body).digest("hex");
        const watched = m.kind === "Service" || m.kind === "ConfigMap" || m.kind === "Secret";
        const present =
          !watched ||
          snapshot.objects[m.kind as "Service"].has(`${m.metadata.namespace}/${m.metadata.name}`);
        if (this.#applied.get(path) === hash && present) return;
        try {
          await this.o.kube.request(
            "PATCH",
            `${path}?fieldManager=${FIELD_MANAGER}&force=true`,
            m,
            "application/apply-patch+yaml",
          );
          this.#applied.set(path, hash);
          this.o.log.debug("applied", {
            kind: m.kind,
            object: `${m.metadata.namespace}/${m.metadata.name}`,
          });
        } catch (e) {
          this.#applied.delete(path);
          // the namespace's deletion began before our watch said so: not an error of ours
          const level = /NamespaceTerminating/.test(String(e)) ? "debug" : "error";
          this.o.log[level]("cannot apply", {
            kind: m.kind,
            object: `${m.metadata.namespace}/${m.metadata.name}`,
            error: e instanceof Error ? e.message : String(e),
          });
        }
      }),
    );
  }
}

/** Is the namespace being deleted (as the snapshot's Namespace says)? */
const terminating = (snapshot: Snapshot, ns: string | undefined): boolean =>
  ns !== undefined && snapshot.objects.Namespace.get(ns)?.metadata.deletionTimestamp !== undefined;
