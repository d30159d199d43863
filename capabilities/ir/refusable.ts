/**
 * The objects the isolation stage can leave out of one Gateway's config on their own: the
 * renderer's source map names them, the translator skips the ones a proxy refused
 * (docs/architecture.md §4, rule 3).
 */

/** Route kinds the translator compiles. */
export type RouteKind = "HTTPRoute" | "GRPCRoute" | "TLSRoute" | "TCPRoute" | "UDPRoute";

export type RefusableKind = RouteKind | "ListenerSet" | "Listener";

/** An object that contributes to a Gateway's config on its own (a culprit candidate). */
export interface RefusableObject {
  readonly kind: RefusableKind;
  /** Listener: the Gateway's namespace and name. */
  readonly namespace: string;
  readonly name: string;
  /** Listener: the Gateway listener's name (sectionName). */
  readonly listener?: string;
  readonly fingerprint: string;
}
