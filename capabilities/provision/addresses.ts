/**
 * Static Gateway addresses: what a Gateway asks for (its spec.addresses, else its
 * KengineParameters' spec.addresses), how the proxies' Service requests it, and which requested
 * addresses the load balancer really assigned. Pure.
 *
 * A LoadBalancer Service can request one IP address, through spec.loadBalancerIP (the field
 * every load-balancer implementation that takes requests reads, the local one included).
 * Hostnames cannot be requested: one is usable only when the load balancer reports it. An
 * address is reported in Gateway status.addresses only once the Service's
 * status.loadBalancer.ingress carries it.
 */
import { isIP } from "node:net";
import {
  addressAssignment,
  AddressAssignment,
  isClusterOnly,
  labelDefault,
  routableOutcome,
  splitByRoutability,
} from "./routability";

export interface AddressSpec {
  readonly type?: string;
  readonly value?: string;
  /** Gateway API v1.7 (provision/routability.ts); empty: the load balancer's address. */
  readonly routability?: string;
}

/** An address with a value (type IPAddress when unset, as the Gateway API defaults it). */
export interface Address {
  readonly type?: string;
  readonly value: string;
  /** `Cluster` for the proxies' Service cluster IP (provision/routability.ts). */
  readonly routability?: string;
}

/** Address types we can request or recognise (Gateway API v1.6.1 core types). */
export const SUPPORTED_ADDRESS_TYPES: readonly string[] = ["IPAddress", "Hostname"];

export interface AddressRequest {
  /** Addresses asked for by value, in order. */
  readonly static: readonly Address[];
  /** Whether any address the load balancer assigns is wanted too (no request, or an entry without value). */
  readonly dynamic: boolean;
  /** Where the request comes from, for messages. */
  readonly source: "spec.addresses" | "KengineParameters spec.addresses" | undefined;
  /** Entries with routability Cluster (the Service's cluster IP), when there are any. */
  readonly cluster?: readonly Address[];
  /** Entries with a routability we do not offer, when there are any. */
  readonly otherRoutability?: readonly Address[];
  /**
   * How the load balancer's addresses are reported: "also" with the conformance sentinel
   * routability besides the default, "only" with it alone (routability.ts labelDefault).
   */
  readonly sentinel?: "also" | "only";
  /** Every entry asks for routability Cluster: the Service is a ClusterIP one (serviceTypeFor). */
  readonly clusterOnly?: boolean;
}

const typed = (a: AddressSpec): Address => ({
  type: a.type || "IPAddress",
  value: a.value ?? "",
  ...(a.routability && { routability: a.routability }),
});

/**
 * The Gateway's own spec.addresses when it has any (they replace the parameters' list), else
 * the parameters' addresses.
 */
export function requestedAddresses(
  gateway: readonly AddressSpec[] | undefined,
  parameters: readonly AddressSpec[] | undefined,
): AddressRequest {
  const [list, source] = gateway?.length
    ? [gateway, "spec.addresses" as const]
    : parameters?.length
      ? [parameters, "KengineParameters spec.addresses" as const]
      : [[], undefined];
  const all = list.map(typed);
  const { lb, sentinel, cluster, other } = splitByRoutability(all);
  // Sentinel entries are default ones (the load balancer's address) reported with the sentinel.
  const byDefault = all.filter(a => lb.includes(a) || sentinel.includes(a));
  const fixed = byDefault.filter(a => a.value !== "");
  return {
    static: fixed,
    dynamic: fixed.length < byDefault.length || all.length === 0,
    source,
    ...(cluster.length > 0 && { cluster }),
    ...(other.length > 0 && { otherRoutability: other }),
    ...(sentinel.length > 0 && { sentinel: lb.length > 0 ? ("also" as const) : ("only" as const) }),
    ...(isClusterOnly(all) && { clusterOnly: true }),
  };
}

/** The IP address the Service requests (spec.loadBalancerIP): the first requested IP, if any. */
export function loadBalancerIP(request: AddressRequest): string | undefined {
  return request.static.find(a => a.type === "IPAddress" && isIP(a.value) !== 0)?.value;
}

/** An IP in one spelling (IPv6 compressed, lower case); other values unchanged. */
export function canonicalAddress(a: Address): string {
  if ((a.type ?? "IPAddress") !== "IPAddress") return `${a.type}/${a.value.toLowerCase()}`;
  if (isIP(a.value) === 6) return `IPAddress/${new URL(`http://[${a.value}]/`).hostname}`;
  return `IPAddress/${a.value}`;
}

export interface ServiceFacts {
  /** "namespace/name" of the proxies' Service. */
  readonly name: string;
  readonly type?: string;
  /** The Service's spec.loadBalancerIP as stored. */
  readonly loadBalancerIP?: string;
  /** The Service's spec.clusterIP (routability Cluster). */
  readonly clusterIP?: string;
}

export interface AddressOutcome {
  /** What goes into Gateway status.addresses. */
  readonly addresses: readonly Address[];
  /** Why the Gateway cannot be Programmed yet because of its addresses. */
  readonly problem?: {
    readonly reason: "AddressNotAssigned" | "AddressNotUsable";
    readonly message: string;
  };
  /** GEP-5093's AddressesAssigned, once assignment is decided (routability.ts). */
  readonly assignment?: AddressAssignment;
}

/**
 * The Gateway's addresses given what it requested and what the load balancer assigned.
 * `managed`: the controller made the Service (and requested the address); otherwise it is the
 * user's own (bring-your-own proxies) and only checked.
 */
export function addressOutcome(
  request: AddressRequest,
  assigned: readonly Address[],
  service: ServiceFacts,
  managed: boolean,
): AddressOutcome {
  const lb = loadBalancerOutcome(request, assigned, service, managed);
  const routable = routableOutcome(
    request.cluster ?? [],
    request.otherRoutability ?? [],
    service.clusterIP,
    service.name,
    request.source ?? "spec.addresses",
  );
  const labelled = labelDefault(
    lb.addresses,
    service.clusterIP,
    request.sentinel !== "only",
    request.sentinel !== undefined,
  );
  const addresses = [...labelled, ...routable.addresses];
  const problem = lb.problem ?? routable.problem;
  const assignment = addressAssignment(addresses, problem);
  return { addresses, ...(problem && { problem }), ...(assignment && { assignment }) };
}

function loadBalancerOutcome(
  request: AddressRequest,
  assigned: readonly Address[],
  service: ServiceFacts,
  managed: boolean,
): AddressOutcome {
  if (request.static.length === 0) return { addresses: request.dynamic ? assigned : [] };
  const assignedKeys = new Set(assigned.map(canonicalAddress));
  const bound = request.static.filter(a => assignedKeys.has(canonicalAddress(a)));
  const boundKeys = new Set(bound.map(canonicalAddress));
  const missing = request.static.filter(a => !boundKeys.has(canonicalAddress(a)));
  const extra = request.dynamic ? assigned.filter(a => !boundKeys.has(canonicalAddress(a))) : [];
  if (missing.length === 0) return { addresses: [...bound, ...extra] };

  const wanted = loadBalancerIP(request);
  const isLb = service.type === undefined || service.type === "LoadBalancer";
  const list = (as: readonly Address[]) => as.map(a => a.value).join(", ");
  if (managed && isLb && wanted !== undefined && service.loadBalancerIP !== wanted)
    return {
      addresses: bound,
      problem: {
        reason: "AddressNotAssigned",
        message: `requesting ${wanted} (${request.source}) from the load balancer of Service ${service.name}`,
      },
    };
  if (assigned.length === 0 && managed && isLb && missing.every(a => a.value === wanted))
    return {
      addresses: bound,
      problem: {
        reason: "AddressNotAssigned",
        message: `waiting for the load balancer to assign ${wanted} (${request.source}) to Service ${service.name}`,
      },
    };
  const why = (a: Address): string => {
    if ((a.type ?? "IPAddress") === "IPAddress" && isIP(a.value) === 0) return "not an IP address";
    if (!managed)
      return `the proxies' Service ${service.name} is not managed by the controller (mode External): give it this address yourself`;
    if (!isLb)
      return `static addresses are requested from a LoadBalancer Service, and the parameters make Service ${service.name} ${service.type}`;
    if (a.type === "Hostname")
      return "a Service cannot request a hostname; it is usable only when the load balancer reports it";
    if (a.value !== wanted)
      return `a Service requests one IP address (spec.loadBalancerIP), here ${wanted}`;
    return assigned.length
      ? `the load balancer of Service ${service.name} assigned ${list(assigned)} instead (the address is outside its range or in use)`
      : `the load balancer of Service ${service.name} has not assigned it`;
  };
  return {
    addresses: bound,
    problem: {
      reason: "AddressNotUsable",
      message: `${missing.map(a => `${a.value} (${request.source}) cannot be used: ${why(a)}`).join("; ")}; use addresses the load balancer can assign, or remove them`,
    },
  };
}
