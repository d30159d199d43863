/**
 * KengineProxy: one object per proxy pod (owned by the pod) that shows what the controller knows
 * of it — desired vs applied config hash, Synced, the admin channel, the proxy's last refusal.
 * Pure: the reconciler writes what these functions return, only when it changed.
 */
import type { ProxyState } from "../proxies";
import { GATEWAY_NAME_LABEL, MANAGED_BY, MANAGED_BY_LABEL } from "../provision";

export const KENGINE_PROXY_API = "gateway.kengine.io/v1alpha1";

export interface ProxyRecord {
  readonly namespace: string;
  readonly gateway: string;
  readonly pod: string;
  readonly podUid?: string;
  readonly address: string;
  readonly state: ProxyState | undefined;
  /** Expiry of the serving certificate the proxy presented on its last mTLS handshake. */
  readonly serverCertificateNotAfter?: Date;
}

const short = (hash: string | undefined) => (hash ? hash.slice(0, 12) : "");
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

export function kengineProxyObject(r: ProxyRecord) {
  return {
    apiVersion: KENGINE_PROXY_API,
    kind: "KengineProxy",
    metadata: {
      name: r.pod,
      namespace: r.namespace,
      labels: { [GATEWAY_NAME_LABEL]: r.gateway, [MANAGED_BY_LABEL]: MANAGED_BY },
      ...(r.podUid
        ? { ownerReferences: [{ apiVersion: "v1", kind: "Pod", name: r.pod, uid: r.podUid }] }
        : {}),
    },
    spec: { gateway: r.gateway, pod: r.pod, address: r.address },
  };
}

export interface KengineProxyStatus {
  readonly desiredHash: string;
  readonly appliedHash: string;
  readonly lastSyncTime?: string;
  readonly lastError: string;
  readonly attempts: number;
  readonly channel: {
    readonly state: "Verified" | "Unreachable" | "Unknown";
    readonly serverCertificateNotAfter?: string;
  };
  readonly conditions: readonly {
    type: "Synced";
    status: "True" | "False" | "Unknown";
    reason: string;
    message: string;
    lastTransitionTime: string;
  }[];
}

/** The status to store; lastTransitionTime of Synced moves only when its status changes. */
export function kengineProxyStatus(
  r: ProxyRecord,
  previous: KengineProxyStatus | undefined,
  now: Date,
): KengineProxyStatus {
  const s = r.state;
  let synced: { status: "True" | "False" | "Unknown"; reason: string; message: string };
  let applied: string | undefined;
  let lastSync: number | undefined;
  let lastError = "";
  let attempts = 0;
  let channel: KengineProxyStatus["channel"]["state"] = "Unknown";
  if (!s)
    synced = {
      status: "Unknown",
      reason: "NotTracked",
      message: "the controller does not push to this proxy (not leader, or no config)",
    };
  else if (s.phase === "Programmed") {
    applied = s.hash;
    lastSync = s.at;
    channel = "Verified";
    synced =
      s.hash === s.desiredHash
        ? { status: "True", reason: "Synced", message: "runs the current configuration" }
        : { status: "False", reason: "Pending", message: "a newer configuration is being pushed" };
  } else if (s.phase === "Pending") {
    applied = s.applied?.hash;
    lastSync = s.applied?.at;
    channel = s.applied ? "Verified" : "Unknown";
    synced = {
      status: "False",
      reason: "Pending",
      message: "the current configuration is being pushed",
    };
  } else {
    applied = s.applied?.hash;
    lastSync = s.applied?.at;
    lastError = s.message;
    attempts = s.attempts;
    const rejected = s.error.kind === "rejected";
    channel = rejected ? "Verified" : "Unreachable";
    synced = {
      status: "False",
      reason: rejected ? "Rejected" : "Unreachable",
      message: rejected
        ? "the proxy refused the configuration; it keeps serving the previous one"
        : "the proxy's management listener cannot be reached",
    };
  }
  const old = previous?.conditions.find(c => c.type === "Synced");
  const lastTransitionTime =
    old && old.status === synced.status ? old.lastTransitionTime : iso(now.getTime());
  return {
    desiredHash: short(s?.desiredHash),
    appliedHash: short(applied),
    ...(lastSync ? { lastSyncTime: iso(lastSync) } : {}),
    lastError,
    attempts,
    channel: {
      state: channel,
      ...(r.serverCertificateNotAfter
        ? { serverCertificateNotAfter: iso(r.serverCertificateNotAfter.getTime()) }
        : {}),
    },
    conditions: [{ type: "Synced", ...synced, lastTransitionTime }],
  };
}
