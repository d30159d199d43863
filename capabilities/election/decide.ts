/**
 * The election's decision, pure: given what this replica last observed of the Lease and when,
 * what to do now. A Lease expires `leaseDurationSeconds` after the earlier of two instants: its
 * `renewTime` (the holder's clock, as written) and the moment this replica first saw that
 * renewal (its own clock, as client-go judges). The first lets a restarted replica take a Lease
 * its dead predecessor stopped renewing long ago at once, instead of waiting a whole lease
 * period from its own first look; the second bounds the wait when the holder's clock runs
 * ahead. It assumes the replicas' clocks agree to well within a lease period (NTP): a holder
 * whose clock lags by more than that could lose a live Lease.
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
  const renewedAt = r.renewTime !== undefined ? Date.parse(r.renewTime) : NaN;
  const since = Number.isFinite(renewedAt) ? Math.min(renewedAt, seen.observedAt) : seen.observedAt;
  const expiresAt = since + r.leaseDurationSeconds * 1000;
  if (now >= expiresAt) return { op: "takeover" };
  return { op: "follow", leader: r.holderIdentity, retryAt: expiresAt };
}

/** Whether a newly read record differs from the observed one (a renewal or a new holder). */
export const changed = (prev: LeaseRecord | undefined, next: LeaseRecord | undefined): boolean =>
  prev?.holderIdentity !== next?.holderIdentity ||
  prev?.renewTime !== next?.renewTime ||
  prev?.resourceVersion !== next?.resourceVersion;
