/**
 * What resolving one backendRef gives (backends.ts for Services, xbackend.ts for XBackends),
 * and the EndpointSlices of each Service, indexed once per EndpointSlice map.
 */
import { EndpointIR, SessionIR } from "../ir";
import { Snapshot } from "../snapshot";
import { BackendTLSDecision } from "./backendtls";

export type BackendResolution =
  | {
      readonly ok: true;
      readonly id: string;
      readonly endpoints: readonly EndpointIR[];
      readonly appProtocol?: string;
      /** The BackendTLSPolicy covering the Service port, if any. */
      readonly backendTLS?: BackendTLSDecision;
      /** Every BackendTLSPolicy naming the Service port (for their status). */
      readonly backendTLSPolicies?: readonly string[];
      /** An XBackend's sessionPersistence (translate/xbackend.ts). */
      readonly session?: SessionIR;
      /**
       * The endpoint is a DNS name a tenant wrote (an ExternalHostname XBackend): whether a
       * Gateway may dial it is its class's and flavour's decision (translate/egress.ts).
       */
      readonly named?: true;
    }
  | { readonly ok: false; readonly id: string; readonly reason: string; readonly message: string };

type Slices = Snapshot["objects"]["EndpointSlice"];
type Slice = Slices extends ReadonlyMap<string, infer V> ? V : never;
const sliceIndex = new WeakMap<Slices, Map<string, Slice[]>>();

/**
 * EndpointSlices by `namespace/service-name`, built once per EndpointSlice map (a snapshot
 * shares the map of every kind an event did not touch, so the index outlives one build).
 * Scanning every slice per backendRef made translation quadratic.
 */
export function slicesByService(s: Snapshot): ReadonlyMap<string, readonly Slice[]> {
  const slices = s.objects.EndpointSlice;
  let index = sliceIndex.get(slices);
  if (!index) {
    index = new Map();
    for (const slice of slices.values()) {
      const svc = slice.metadata.labels?.["kubernetes.io/service-name"];
      if (svc === undefined) continue;
      const key = `${slice.metadata.namespace}/${svc}`;
      const list = index.get(key);
      if (list) list.push(slice);
      else index.set(key, [slice]);
    }
    sliceIndex.set(slices, index);
  }
  return index;
}
