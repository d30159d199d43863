/**
 * The Ingress report stage, after the status stage of every build (docs/ingress.md): each
 * Ingress of our classes gets an Event when whether it is served changes (ingress-events.ts)
 * and its `status.loadBalancer` (ingress-status.ts). Only the leader writes either.
 */
import type { V1Ingress } from "@kubernetes/client-node";
import type { KubeClient } from "../kube/client";
import { Snapshot, systemClock } from "../snapshot";
import { kindPath } from "../snapshot/kinds";
import type { GatewayAddress } from "../status";
import type { BuildOutput } from "./build-stage";
import type { EventRecorder } from "./events";
import { CLASS_TEXTS, INGRESS_CLASS_REF, INGRESS_REF, IngressEvents } from "./ingress-events";
import { IngressStatus, IngressStatusDeps } from "./ingress-status";
import type { Logger } from "./logger";

export interface IngressReportDeps {
  readonly kube: KubeClient;
  readonly isLeader: () => boolean;
  readonly events: EventRecorder;
  /** Published instead of the proxies' Service's addresses (KENGINE_INGRESS_STATUS_ADDRESSES). */
  readonly staticAddresses?: readonly string[];
  readonly log: Logger;
  /** Tests: the status writer's clock and patch. */
  readonly status?: Partial<Pick<IngressStatusDeps, "clock" | "patch">>;
}

export class IngressReportStage {
  readonly #status: IngressStatus;
  readonly #served = new IngressEvents();
  readonly #classes = new IngressEvents(CLASS_TEXTS);
  readonly #events: EventRecorder;

  constructor(d: IngressReportDeps) {
    this.#events = d.events;
    this.#status = new IngressStatus({
      isLeader: d.isLeader,
      patch:
        d.status?.patch ??
        (async (namespace, name, resourceVersion, status) => {
          await d.kube.request(
            "PATCH",
            `${kindPath("Ingress", namespace, name)}/status`,
            { metadata: resourceVersion ? { resourceVersion } : {}, status },
            "application/merge-patch+json",
          );
        }),
      clock: d.status?.clock ?? systemClock,
      staticAddresses: d.staticAddresses,
      log: d.log,
    });
  }

  /** A new term as leader: every Ingress's Event is recorded again. */
  newTerm(): void {
    this.#served.forget();
    this.#classes.forget();
  }

  /** One build's Ingress Events and status writes (addresses: per Gateway, from the status stage). */
  run(
    snapshot: Snapshot,
    built: Pick<BuildOutput, "ingresses" | "ingressTargets"> &
      Partial<Pick<BuildOutput, "ingressClasses">>,
    addresses: ReadonlyMap<string, readonly GatewayAddress[]>,
  ): void {
    for (const [key, event] of this.#served.observe(built.ingresses)) {
      const o = snapshot.objects.Ingress.get(key);
      if (o)
        this.#events.record(
          {
            namespace: o.metadata.namespace ?? "",
            name: o.metadata.name,
            uid: o.metadata.uid,
            regarding: INGRESS_REF,
          },
          event,
        );
    }
    // An IngressClass is cluster-scoped: its Events live in the default namespace.
    for (const [name, event] of this.#classes.observeTexts(built.ingressClasses ?? new Map())) {
      const o = snapshot.objects.IngressClass.get(name);
      if (o)
        this.#events.record(
          { namespace: "default", name, uid: o.metadata.uid, regarding: INGRESS_CLASS_REF },
          event,
        );
    }
    this.#status.update({
      ingresses: [...built.ingressTargets].flatMap(([key, gateway]) => {
        const ingress = snapshot.objects.Ingress.get(key) as unknown as V1Ingress | undefined;
        return ingress ? [{ ingress, gateway }] : [];
      }),
      addresses,
    });
  }
}
