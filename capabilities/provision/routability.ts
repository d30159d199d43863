/**
 * Gateway address routability (Gateway API v1.7, `spec.addresses[].routability`,
 * `status.addresses[].routability`; features GatewayAddressRoutability and
 * GatewayAddressRoutabilityCluster). Pure.
 *
 * - empty: the implementation's default, the load-balancer address of the proxies' Service
 *   (provision/addresses.ts);
 * - `Cluster`: an address reachable inside the cluster, the proxies' Service ClusterIP. An entry
 *   without value gets it; an entry with a value must name it. It is reported with
 *   `routability: Cluster`;
 * - anything else (an implementation-specific `prefix/value`): not a scope we offer,
 *   AddressNotUsable.
 */

/** An address as spec.addresses writes it, routability included. */
export interface RoutableAddress {
  readonly type?: string;
  readonly value: string;
  readonly routability?: string;
}

export const CLUSTER_ROUTABILITY = "Cluster";

/** The entries by routability: the default (load balancer), Cluster, and the ones we refuse. */
export function splitByRoutability<A extends RoutableAddress>(
  all: readonly A[],
): { readonly lb: A[]; readonly cluster: A[]; readonly other: A[] } {
  const lb: A[] = [];
  const cluster: A[] = [];
  const other: A[] = [];
  for (const a of all) {
    const r = a.routability ?? "";
    (r === "" ? lb : r === CLUSTER_ROUTABILITY ? cluster : other).push(a);
  }
  return { lb, cluster, other };
}

export interface RoutabilityOutcome {
  readonly addresses: readonly RoutableAddress[];
  readonly problem?: {
    readonly reason: "AddressNotAssigned" | "AddressNotUsable";
    readonly message: string;
  };
}

/**
 * The Cluster addresses a Gateway gets from its proxies' Service (`clusterIP`, undefined while
 * the API server has not allocated one), and why the others cannot be used.
 */
export function routableOutcome(
  cluster: readonly RoutableAddress[],
  other: readonly RoutableAddress[],
  clusterIP: string | undefined,
  serviceName: string,
  source: string,
): RoutabilityOutcome {
  const unusable: string[] = other.map(
    a =>
      `${a.value || "(no value)"} (${source}) cannot be used: routability ${JSON.stringify(a.routability)} is not offered (only the default and Cluster, the Service's cluster IP)`,
  );
  const addresses: RoutableAddress[] = [];
  const ip = clusterIP && clusterIP !== "None" ? clusterIP : undefined;
  if (cluster.length > 0 && ip === undefined && unusable.length === 0)
    return {
      addresses,
      problem: {
        reason: "AddressNotAssigned",
        message: `waiting for the cluster IP of Service ${serviceName} (routability Cluster, ${source})`,
      },
    };
  for (const a of cluster) {
    if (a.value === "" || a.value === ip) {
      if (ip !== undefined && addresses.length === 0)
        addresses.push({ type: "IPAddress", value: ip, routability: CLUSTER_ROUTABILITY });
    } else
      unusable.push(
        `${a.value} (${source}) cannot be used: a Cluster address is the cluster IP of Service ${serviceName}${ip ? `, ${ip}` : ""}`,
      );
  }
  return unusable.length > 0
    ? { addresses, problem: { reason: "AddressNotUsable", message: unusable.join("; ") } }
    : { addresses };
}
