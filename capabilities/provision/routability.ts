/**
 * Gateway address routability (Gateway API v1.7, GEP-5093: `spec.addresses[].routability`,
 * `status.addresses[].routability`; features GatewayAddressRoutability and
 * GatewayAddressRoutabilityCluster). Pure.
 *
 * - empty: the implementation's default, the load-balancer address of the proxies' Service
 *   (provision/addresses.ts), reported with an explicit empty routability (or `Cluster` when the
 *   address is the Service's cluster IP: a Service of type ClusterIP);
 * - `Cluster`: an address reachable inside the cluster, the proxies' Service ClusterIP. An entry
 *   without value gets it; an entry with a value must name it. It is reported with
 *   `routability: Cluster`. A Gateway whose every entry asks for `Cluster` gets a ClusterIP
 *   Service instead of the parameters' LoadBalancer or NodePort (serviceTypeFor): it asked to
 *   stay inside the cluster;
 * - `testing.x-k8s.io/sentinel` (reserved for conformance): the default address, reported with
 *   that routability;
 * - anything else (an implementation-specific `prefix/value`, other `testing.x-k8s.io/` values):
 *   not a scope we offer, unsatisfiable: AddressNotUsable naming it (never another scope).
 *
 * The CRD's own validation (CEL) refuses malformed values (an unknown bare word, `k8s.io`
 * prefixes), so admission has nothing left to judge: a well-formed value we do not offer is an
 * unsatisfied address, which the spec says to report in status.
 */

/** An address as spec.addresses writes it, routability included. */
export interface RoutableAddress {
  readonly type?: string;
  readonly value: string;
  readonly routability?: string;
}

export const CLUSTER_ROUTABILITY = "Cluster";
/** GEP-5093: reserved for conformance; a class claiming GatewayAddressRoutability reports it. */
export const SENTINEL_ROUTABILITY = "testing.x-k8s.io/sentinel";

export interface ByRoutability<A> {
  /** Empty routability: the load balancer's addresses. */
  readonly lb: A[];
  /** The conformance sentinel: the load balancer's addresses, reported with it. */
  readonly sentinel: A[];
  readonly cluster: A[];
  /** Routabilities we do not offer. */
  readonly other: A[];
}

/** The entries by routability. */
export function splitByRoutability<A extends RoutableAddress>(all: readonly A[]): ByRoutability<A> {
  const out: ByRoutability<A> = { lb: [], sentinel: [], cluster: [], other: [] };
  for (const a of all) {
    const r = a.routability ?? "";
    const bucket =
      r === ""
        ? out.lb
        : r === SENTINEL_ROUTABILITY
          ? out.sentinel
          : r === CLUSTER_ROUTABILITY
            ? out.cluster
            : out.other;
    bucket.push(a);
  }
  return out;
}

/** Whether every entry asks for `Cluster` (a Gateway that asked to stay inside the cluster). */
export const isClusterOnly = (entries: readonly RoutableAddress[]): boolean =>
  entries.length > 0 && entries.every(a => (a.routability ?? "") === CLUSTER_ROUTABILITY);

/**
 * The Service type for a Gateway's request: ClusterIP when every entry asks for `Cluster` (what
 * the user asked to keep inside the cluster is exposed neither by a load balancer nor on the
 * nodes' ports); otherwise the parameters' type.
 */
export function serviceTypeFor<T extends string>(
  request: { readonly clusterOnly?: boolean },
  configured: T,
): T | "ClusterIP" {
  return request.clusterOnly ? "ClusterIP" : configured;
}

export interface RoutabilityOutcome {
  readonly addresses: readonly RoutableAddress[];
  readonly problem?: {
    readonly reason: "AddressNotAssigned" | "AddressNotUsable";
    readonly message: string;
  };
}

/**
 * The load balancer's (default) addresses labelled as GEP-5093 wants every status address of a
 * claiming class: `Cluster` for the Service's cluster IP, else an explicit empty routability;
 * once more with the sentinel when the request has sentinel entries (one per satisfied entry).
 */
export function labelDefault(
  addresses: readonly RoutableAddress[],
  clusterIP: string | undefined,
  plain: boolean,
  sentinel: boolean,
): RoutableAddress[] {
  const label = (a: RoutableAddress): RoutableAddress => ({
    ...a,
    routability:
      (a.type ?? "IPAddress") === "IPAddress" && a.value === clusterIP ? CLUSTER_ROUTABILITY : "",
  });
  return [
    ...(plain ? addresses.map(label) : []),
    ...(sentinel ? addresses.map(a => ({ ...a, routability: SENTINEL_ROUTABILITY })) : []),
  ];
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
      `${a.value || "(no value)"} (${source}) cannot be used: routability ${JSON.stringify(a.routability)} is not offered (only the default, Cluster and ${SENTINEL_ROUTABILITY})`,
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
    if ((a.type ?? "IPAddress") !== "IPAddress")
      unusable.push(
        `${a.value || "(no value)"} (${source}) cannot be used: routability Cluster is offered for IPAddress only (got type ${a.type})`,
      );
    else if (a.value === "" || a.value === ip) {
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

/** GEP-5093's AddressesAssigned condition (without generation), once assignment is decided. */
export interface AddressAssignment {
  readonly status: "True" | "False";
  readonly reason: "AddressesAssigned" | "PartiallyAssigned" | "NotAssigned";
  readonly message: string;
}

/**
 * AddressesAssigned from the outcome: True when nothing is missing and addresses are bound;
 * False (PartiallyAssigned when some are bound, else NotAssigned) when a requested address cannot
 * be used; undefined while an address is still being assigned (the condition is omitted until
 * assignment is reconciled).
 */
export function addressAssignment(
  addresses: readonly RoutableAddress[],
  problem: RoutabilityOutcome["problem"],
): AddressAssignment | undefined {
  if (problem?.reason === "AddressNotUsable")
    return {
      status: "False",
      reason: addresses.length > 0 ? "PartiallyAssigned" : "NotAssigned",
      message: problem.message,
    };
  if (problem || addresses.length === 0) return undefined;
  return {
    status: "True",
    reason: "AddressesAssigned",
    message: `assigned: ${addresses.map(a => `${a.value}${a.routability ? ` (${a.routability})` : ""}`).join(", ")}`,
  };
}
