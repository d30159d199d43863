/**
 * The election's decision, pure: given what this replica last observed of the Lease and when,
 * what to do now. Expiry is judged on this replica's own clock from the moment it saw the record
 * change (as client-go does), so clock skew between replicas cannot steal a live lease.
 */
import { LeaseRecord } from "./types";

export interface Observation {
  /** The record as last read, or undefined when no Lease exists. */
  readonly record: LeaseRecord | undefined;
  /** Local time (ms) when this replica first saw this holder/renewTime. */
  readonly observedAt: number;
}

export type Decision =
  | { readonly op: "create" }
  | { readonly op: "renew" }
  | { readonly op: "takeover" }
  | { readonly op: "follow"; readonly leader: string; readonly retryAt: number };

export function decide(identity: string, seen: Observation, now: number): Decision {
  const r = seen.record;
  if (!r) return { op: "create" };
  if (r.holderIdentity === identity) return { op: "renew" };
  if (r.holderIdentity === "") return { op: "takeover" };
  const expiresAt = seen.observedAt + r.leaseDurationSeconds * 1000;
  if (now >= expiresAt) return { op: "takeover" };
  return { op: "follow", leader: r.holderIdentity, retryAt: expiresAt };
}

/** Whether a newly read record differs from the observed one (a renewal or a new holder). */
export const changed = (prev: LeaseRecord | undefined, next: LeaseRecord | undefined): boolean =>
  prev?.holderIdentity !== next?.holderIdentity ||
  prev?.renewTime !== next?.renewTime ||
  prev?.resourceVersion !== next?.resourceVersion;
