/** The kinds the controller watches, with the model Pepr (or any kubernetes-fluent-client watch) uses. */
import { GenericClass, GenericKind, RegisterKind, kind as k8s } from "kubernetes-fluent-client";
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
import type { Kind } from "../snapshot";

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
