/**
 * Which cluster objects we made or adopted for a Gateway's proxies: those labelled as managed
 * by us for a Gateway, and bring-your-own proxies' Services (and their EndpointSlices, which
 * copy the Service's labels). The one test the reconciler's ingest, its clean-up and the
 * KengineProxy objects use.
 */
export const GATEWAY_NAME_LABEL = "gateway.networking.k8s.io/gateway-name";
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
export const MANAGED_BY = "kengine-gateway";
/** On a bring-your-own proxies' Service (docs/proxies.md): the name of the Gateway, in the same namespace. */
export const OWNING_GATEWAY_LABEL = "gateway.kengine.io/owning-gateway";

interface Labelled {
  readonly metadata: { readonly labels?: Readonly<Record<string, string>> };
}

/** Labelled as managed by this controller (whatever it is for). */
export const isManagedByUs = (o: Labelled): boolean =>
  o.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY;

/** An object of a Gateway's proxies: managed by us for a Gateway, or a bring-your-own one's. */
export const isOurProxyObject = (o: Labelled): boolean =>
  (isManagedByUs(o) && o.metadata.labels?.[GATEWAY_NAME_LABEL] !== undefined) ||
  o.metadata.labels?.[OWNING_GATEWAY_LABEL] !== undefined;
