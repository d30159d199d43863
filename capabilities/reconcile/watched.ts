/** The kinds the controller watches, with the model Pepr (or any kubernetes-fluent-client watch) uses. */
import {
  GenericClass,
  GenericKind,
  K8s,
  RegisterKind,
  WatchCfg,
  kind as k8s,
} from "kubernetes-fluent-client";
import {
  BackendTLSPolicy,
  GRPCRoute,
  Gateway,
  GatewayClass,
  HTTPRoute,
  ListenerSet,
  ReferenceGrant,
  TCPRoute,
  TLSRoute,
  UDPRoute,
} from "../generated";
import type { Kind, KubeObject } from "../snapshot";

/** Our parameters resource (deploy/crds/gateway.kengine.io_kengineparameters.yaml). */
export class KengineParameters extends GenericKind {
  declare spec?: Record<string, unknown>;
}
RegisterKind(KengineParameters, {
  group: "gateway.kengine.io",
  version: "v1alpha1",
  kind: "KengineParameters",
  plural: "kengineparameters",
});

export const WATCHED: readonly (readonly [Kind, GenericClass])[] = [
  ["GatewayClass", GatewayClass],
  ["Gateway", Gateway],
  ["ListenerSet", ListenerSet],
  ["HTTPRoute", HTTPRoute],
  ["GRPCRoute", GRPCRoute],
  ["TLSRoute", TLSRoute],
  ["TCPRoute", TCPRoute],
  ["UDPRoute", UDPRoute],
  ["ReferenceGrant", ReferenceGrant],
  ["BackendTLSPolicy", BackendTLSPolicy],
  ["Service", k8s.Service],
  ["EndpointSlice", k8s.EndpointSlice],
  ["Secret", k8s.Secret],
  ["ConfigMap", k8s.ConfigMap],
  ["Namespace", k8s.Namespace],
  ["KengineParameters", KengineParameters],
];

/**
 * Kinds a cluster may not serve (Gateway API experimental channel: a cluster with the standard
 * channel only has no CRD for them). The controller watches these itself, with a watch that
 * never gives up, instead of through Pepr's Watch bindings: Pepr 1.1.4's watch of a resource
 * the API server does not serve gives up after PEPR_RESYNC_FAILURE_MAX (5) resyncs and throws
 * from a timer, which ends the watcher process (seen under `pepr dev`: about 30 s after the
 * start, "WatchEvent GiveUp Error"), so a missing CRD would restart the controller forever.
 */
export const OPTIONAL_KINDS: ReadonlySet<Kind> = new Set<Kind>([
  "ListenerSet",
  "TLSRoute",
  "TCPRoute",
  "UDPRoute",
  "BackendTLSPolicy",
]);

export type Ingest = (kind: Kind, type: "upsert" | "delete", object: KubeObject) => void;

/**
 * A kubernetes-fluent-client watch (what Pepr's bindings use) of one kind into `ingest`.
 * Without `resyncFailureMax` it retries for ever (every `resyncDelaySec`): a CRD installed
 * later is picked up by the next list.
 */
export function watchKind(kind: Kind, model: GenericClass, ingest: Ingest, cfg: WatchCfg = {}) {
  return K8s(model).Watch((obj, phase) => {
    if (phase === "ADDED" || phase === "MODIFIED")
      ingest(kind, "upsert", obj as unknown as KubeObject);
    else if (phase === "DELETED") ingest(kind, "delete", obj as unknown as KubeObject);
  }, cfg);
}
