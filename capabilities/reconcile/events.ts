/**
 * Kubernetes Events on a Gateway for its proxies' push failures and recoveries.
 *
 * `PushEvents` decides (pure): a proxy that rejects a config is reported at once; one that cannot
 * be reached only after `unreachableAfter` attempts in a row (a pod that is still starting is not
 * news); a streak of retries with the same message is reported once; the first success after a
 * reported failure is a recovery. `EventRecorder` writes them as events.k8s.io/v1 Events, one
 * object per Gateway, proxy and reason, whose `series` counts repeats (the API's own
 * deduplication), so a flapping proxy does not flood `kubectl get events`.
 */
import { createHash } from "node:crypto";
import type { KubeClient } from "../kube/client";
import { statusOf } from "../kube/client";
import type { FleetEvent } from "../proxies";
import { describeAdminError } from "../proxies";

export type PushEventReason =
  | "PushFailed"
  | "PushRecovered"
  | "LastGoodTooLarge"
  | "IngressNotServed"
  | "IngressServed"
  | "IngressClassProblem"
  | "IngressClassResolved";

export interface PushEvent {
  /** Proxy name ("namespace/pod"); empty for an Event about the Gateway's proxies as a whole. */
  readonly proxy: string;
  readonly reason: PushEventReason;
  readonly type: "Warning" | "Normal";
  readonly note: string;
}

export const REPORTING_CONTROLLER = "kengine.io/gateway-controller";

/** The Event when a Gateway's config is too large for its last-good Secret (last-good.ts). */
export const lastGoodTooLarge = (bytes: number, max: number): PushEvent => ({
  proxy: "",
  reason: "LastGoodTooLarge",
  type: "Warning",
  note: `the proxies' config (${bytes} bytes) is larger than a Secret can hold (${max} bytes): new proxy pods start from the bootstrap config and are not Ready until the controller programs them`,
});

export class PushEvents {
  /** The failure message last reported, by proxy. */
  readonly #reported = new Map<string, string>();
  constructor(private readonly unreachableAfter = 3) {}

  observe(e: FleetEvent): PushEvent | undefined {
    switch (e.type) {
      case "failed": {
        const threshold = e.error.kind === "rejected" ? 1 : this.unreachableAfter;
        const message = describeAdminError(e.error);
        if (e.attempts < threshold || this.#reported.get(e.name) === message) return undefined;
        this.#reported.set(e.name, message);
        return {
          proxy: e.name,
          reason: "PushFailed",
          type: "Warning",
          note: `proxy ${e.name}: ${message} (retrying with back-off)`,
        };
      }
      case "pushed":
      case "adopted": {
        const was = this.#reported.get(e.name);
        if (was === undefined) return undefined;
        this.#reported.delete(e.name);
        return {
          proxy: e.name,
          reason: "PushRecovered",
          type: "Normal",
          note: `proxy ${e.name} runs the current configuration again, after: ${was}`,
        };
      }
      case "forgotten":
        this.#reported.delete(e.name);
        return undefined;
      default:
        return undefined;
    }
  }
}

export interface GatewayObjectRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid?: string;
  /**
   * The object the Event is about when it is not a Gateway (an Ingress, an IngressClass).
   * `clusterScoped`: the object has no namespace; the Event lives in `namespace` ("default").
   */
  readonly regarding?: {
    readonly apiVersion: string;
    readonly kind: string;
    readonly clusterScoped?: boolean;
  };
}

/**
 * The Event's name: stable per Gateway, proxy, reason and note, so a repeat becomes a series
 * (an Event's note cannot change once written).
 */
export const eventName = (
  gateway: GatewayObjectRef,
  e: Pick<PushEvent, "proxy" | "reason" | "note">,
) =>
  `${gateway.name.slice(0, 200)}.${createHash("sha256")
    .update(`${e.proxy}\0${e.reason}\0${e.note}`)
    .digest("hex")
    .slice(0, 16)}`;

/** RFC 3339 with microseconds, what MicroTime fields take. */
const microTime = (d: Date) => d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");

const MAX_NOTE = 1024;

const ACTIONS: Readonly<Record<PushEventReason, string>> = {
  PushFailed: "Push",
  LastGoodTooLarge: "Store",
  PushRecovered: "Verify",
  IngressNotServed: "Convert",
  IngressServed: "Convert",
  IngressClassProblem: "Resolve",
  IngressClassResolved: "Resolve",
};

export interface EventRecorderOptions {
  readonly kube: KubeClient;
  /** This replica (reportingInstance). */
  readonly instance: string;
  readonly onError?: (error: unknown) => void;
  readonly now?: () => Date;
}

/** Writes Events one at a time (in order), never throwing. */
export class EventRecorder {
  #queue: Promise<void> = Promise.resolve();
  constructor(private readonly o: EventRecorderOptions) {}

  record(gateway: GatewayObjectRef, e: PushEvent): void {
    this.#queue = this.#queue.then(() =>
      this.#write(gateway, e).catch(error => this.o.onError?.(error)),
    );
  }

  /** Resolves when every recorded Event has been written (or given up). */
  flushed(): Promise<void> {
    return this.#queue;
  }

  async #write(gateway: GatewayObjectRef, e: PushEvent): Promise<void> {
    const now = microTime(this.o.now?.() ?? new Date());
    const name = eventName(gateway, e);
    const base = `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(gateway.namespace)}/events`;
    try {
      await this.o.kube.request("POST", base, {
        apiVersion: "events.k8s.io/v1",
        kind: "Event",
        metadata: { name, namespace: gateway.namespace },
        eventTime: now,
        reportingController: REPORTING_CONTROLLER,
        reportingInstance: this.o.instance.slice(0, 128),
        action: ACTIONS[e.reason],
        reason: e.reason,
        type: e.type,
        note: e.note.slice(0, MAX_NOTE),
        regarding: {
          apiVersion: gateway.regarding?.apiVersion ?? "gateway.networking.k8s.io/v1",
          kind: gateway.regarding?.kind ?? "Gateway",
          ...(!gateway.regarding?.clusterScoped && { namespace: gateway.namespace }),
          name: gateway.name,
          ...(gateway.uid ? { uid: gateway.uid } : {}),
        },
        ...(e.proxy
          ? {
              related: {
                apiVersion: "v1",
                kind: "Pod",
                namespace: gateway.namespace,
                name: e.proxy.split("/").pop(),
              },
            }
          : {}),
      });
      return;
    } catch (error) {
      if (statusOf(error) !== 409) throw error;
    }
    // The same Event happened before: count it in its series.
    const existing = await this.o.kube.request<{ series?: { count?: number } }>(
      "GET",
      `${base}/${name}`,
    );
    await this.o.kube.request(
      "PATCH",
      `${base}/${name}`,
      {
        series: { count: (existing.series?.count ?? 1) + 1, lastObservedTime: now },
      },
      "application/merge-patch+json",
    );
  }
}
