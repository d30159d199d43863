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

/**
 * When a KengineProxy status is written. A status write per proxy per config change would make
 * the controller's API requests grow with the number of proxies, so only what a user must see at
 * once is written at once; the routine movement of a healthy fleet (hashes, last sync time,
 * retry counts, the brief Pending of a push in flight) is written once it has settled.
 */
export interface ProxyStatusPolicy {
  /** A routine change is written once the proxy's status has been steady this long. */
  readonly settleMs: number;
  /** Under endless churn, a routine change waits at most this long (then the truth is written). */
  readonly maxStaleMs: number;
}

/** Steady for 5 s; at most 5 minutes behind (the node-status report period of the kubelet). */
export const PROXY_STATUS_POLICY: ProxyStatusPolicy = { settleMs: 5_000, maxStaleMs: 300_000 };

/** What the controller remembers of one KengineProxy's status between builds. */
export interface ProxyStatusTrack {
  /** The status last written (undefined: none yet, e.g. a new leader). */
  readonly written: KengineProxyStatus | undefined;
  /** The last status computed, without times that move by themselves. */
  readonly computedKey: string;
  /** Epoch ms since when `computedKey` has stayed the same and no push was in flight. */
  readonly steadySince: number;
  /** Epoch ms since when the written status has been behind the computed one. */
  readonly behindSince: number | undefined;
}

export type ProxyStatusDecision =
  | { readonly write: true; readonly why: "first" | "transition" | "settled" | "stale" }
  | { readonly write: false; readonly recheckAt: number | undefined };

/** The status as compared: lastTransitionTime follows Synced, so it adds nothing. */
function statusKey(s: KengineProxyStatus): string {
  return JSON.stringify({
    ...s,
    conditions: s.conditions.map(({ lastTransitionTime: _t, ...c }) => c),
  });
}

const ERROR_REASONS = new Set(["Rejected", "Unreachable", "NotTracked"]);

/**
 * Whether the difference between the written and the next status is one a user must see at
 * once: the proxy starts or stops failing, its error or admin channel changes, or it gains or
 * loses a running config. Hash and time updates of a healthy proxy, and Synced moving between
 * Synced and Pending while a config is pushed, are not.
 */
export function isTransition(written: KengineProxyStatus, next: KengineProxyStatus): boolean {
  const was = written.conditions[0]?.reason ?? "";
  const is = next.conditions[0]?.reason ?? "";
  return (
    (was !== is && (ERROR_REASONS.has(was) || ERROR_REASONS.has(is))) ||
    written.lastError !== next.lastError ||
    written.channel.state !== next.channel.state ||
    written.channel.serverCertificateNotAfter !== next.channel.serverCertificateNotAfter ||
    (written.appliedHash === "") !== (next.appliedHash === "")
  );
}

/**
 * Decides whether to write `next` now. `rolling`: a newer config is being pushed to a proxy that
 * runs an earlier one (a normal rollout, not a state to show). Returns the decision and the
 * track to keep; after a successful write the caller keeps `written(track, next)`.
 */
export function decideProxyStatusWrite(
  track: ProxyStatusTrack | undefined,
  next: KengineProxyStatus,
  rolling: boolean,
  now: number,
  policy: ProxyStatusPolicy = PROXY_STATUS_POLICY,
): { decision: ProxyStatusDecision; track: ProxyStatusTrack } {
  const key = statusKey(next);
  const written = track?.written;
  const steadySince = track && track.computedKey === key && !rolling ? track.steadySince : now;
  if (written && statusKey(written) === key)
    return {
      decision: { write: false, recheckAt: undefined },
      track: { written, computedKey: key, steadySince, behindSince: undefined },
    };
  const behindSince = track?.behindSince ?? now;
  const kept: ProxyStatusTrack = { written, computedKey: key, steadySince, behindSince };
  const write = (why: "first" | "transition" | "settled" | "stale") => ({
    decision: { write: true, why } as const,
    track: kept,
  });
  if (!written) return write("first");
  if (isTransition(written, next)) return write("transition");
  if (now - behindSince >= policy.maxStaleMs) return write("stale");
  if (!rolling && now - steadySince >= policy.settleMs) return write("settled");
  const recheckAt = Math.min(
    behindSince + policy.maxStaleMs,
    rolling ? Infinity : steadySince + policy.settleMs,
  );
  return { decision: { write: false, recheckAt }, track: kept };
}

/** The track after `status` was written. */
export function writtenTrack(
  track: ProxyStatusTrack,
  status: KengineProxyStatus,
): ProxyStatusTrack {
  return { ...track, written: status, behindSince: undefined };
}
