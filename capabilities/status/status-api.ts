/** StatusApi backed by the API server: reads objects, writes /status with a version precondition. */
import { KubeClient } from "../kube/client";
import { StatusKind, StatusUpdate, StoredObject } from "./compute";
import { StatusApi } from "./writer";

const PLURALS: Record<StatusKind, string> = {
  GatewayClass: "gatewayclasses",
  Gateway: "gateways",
  ListenerSet: "listenersets",
  BackendTLSPolicy: "backendtlspolicies",
  HTTPRoute: "httproutes",
  GRPCRoute: "grpcroutes",
  TLSRoute: "tlsroutes",
  TCPRoute: "tcproutes",
  UDPRoute: "udproutes",
  XTelemetryPolicy: "xtelemetrypolicies",
};

/** Kinds of the experimental API group (gateway.networking.x-k8s.io/v1alpha1). */
const X_KINDS: ReadonlySet<StatusKind> = new Set<StatusKind>(["XTelemetryPolicy"]);

export function objectPath(kind: StatusKind, namespace: string | undefined, name: string): string {
  const ns = namespace ? `/namespaces/${encodeURIComponent(namespace)}` : "";
  const api = X_KINDS.has(kind)
    ? "gateway.networking.x-k8s.io/v1alpha1"
    : "gateway.networking.k8s.io/v1";
  return `/apis/${api}${ns}/${PLURALS[kind]}/${encodeURIComponent(name)}`;
}

export function kubeStatusApi(client: KubeClient): StatusApi {
  return {
    async read(kind, namespace, name) {
      try {
        return await client.request<StoredObject>("GET", objectPath(kind, namespace, name));
      } catch (e) {
        if ((e as { status?: number }).status === 404) return undefined;
        throw e;
      }
    },
    writeStatus: (u: StatusUpdate) =>
      client.request<StoredObject>(
        "PATCH",
        `${objectPath(u.kind, u.namespace, u.name)}/status`,
        {
          metadata: u.resourceVersion ? { resourceVersion: u.resourceVersion } : {},
          status: u.status,
        },
        "application/merge-patch+json",
      ),
  };
}
