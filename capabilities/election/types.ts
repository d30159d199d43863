/** Leader election on a coordination.k8s.io/v1 Lease: the data the elector works with. */

/** The parts of a Lease the elector reads and writes. */
export interface LeaseRecord {
  readonly holderIdentity: string;
  readonly leaseDurationSeconds: number;
  readonly acquireTime?: string;
  readonly renewTime?: string;
  readonly leaseTransitions: number;
  /** Optimistic-concurrency token of the stored object. */
  readonly resourceVersion: string;
}

export type LeaseWrite = Omit<LeaseRecord, "resourceVersion">;

/** A Lease store: a real one talks to the API server (kube-store.ts). */
export interface LeaseStore {
  /** The current record, or undefined when no Lease exists. */
  get(): Promise<LeaseRecord | undefined>;
  /** Creates the Lease; rejects with a ConflictError if it exists. */
  create(record: LeaseWrite): Promise<LeaseRecord>;
  /** Replaces the Lease if its resourceVersion is still `resourceVersion`; else ConflictError. */
  update(record: LeaseWrite, resourceVersion: string): Promise<LeaseRecord>;
}

export class ConflictError extends Error {
  constructor(message = "the Lease changed since it was read") {
    super(message);
    this.name = "ConflictError";
  }
}

export interface ElectionConfig {
  readonly namespace: string;
  readonly name: string;
  /** This replica's identity (pod name, or host + pid). */
  readonly identity: string;
  /** How long a Lease is valid after its last renewal (default 15 s). */
  readonly leaseDurationMs: number;
  /** A leader that has not renewed for this long stops leading (default 10 s; < leaseDuration). */
  readonly renewDeadlineMs: number;
  /** How often to try to acquire or renew (default 2 s). */
  readonly retryPeriodMs: number;
}

export const DEFAULT_ELECTION: Omit<ElectionConfig, "namespace" | "name" | "identity"> = {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};

/** Checks a configuration; returns the problems (empty when valid). */
export function electionConfigProblems(c: ElectionConfig): string[] {
  const p: string[] = [];
  if (!c.identity) p.push("identity must not be empty");
  if (!c.name || !c.namespace) p.push("the Lease's name and namespace must not be empty");
  if (!(c.retryPeriodMs > 0)) p.push("retryPeriod must be positive");
  if (!(c.renewDeadlineMs > c.retryPeriodMs))
    p.push("renewDeadline must be longer than retryPeriod");
  if (!(c.leaseDurationMs > c.renewDeadlineMs))
    p.push("leaseDuration must be longer than renewDeadline");
  return p;
}
