/**
 * The Lease store backed by the API server, over the controller's own client (kube/client.ts).
 *
 * Not kubernetes-fluent-client: its 3.11.6 `K8s()` builds a new undici Agent for every request
 * with a 10-minute keep-alive and never closes it, so each request would leave a connection and
 * its TLS state alive for ten minutes (hack/bench/heap-kfc.ts measures it); the election renews
 * every retryPeriod, so hundreds of idle connections would pile up.
 */
import { KubeClient, kubeClient } from "../kube/client";
import { ConflictError, LeaseRecord, LeaseStore, LeaseWrite } from "./types";

interface Lease {
  readonly metadata?: { readonly resourceVersion?: string };
  readonly spec?: Partial<Omit<LeaseRecord, "resourceVersion">>;
}

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

/** The field manager of the Lease's server-side applies (the one earlier replicas used). */
const FIELD_MANAGER = "pepr";

export function kubeLeaseStore(
  namespace: string,
  name: string,
  kube: KubeClient = kubeClient(),
): LeaseStore {
  const collection = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  const path = `${collection}/${encodeURIComponent(name)}`;
  const body = (r: LeaseWrite, resourceVersion?: string) => ({
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name, namespace, ...(resourceVersion ? { resourceVersion } : {}) },
    spec: { ...r },
  });
  const conflictToError = (e: unknown): never => {
    if (statusOf(e) === 409) throw new ConflictError();
    throw e;
  };
  return {
    async get() {
      try {
        return toRecord(await kube.request<Lease>("GET", path));
      } catch (e) {
        if (statusOf(e) === 404) return undefined;
        throw e;
      }
    },
    create: r => kube.request<Lease>("POST", collection, body(r)).then(toRecord, conflictToError),
    // Server-side apply with metadata.resourceVersion is a precondition: 409 when it moved.
    update: (r, rv) =>
      kube
        .request<Lease>(
          "PATCH",
          `${path}?fieldManager=${FIELD_MANAGER}&force=true`,
          body(r, rv),
          "application/apply-patch+yaml",
        )
        .then(toRecord, conflictToError),
  };
}
