/** Each route's compilation, kept across builds while everything it read is the same. */
import { Snapshot, changedKeys } from "../../snapshot";
import { slicesByService } from "../backends";
import { recordServiceReads } from "../reads";
import { compileRoute } from "../attach";
import type { AnyCompiled } from "../context";
import type { RouteKind } from "../listeners";

/**
 * Each route's compilation, kept while the route object and everything compilation read are
 * the same objects (a change to one route compiles that route; the snapshot replaces
 * a kind's map when one of its objects changes): the maps of BackendTLSPolicies, ConfigMaps
 * and ReferenceGrants (backendtls.ts, refs.ts), and each Service the compilation looked up
 * (reads.ts) with that Service's EndpointSlices, so an endpoint change compiles only the
 * routes naming that Service. Compilation is pure, so a hit equals compiling again. A new
 * snapshot read during compilation must be named here.
 */
const compiled = new WeakMap<
  object,
  {
    readonly reads: readonly unknown[];
    readonly services: readonly string[];
    readonly c: AnyCompiled;
    /** The maps compilation reads, as last checked: while the same, no read can differ. */
    maps: readonly unknown[];
  }
>();
export const compileMaps = (s: Snapshot): readonly unknown[] => [
  s.objects.Service,
  s.objects.EndpointSlice,
  s.objects.BackendTLSPolicy,
  s.objects.ConfigMap,
  s.objects.ClusterTrustBundle,
  s.objects.ReferenceGrant,
  s.objects.XBackend,
];
const compileReads = (s: Snapshot, services: readonly string[]): readonly unknown[] => {
  const reads: unknown[] = [
    s.objects.BackendTLSPolicy,
    s.objects.ConfigMap,
    // BackendTLSPolicy CAs may come from bundles (trustbundle.ts).
    s.objects.ClusterTrustBundle,
    s.objects.ReferenceGrant,
    // backendRefs to XBackends (xbackend.ts); an EndpointSelector looks through every Service.
    s.objects.XBackend,
    ...(s.objects.XBackend.size > 0 ? [s.objects.Service] : []),
  ];
  const slices = services.length > 0 ? slicesByService(s) : undefined;
  for (const key of services) {
    const list = slices?.get(key) ?? [];
    reads.push(s.objects.Service.get(key), list.length, ...list);
  }
  return reads;
};
const sameReads = (a: readonly unknown[], b: readonly unknown[]): boolean =>
  a.length === b.length && a.every((r, i) => r === b[i]);

/**
 * The Services (`namespace/name`) whose object or EndpointSlices differ between the Service and
 * EndpointSlice maps in `from` and the snapshot's (the snapshot's lineage; an EndpointSlice
 * counts for the Service it is labelled with, before and after); undefined: not known. Made
 * once per pair of versions, not per route.
 */
const servicesChangedCache = new WeakMap<
  object,
  {
    readonly from: unknown;
    readonly to: readonly unknown[];
    readonly services: ReadonlySet<string> | undefined;
  }
>();
function servicesChanged(from: readonly unknown[], s: Snapshot): ReadonlySet<string> | undefined {
  const fromServices = from[0] as Snapshot["objects"]["Service"];
  const fromSlices = from[1] as Snapshot["objects"]["EndpointSlice"];
  const cached = servicesChangedCache.get(fromSlices);
  if (
    cached &&
    cached.from === fromServices &&
    cached.to[0] === s.objects.Service &&
    cached.to[1] === s.objects.EndpointSlice
  )
    return cached.services;
  const serviceKeys = changedKeys(fromServices, s.objects.Service);
  const sliceKeys = changedKeys(fromSlices, s.objects.EndpointSlice);
  let services: Set<string> | undefined;
  if (serviceKeys && sliceKeys) {
    services = new Set(serviceKeys);
    for (const k of sliceKeys)
      for (const slice of [fromSlices.get(k), s.objects.EndpointSlice.get(k)]) {
        const name = slice?.metadata.labels?.["kubernetes.io/service-name"];
        if (slice && name !== undefined) services.add(`${slice.metadata.namespace}/${name}`);
      }
  }
  servicesChangedCache.set(fromSlices, {
    from: fromServices,
    to: [s.objects.Service, s.objects.EndpointSlice],
    services,
  });
  return services;
}

export function compileAny(s: Snapshot, kind: RouteKind, obj: unknown): AnyCompiled {
  const hit = compiled.get(obj as object);
  if (hit) {
    const m = hit.maps;
    if (
      m[0] === s.objects.Service &&
      m[1] === s.objects.EndpointSlice &&
      m[2] === s.objects.BackendTLSPolicy &&
      m[3] === s.objects.ConfigMap &&
      m[4] === s.objects.ClusterTrustBundle &&
      m[5] === s.objects.ReferenceGrant &&
      m[6] === s.objects.XBackend
    )
      return hit.c;
    // Only Services or EndpointSlices changed, none this route read: no need to list its reads.
    // Not while XBackends exist: an EndpointSelector reads every Service of its namespace (a
    // new Service with its selector is one it never looked up), so its reads hold the whole
    // Service map and are compared instead.
    const changed =
      m[2] === s.objects.BackendTLSPolicy &&
      m[3] === s.objects.ConfigMap &&
      m[4] === s.objects.ClusterTrustBundle &&
      m[5] === s.objects.ReferenceGrant &&
      m[6] === s.objects.XBackend &&
      s.objects.XBackend.size === 0
        ? servicesChanged(m, s)
        : undefined;
    if (
      (changed && !hit.services.some(k => changed.has(k))) ||
      sameReads(hit.reads, compileReads(s, hit.services))
    ) {
      hit.maps = compileMaps(s);
      return hit.c;
    }
  }
  const { value: c, services } = recordServiceReads(() => compileRoute(s, kind, obj));
  compiled.set(obj as object, {
    reads: compileReads(s, services),
    services,
    c,
    maps: compileMaps(s),
  });
  return c;
}
