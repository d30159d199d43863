/**
 * Condition types and reasons the translator reports, named as in the Gateway API v1.6.1
 * spec (apis/v1/*_types.go). One file, so status writers and tests share the spelling.
 */

export const ConditionType = {
  Accepted: "Accepted",
  Programmed: "Programmed",
  ResolvedRefs: "ResolvedRefs",
  Conflicted: "Conflicted",
  PartiallyInvalid: "PartiallyInvalid",
  SupportedVersion: "SupportedVersion",
  InsecureFrontendValidationMode: "InsecureFrontendValidationMode",
  /** Gateway API v1.7 (GEP-5093), written from the address outcome (reconcile/programmed.ts). */
  AddressesAssigned: "AddressesAssigned",
} as const;
export type ConditionType = (typeof ConditionType)[keyof typeof ConditionType];

export const GatewayClassReason = {
  Accepted: "Accepted",
  InvalidParameters: "InvalidParameters",
  Unsupported: "Unsupported",
} as const;

export const GatewayReason = {
  Accepted: "Accepted",
  InvalidParameters: "InvalidParameters",
  ListenersNotValid: "ListenersNotValid",
  Invalid: "Invalid",
  Programmed: "Programmed",
  UnsupportedAddress: "UnsupportedAddress",
  AddressNotAssigned: "AddressNotAssigned",
  Pending: "Pending",
} as const;

export const ListenerSetReason = {
  Accepted: "Accepted",
  Programmed: "Programmed",
  NotAllowed: "NotAllowed",
  ParentNotAccepted: "ParentNotAccepted",
  ListenersNotValid: "ListenersNotValid",
  Invalid: "Invalid",
} as const;

export const ListenerReason = {
  Accepted: "Accepted",
  PortUnavailable: "PortUnavailable",
  UnsupportedValue: "UnsupportedValue",
  UnsupportedProtocol: "UnsupportedProtocol",
  Programmed: "Programmed",
  Invalid: "Invalid",
  Pending: "Pending",
  ResolvedRefs: "ResolvedRefs",
  InvalidCertificateRef: "InvalidCertificateRef",
  InvalidRouteKinds: "InvalidRouteKinds",
  RefNotPermitted: "RefNotPermitted",
  NoConflicts: "NoConflicts",
  HostnameConflict: "HostnameConflict",
  ProtocolConflict: "ProtocolConflict",
  InvalidCACertificateRef: "InvalidCACertificateRef",
  InvalidCACertificateKind: "InvalidCACertificateKind",
  NoValidCACertificate: "NoValidCACertificate",
} as const;

export const RouteReason = {
  Accepted: "Accepted",
  NotAllowedByListeners: "NotAllowedByListeners",
  NoMatchingListenerHostname: "NoMatchingListenerHostname",
  NoMatchingParent: "NoMatchingParent",
  UnsupportedValue: "UnsupportedValue",
  Pending: "Pending",
  ResolvedRefs: "ResolvedRefs",
  RefNotPermitted: "RefNotPermitted",
  InvalidKind: "InvalidKind",
  BackendNotFound: "BackendNotFound",
  UnsupportedProtocol: "UnsupportedProtocol",
} as const;

export type ConditionStatus = "True" | "False" | "Unknown";

/** A status condition without lastTransitionTime: the status writer stamps times. */
export interface Condition {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
  readonly observedGeneration?: number;
}

export const condition = (
  type: string,
  ok: boolean,
  reason: string,
  message: string,
  observedGeneration?: number,
): Condition => ({ type, status: ok ? "True" : "False", reason, message, observedGeneration });
