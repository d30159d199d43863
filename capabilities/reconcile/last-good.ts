/**
 * Last known good config (docs/architecture.md §4): per Gateway, a Secret holding the last sealed
 * config a proxy of the Gateway accepted, so a pod that starts while no controller runs (or
 * before it pushes) serves that config at once (workload/pod.ts: `caddy run --resume`).
 *
 * When to write, decided here (pure): after a proxy of the Gateway accepted (pushed or adopted)
 * the Gateway's current desired config, and only if the Secret does not already hold that hash
 * for that proxy build; at most once per `intervalMs` per Gateway (a burst of route changes
 * writes the newest accepted config once the interval has passed, not every step of it). A
 * refused config is never accepted, so it is never stored. A config larger than a Secret can
 * hold is not stored: the Secret is written empty (annotated with the hash it was too large
 * for), so new pods start from the bootstrap config rather than from an older config.
 */
import type { Kind, KubeObject } from "../snapshot";
import {
  COMPONENT_LABEL,
  LAST_GOOD_COMPONENT,
  LAST_GOOD_HASH_ANNOTATION,
  LAST_GOOD_KEY_ANNOTATION,
  LAST_GOOD_STORED_ANNOTATION,
  MANAGED_BY,
  MANAGED_BY_LABEL,
} from "../provision";

/** The API server's limit on a Secret's data (the sum of its values' sizes). */
export const MAX_SECRET_DATA_BYTES = 1024 * 1024;
/** Minimum time between two writes of one Gateway's last-good Secret. */
export const DEFAULT_LAST_GOOD_INTERVAL_MS = 5_000;

/** What a last-good Secret says it holds (its annotations). */
export interface StoredLastGood {
  readonly hash: string;
  /** The Secret key, i.e. the proxy build (workload/pod.ts lastGoodKey). */
  readonly key: string;
  /** False: the config was too large and the Secret holds none. */
  readonly stored: boolean;
}

/** Reads a last-good Secret's annotations; undefined when absent or not written by us. */
export function storedLastGood(secret: KubeObject | undefined): StoredLastGood | undefined {
  const a = secret?.metadata.annotations;
  const hash = a?.[LAST_GOOD_HASH_ANNOTATION];
  const key = a?.[LAST_GOOD_KEY_ANNOTATION];
  if (!hash || !key) return undefined;
  return { hash, key, stored: a[LAST_GOOD_STORED_ANNOTATION] === "true" };
}

/**
 * What the controller keeps of an object it watches: our last-good Secrets without their data
 * (up to 1 MiB of config each, and private keys); it reads only their annotations.
 */
export function withoutLastGoodData(kind: Kind, o: KubeObject): KubeObject {
  if (
    kind !== "Secret" ||
    o.metadata.labels?.[COMPONENT_LABEL] !== LAST_GOOD_COMPONENT ||
    o.metadata.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY
  )
    return o;
  const { data: _data, ...rest } = o as KubeObject & { data?: unknown };
  return rest as KubeObject;
}

/**
 * Whether a pod starting now would start from the desired config (or, beyond the limit, from
 * the bootstrap, which only the controller programs): the Secret was written for that hash. A
 * CA rotation step waits for this, so no pod can start from a config that trusts only a CA the
 * controller no longer uses (it would serve, but could never be programmed again).
 */
export const lastGoodCurrent = (
  desiredHash: string | undefined,
  stored: StoredLastGood | undefined,
): boolean => desiredHash !== undefined && stored?.hash === desiredHash;

/** A config a proxy of the Gateway accepted: its hash, the proxy build's key, its size. */
export interface AcceptedConfig {
  readonly hash: string;
  readonly key: string;
  readonly bytes: number;
}

export interface LastGoodTrack {
  /** What the Secret holds, as last read from the cluster or written by this replica. */
  readonly stored?: StoredLastGood;
  /** When this replica last wrote the Secret (epoch ms). */
  readonly writtenAt?: number;
}

export type LastGoodDecision =
  | { readonly action: "none" }
  | { readonly action: "wait"; readonly until: number }
  /** `store: false`: too large for a Secret; write it empty (new pods use the bootstrap). */
  | { readonly action: "write"; readonly store: boolean };

export interface LastGoodPolicy {
  readonly intervalMs: number;
  readonly maxBytes: number;
}

export const DEFAULT_LAST_GOOD_POLICY: LastGoodPolicy = {
  intervalMs: DEFAULT_LAST_GOOD_INTERVAL_MS,
  maxBytes: MAX_SECRET_DATA_BYTES,
};

/** Whether (and when) to write the Secret for a config a proxy accepted. */
export function decideLastGood(
  track: LastGoodTrack,
  accepted: AcceptedConfig,
  now: number,
  policy: LastGoodPolicy = DEFAULT_LAST_GOOD_POLICY,
): LastGoodDecision {
  const store = accepted.bytes <= policy.maxBytes;
  const s = track.stored;
  if (s && s.hash === accepted.hash && s.key === accepted.key && s.stored === store)
    return { action: "none" };
  if (track.writtenAt !== undefined && now < track.writtenAt + policy.intervalMs)
    return { action: "wait", until: track.writtenAt + policy.intervalMs };
  return { action: "write", store };
}
