/** Status results: plain data, no timestamps; the status writer diffs and stamps them. */
import { ParentReference } from "../snapshot";
import { Condition } from "./conditions";

export interface GatewayClassStatusResult {
  readonly name: string;
  readonly conditions: readonly Condition[];
  readonly supportedFeatures: readonly { readonly name: string }[];
}

export interface ListenerStatusResult {
  readonly name: string;
  readonly supportedKinds: readonly { readonly group: string; readonly kind: string }[];
  readonly attachedRoutes: number;
  readonly conditions: readonly Condition[];
}

export interface GatewayStatusResult {
  readonly namespace: string;
  readonly name: string;
  readonly conditions: readonly Condition[];
  readonly listeners: readonly ListenerStatusResult[];
  /**
   * ListenerSets attached (allowed by spec.allowedListeners and Accepted); undefined when the
   * Gateway has no allowedListeners and no ListenerSet names it (the field is then not written).
   */
  readonly attachedListenerSets?: number;
}

export interface ListenerSetStatusResult {
  readonly namespace: string;
  readonly name: string;
  readonly conditions: readonly Condition[];
  readonly listeners: readonly ListenerStatusResult[];
}

export interface RouteParentStatusResult {
  readonly parentRef: ParentReference;
  readonly controllerName: string;
  readonly conditions: readonly Condition[];
}

export interface RouteStatusResult {
  readonly kind: "HTTPRoute" | "GRPCRoute" | "TLSRoute" | "TCPRoute" | "UDPRoute";
  readonly namespace: string;
  readonly name: string;
  /** Only the parents this controller is responsible for; others' entries are left alone. */
  readonly parents: readonly RouteParentStatusResult[];
}

/** One `status.ancestors[]` entry of a policy (Gateway API PolicyAncestorStatus). */
export interface PolicyAncestorStatusResult {
  /** The Gateway whose routes use a Service the policy covers. */
  readonly ancestorRef: ParentReference;
  readonly controllerName: string;
  /** Accepted, ResolvedRefs. */
  readonly conditions: readonly Condition[];
}

export interface BackendTLSPolicyStatusResult {
  readonly namespace: string;
  readonly name: string;
  /** Only ancestors this controller is responsible for; others' entries are left alone. */
  readonly ancestors: readonly PolicyAncestorStatusResult[];
}

export interface StatusResults {
  readonly gatewayClasses: readonly GatewayClassStatusResult[];
  readonly gateways: readonly GatewayStatusResult[];
  readonly listenerSets: readonly ListenerSetStatusResult[];
  readonly routes: readonly RouteStatusResult[];
  /** BackendTLSPolicies used by at least one of our Gateways' routes. */
  readonly backendTLSPolicies?: readonly BackendTLSPolicyStatusResult[];
  /** XTelemetryPolicies targeting at least one of our Gateways (same shape: ancestors). */
  readonly telemetryPolicies?: readonly BackendTLSPolicyStatusResult[];
}
