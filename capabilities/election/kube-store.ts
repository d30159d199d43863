/** The Lease store backed by the API server (kubernetes-fluent-client). */
import { GenericKind, K8s } from "kubernetes-fluent-client";
import { ConflictError, LeaseRecord, LeaseStore, LeaseWrite } from "./types";

class Lease extends GenericKind {
  declare spec?: Partial<Omit<LeaseRecord, "resourceVersion">>;
}
const leaseKind = { group: "coordination.k8s.io", version: "v1", kind: "Lease", plural: "leases" };

const statusOf = (e: unknown): number | undefined => (e as { status?: number } | null)?.status;

function toRecord(l: Lease): LeaseRecord {
  return {
    holderIdentity: l.spec?.holderIdentity ?? "",
    leaseDurationSeconds: l.spec?.leaseDurationSeconds ?? 0,
    acquireTime: l.spec?.acquireTime,
    renewTime: l.spec?.renewTime,
    leaseTransitions: l.spec?.leaseTransitions ?? 0,
    resourceVersion: l.metadata?.resourceVersion ?? "",
  };
}

export function kubeLeaseStore(namespace: string, name: string): LeaseStore {
  const api = () => K8s(Lease, { kindOverride: leaseKind });
  const body = (r: LeaseWrite, resourceVersion?: string): Lease =>
    ({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name, namespace, ...(resourceVersion ? { resourceVersion } : {}) },
      spec: { ...r },
    }) as Lease;
  const conflictToError = (e: unknown): never => {
    if (statusOf(e) === 409) throw new ConflictError();
    throw e;
  };
  return {
    async get() {
      try {
        return toRecord(await api().InNamespace(namespace).Get(name));
      } catch (e) {
        if (statusOf(e) === 404) return undefined;
        throw e;
      }
    },
    create: r => api().Create(body(r)).then(toRecord, conflictToError),
    // Server-side apply with metadata.resourceVersion is a precondition: 409 when it moved.
    update: (r, rv) => api().Apply(body(r, rv), { force: true }).then(toRecord, conflictToError),
  };
}
