/** What the Reconciler is started with (reconciler.ts); every field but the first four has a default. */
import type { AcmeManagerOptions } from "../acme/manager";
import type { ElectionConfig } from "../election";
import type { KubeClient } from "../kube/client";
import type { FleetEvent } from "../proxies";
import type { ProxySettings } from "../provision";
import type { RetryPolicy } from "./list";
import type { Logger } from "./logger";

/** How often the proxies' request counters are read by default (`kubectl kengine top` waits two). */
export const TRAFFIC_INTERVAL_MS = 15_000;

export interface ReconcilerOptions {
  readonly kube: KubeClient;
  readonly log: Logger;
  /** Namespace of the controller: the Lease and the admin CA live here. */
  readonly namespace: string;
  readonly identity: string;
  readonly election?: Partial<Omit<ElectionConfig, "namespace" | "identity">>;
  /** Proxy settings before any KengineParameters apply (default: provision/settings.ts). */
  readonly defaults?: ProxySettings;
  /** How often programmed proxies are asked whether they still run their config. */
  readonly verifyIntervalMs?: number;
  /** How often provisioned objects are re-applied even if unchanged (repairs deletions). */
  readonly resyncIntervalMs?: number;
  /**
   * How often the proxies' own /metrics are read (traffic per Gateway and route); 0: never.
   * Default TRAFFIC_INTERVAL_MS.
   */
  readonly trafficIntervalMs?: number;
  /** Sees every push-engine event (metrics, tests). */
  readonly onFleetEvent?: (event: FleetEvent) => void;
  /** Admin CA rotation: time between steps for kubelets to refresh mounted files (pki/rotation.ts). */
  readonly caRotationGraceMs?: number;
  /** Retries of the start-up requests (default list.ts DEFAULT_RETRY). */
  readonly startupRetry?: RetryPolicy;
  /** A Gateway's provisioning running longer is logged as slow (default 5 s; pushes never wait for it). */
  readonly provisionWaitMs?: number;
  /** Waits between start-up retries (tests pass a fake). */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Minimum time between two writes of a Gateway's last-good Secret (last-good.ts). */
  readonly lastGoodIntervalMs?: number;
  /** Automatic HTTPS settings (back-off; tests shorten it). */
  readonly acme?: Pick<AcmeManagerOptions, "backoff" | "selfCheckTimeoutMs">;
  /**
   * Whether the reconciler watches every kind itself after listing it (default: when the client
   * can watch). Off: the caller feeds `ingest` (unit tests).
   */
  readonly watch?: boolean;
  /** A watch silent this long is restarted (watch.ts; default 60 s, KENGINE_WATCH_SILENCE). */
  readonly watchSilenceMs?: number;
  /**
   * Ingress status.loadBalancer: static addresses published instead of the proxies' Service's
   * (KENGINE_INGRESS_STATUS_ADDRESSES; docs/ingress.md).
   */
  readonly ingressStatusAddresses?: readonly string[];
}
