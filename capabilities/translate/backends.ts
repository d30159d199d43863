/** Resolution of Service backendRefs to ready endpoint addresses. */
import { EndpointIR } from "../ir";
import { serviceRead } from "./reads";
import { BackendObjectReference, GATEWAY_GROUP, Service, ServicePort, Snapshot } from "../snapshot";
import { RouteReason } from "./conditions";
import { backendTLSPolicies } from "./backendtls";
import { refPermitted } from "./refs";
import { isXBackendRef, resolveXBackend } from "./xbackend";
import { BackendResolution, slicesByService } from "./resolution";

/**
 * Resolves one backendRef of a route (kind `routeKind` in `routeNamespace`): the reference
 * must name a core Service (InvalidKind), in the same namespace or allowed by a
 * ReferenceGrant (RefNotPermitted), that exists and has the port (BackendNotFound); or an
 * XBackend (translate/xbackend.ts).
 */
export function resolveBackend(
  s: Snapshot,
  routeKind: string,
  routeNamespace: string,
  ref: BackendObjectReference,
): BackendResolution {
  const group = ref.group ?? "";
  const kind = ref.kind ?? "Service";
  const namespace = ref.namespace ?? routeNamespace;
  const id = `${namespace}/${ref.name}${ref.port !== undefined ? `:${ref.port}` : ""}`;
  if (isXBackendRef(ref)) return resolveXBackend(s, routeKind, routeNamespace, ref);
  if (group !== "" || kind !== "Service") {
    return {
      ok: false,
      id,
      reason: RouteReason.InvalidKind,
      message: `backendRef ${kind}.${group || "core"} ${id}: only core Services and XBackends (gateway.networking.x-k8s.io) are supported`,
    };
  }
  if (
    !refPermitted(
      s,
      { group: GATEWAY_GROUP, kind: routeKind, namespace: routeNamespace },
      { group: "", kind: "Service", namespace, name: ref.name },
    )
  ) {
    return {
      ok: false,
      id,
      reason: RouteReason.RefNotPermitted,
      message: `backendRef to Service ${id} is not permitted by any ReferenceGrant in namespace ${namespace}`,
    };
  }
  serviceRead(`${namespace}/${ref.name}`);
  const svc = s.objects.Service.get(`${namespace}/${ref.name}`);
  if (!svc)
    return {
      ok: false,
      id,
      reason: RouteReason.BackendNotFound,
      message: `Service ${namespace}/${ref.name} not found`,
    };
  // Never dialled by name: an ExternalName Service is no backend (nor are FQDN EndpointSlices,
  // resolveEndpoints), so the only names the proxy resolves are ExternalHostname XBackends'.
  if (svc.spec?.type === "ExternalName") {
    return {
      ok: false,
      id,
      reason: RouteReason.UnsupportedProtocol,
      message: `Service ${namespace}/${ref.name} is of type ExternalName, which is not supported as a backend`,
    };
  }
  if (ref.port === undefined) {
    return {
      ok: false,
      id,
      reason: RouteReason.BackendNotFound,
      message: `backendRef to Service ${namespace}/${ref.name} needs a port`,
    };
  }
  const port =
    (svc.spec?.ports ?? []).find(p => p.port === ref.port && (p.protocol ?? "TCP") !== "UDP") ??
    (svc.spec?.ports ?? []).find(p => p.port === ref.port);
  if (!port) {
    return {
      ok: false,
      id,
      reason: RouteReason.BackendNotFound,
      message: `Service ${namespace}/${ref.name} has no port ${ref.port}`,
    };
  }
  const policies = backendTLSPolicies(s);
  const backendTLS = policies.forServicePort(svc, port);
  const covering = policies.covering(svc, port);
  return {
    ok: true,
    id,
    endpoints: endpointsOf(s, svc, port),
    appProtocol: port.appProtocol,
    ...(backendTLS && { backendTLS }),
    ...(covering.length > 0 && { backendTLSPolicies: covering }),
  };
}

/**
 * Ready, non-terminating endpoints of a Service port, from its EndpointSlices. The slice's
 * port is found by the Service port's name (EndpointSlice ports carry Service port names), so
 * a named targetPort resolves per pod. Sorted and deduplicated: the output is deterministic.
 */
type Slices = Snapshot["objects"]["EndpointSlice"];

const endpointMemo = new WeakMap<Slices, Map<string, readonly EndpointIR[]>>();

export function endpointsOf(s: Snapshot, svc: Service, port: ServicePort): EndpointIR[] {
  // The same Service port is resolved once per EndpointSlice map, not once per backendRef.
  let memo = endpointMemo.get(s.objects.EndpointSlice);
  if (!memo) endpointMemo.set(s.objects.EndpointSlice, (memo = new Map()));
  const key = `${svc.metadata.namespace}/${svc.metadata.name}|${port.name ?? ""}|${String(port.targetPort)}`;
  let found = memo.get(key);
  if (!found) memo.set(key, (found = resolveEndpoints(s, svc, port)));
  // Fresh objects per backendRef: the IR never shares nodes (its YAML goldens show sharing).
  return found.map(e => ({ ...e }));
}

function resolveEndpoints(s: Snapshot, svc: Service, port: ServicePort): EndpointIR[] {
  const ns = svc.metadata.namespace;
  const name = svc.metadata.name;
  const wantName = port.name ?? "";
  const out = new Map<string, EndpointIR>();
  for (const slice of slicesByService(s).get(`${ns}/${name}`) ?? []) {
    if (slice.addressType === "FQDN") continue;
    const sp = (slice.ports ?? []).find(p => (p.name ?? "") === wantName);
    const number = sp?.port ?? (typeof port.targetPort === "number" ? port.targetPort : undefined);
    if (number === undefined) continue;
    for (const ep of slice.endpoints ?? []) {
      if (ep.conditions?.ready === false || ep.conditions?.terminating === true) continue;
      for (const address of ep.addresses ?? [])
        out.set(`${address}|${number}`, { address, port: number });
    }
  }
  return [...out.values()].sort((a, b) =>
    a.address < b.address ? -1 : a.address > b.address ? 1 : a.port - b.port,
  );
}

/** Re-exported for importers of this module. */
export { type BackendResolution, slicesByService };
