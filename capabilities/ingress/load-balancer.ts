/**
 * Ingress status.loadBalancer as Contour's design has it (docs/ingress.md, "Status"): the
 * addresses are those of the proxies' Service (its status.loadBalancer.ingress: IPs, hostnames,
 * ports) unless configuration gives a static list, which then wins. The leader writes them to
 * every Ingress of our class: each new Ingress as it arrives, and all of them when the
 * addresses change. Nothing here ever clears an address: with no addresses known, no Ingress is
 * written, so a stopping or demoted controller leaves the last addresses in place.
 *
 * Pure: the caller lists Services and Ingresses, writes, and rate-limits.
 */
import type {
  V1Ingress,
  V1IngressLoadBalancerIngress,
  V1IngressPortStatus,
  V1Service,
} from "@kubernetes/client-node";

/** The addresses to publish; empty means "unknown" (write nothing). */
export type Addresses = V1IngressLoadBalancerIngress[];

const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;
const isIP = (s: string): boolean => IPV4.test(s) || s.includes(":");

/** Deterministic order and no duplicates, so equal address sets compare equal. */
export function normalise(addresses: readonly V1IngressLoadBalancerIngress[]): Addresses {
  const byKey = new Map<string, V1IngressLoadBalancerIngress>();
  for (const a of addresses) {
    if (!a || (!a.ip && !a.hostname)) continue;
    const ports: V1IngressPortStatus[] = [...(a.ports ?? [])]
      .filter(p => p && typeof p.port === "number")
      .map(p => ({
        port: p.port,
        protocol: p.protocol || "TCP",
        ...(p.error ? { error: p.error } : {}),
      }))
      .sort((x, y) => x.port - y.port || x.protocol.localeCompare(y.protocol, "en"));
    const one: V1IngressLoadBalancerIngress = {
      ...(a.ip ? { ip: a.ip } : {}),
      ...(a.hostname ? { hostname: a.hostname } : {}),
      ...(ports.length ? { ports } : {}),
    };
    byKey.set(JSON.stringify(one), one);
  }
  return [...byKey.entries()].sort(([a], [b]) => a.localeCompare(b, "en")).map(([, v]) => v);
}

/** Addresses discovered from the proxies' Services' status.loadBalancer.ingress. */
export function addressesFromServices(services: readonly V1Service[]): Addresses {
  return normalise(
    services.flatMap(s =>
      (s?.status?.loadBalancer?.ingress ?? []).map(i => ({
        ...(i.ip ? { ip: i.ip } : {}),
        ...(i.hostname ? { hostname: i.hostname } : {}),
        ...(i.ports?.length
          ? {
              ports: i.ports.map(p => ({
                port: p.port,
                protocol: p.protocol,
                ...(p.error ? { error: p.error } : {}),
              })),
            }
          : {}),
      })),
    ),
  );
}

/** A static list from configuration: each entry an IP address or a host name. */
export function staticAddresses(list: readonly string[]): Addresses {
  return normalise(
    list
      .map(s => s.trim())
      .filter(s => s !== "")
      .map(s => (isIP(s) ? { ip: s } : { hostname: s })),
  );
}

/** The addresses to publish: the static list when configured, else the Services'. */
export function desiredAddresses(
  configured: readonly string[] | undefined,
  services: readonly V1Service[],
): Addresses {
  const fixed = staticAddresses(configured ?? []);
  return fixed.length > 0 ? fixed : addressesFromServices(services);
}

const same = (a: readonly V1IngressLoadBalancerIngress[], b: Addresses): boolean =>
  JSON.stringify(normalise(a)) === JSON.stringify(b);

/** True when this Ingress's status should be written: known addresses it does not show yet. */
export function needsWrite(ingress: V1Ingress, desired: Addresses): boolean {
  if (desired.length === 0) return false; // never clear
  return !same(ingress.status?.loadBalancer?.ingress ?? [], normalise(desired));
}

export interface StatusWrite {
  readonly namespace: string;
  readonly name: string;
  readonly status: { loadBalancer: { ingress: Addresses } };
}

/**
 * The writes of one pass over the Ingresses of our class (callers pass only those): every one
 * whose addresses differ, in namespace/name order, at most `limit` of them (the caller runs
 * passes until none is left, at its rate). After an address change this is all of them.
 */
export function ingressStatusWrites(
  ingresses: readonly V1Ingress[],
  desired: Addresses,
  limit = Infinity,
): StatusWrite[] {
  const want = normalise(desired);
  if (want.length === 0) return [];
  return ingresses
    .filter(i => i?.metadata?.name && i.metadata.namespace && needsWrite(i, want))
    .map(i => ({ namespace: i.metadata!.namespace!, name: i.metadata!.name! }))
    .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`, "en"))
    .slice(0, limit)
    .map(k => ({ ...k, status: { loadBalancer: { ingress: want } } }));
}
