/** Where each watched kind lives in the API (for the initial list and for server-side apply). */
import type { Kind } from "./types";

const GW = "/apis/gateway.networking.k8s.io/v1";

export const LIST_PATHS: Readonly<Record<Kind, string>> = {
  GatewayClass: `${GW}/gatewayclasses`,
  Gateway: `${GW}/gateways`,
  ListenerSet: `${GW}/listenersets`,
  HTTPRoute: `${GW}/httproutes`,
  GRPCRoute: `${GW}/grpcroutes`,
  TLSRoute: `${GW}/tlsroutes`,
  TCPRoute: `${GW}/tcproutes`,
  UDPRoute: `${GW}/udproutes`,
  ReferenceGrant: `${GW}/referencegrants`,
  BackendTLSPolicy: `${GW}/backendtlspolicies`,
  // Experimental channel only: a cluster without the CRD answers 404 and the kind is reported
  // missing (backendRefs to XBackends then do not resolve).
  XBackend: "/apis/gateway.networking.x-k8s.io/v1alpha1/xbackends",
  // Experimental channel only, as XBackend (no CRD: no tracing).
  XTelemetryPolicy: "/apis/gateway.networking.x-k8s.io/v1alpha1/xtelemetrypolicies",
  Service: "/api/v1/services",
  EndpointSlice: "/apis/discovery.k8s.io/v1/endpointslices",
  Secret: "/api/v1/secrets",
  ConfigMap: "/api/v1/configmaps",
  // Beta in Kubernetes 1.33–1.36 and off by default: a cluster without it answers 404 and the
  // kind is reported missing (CA references to bundles then do not resolve).
  ClusterTrustBundle: "/apis/certificates.k8s.io/v1beta1/clustertrustbundles",
  Namespace: "/api/v1/namespaces",
  KengineParameters: "/apis/gateway.kengine.io/v1alpha1/kengineparameters",
  Ingress: "/apis/networking.k8s.io/v1/ingresses",
  IngressClass: "/apis/networking.k8s.io/v1/ingressclasses",
};

/**
 * The API path of one object of a watched kind (`name`), or of its collection: across the
 * cluster, or in `namespace` for namespaced kinds.
 */
export function kindPath(kind: Kind, namespace?: string, name?: string): string {
  const list = LIST_PATHS[kind];
  const cut = list.lastIndexOf("/");
  const at =
    namespace === undefined
      ? list
      : `${list.slice(0, cut)}/namespaces/${encodeURIComponent(namespace)}${list.slice(cut)}`;
  return name === undefined ? at : `${at}/${encodeURIComponent(name)}`;
}

/** The API path of a namespaced object we provision (server-side apply target). */
export function objectPath(
  apiVersion: string,
  kind: string,
  namespace: string,
  name: string,
): string {
  // Secret, Service, Deployment, PodDisruptionBudget: -s; NetworkPolicy: -ies.
  const lower = kind.toLowerCase();
  const plural = lower.endsWith("y") ? `${lower.slice(0, -1)}ies` : `${lower}s`;
  const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return `${base}/namespaces/${encodeURIComponent(namespace)}/${plural}/${encodeURIComponent(name)}`;
}
