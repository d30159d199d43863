/**
 * Where a Gateway's proxy pods are: the EndpointSlices of its admin Service (managed proxies), or
 * of the Services labelled `gateway.kengine.io/owning-gateway: <gateway>` (bring your own, design
 * §4). Ready or not (an unprogrammed pod is not Ready yet), never terminating; the port named
 * `admin` is the management listener.
 */
import { OWNING_GATEWAY_LABEL } from "../provision";
import type { KubeObject, Snapshot } from "../snapshot";

interface EndpointSliceObject extends KubeObject {
  readonly ports?: readonly { readonly name?: string; readonly port?: number }[];
  readonly endpoints?: readonly {
    readonly addresses: readonly string[];
    readonly conditions?: { readonly terminating?: boolean };
    readonly targetRef?: { readonly kind?: string; readonly name?: string; readonly uid?: string };
  }[];
}

/** Proxy pods behind the admin Service, ready or not, that are not terminating. */
export function proxyEndpoints(snapshot: Snapshot, namespace: string, adminServiceName: string) {
  const out: { pod: string; uid?: string; address: string; port: number }[] = [];
  for (const o of snapshot.objects.EndpointSlice.values()) {
    const slice = o as EndpointSliceObject;
    if (slice.metadata.namespace !== namespace) continue;
    if (slice.metadata.labels?.["kubernetes.io/service-name"] !== adminServiceName) continue;
    const port = slice.ports?.find(p => p.name === "admin")?.port;
    if (!port) continue;
    for (const e of slice.endpoints ?? []) {
      const pod = e.targetRef?.kind === "Pod" ? e.targetRef.name : undefined;
      if (!pod || e.conditions?.terminating === true || !e.addresses[0]) continue;
      out.push({ pod, uid: e.targetRef?.uid, address: e.addresses[0], port });
    }
  }
  return out.sort((a, b) => a.pod.localeCompare(b.pod));
}

/** The Services of a Gateway's own proxies, by name. */
export function owningServices(snapshot: Snapshot, namespace: string, gateway: string) {
  const out: KubeObject[] = [];
  for (const svc of snapshot.objects.Service.values())
    if (
      svc.metadata.namespace === namespace &&
      svc.metadata.labels?.[OWNING_GATEWAY_LABEL] === gateway
    )
      out.push(svc);
  return out.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

/** Proxy pods (ready or not, not terminating) behind every owning Service, each once. */
export function externalEndpoints(snapshot: Snapshot, namespace: string, gateway: string) {
  const byPod = new Map<string, ReturnType<typeof proxyEndpoints>[number] & { service: string }>();
  for (const svc of owningServices(snapshot, namespace, gateway))
    for (const e of proxyEndpoints(snapshot, namespace, svc.metadata.name))
      if (!byPod.has(e.pod)) byPod.set(e.pod, { ...e, service: svc.metadata.name });
  return [...byPod.values()].sort((a, b) => a.pod.localeCompare(b.pod));
}
