/**
 * Egress per Gateway (docs/operations.md §11): where the Gateway's proxies may connect for its
 * tenants. Pure but for two module-level memos (parsed CIDR lists per list object, the
 * Services owning each proxy address per Service map), which change the cost only. Compilation (routes.ts, listenerfilters.ts) marks every upstream whose address
 * is a DNS name a tenant wrote (an ExternalHostname XBackend, as a backendRef, a RequestMirror
 * or an ExternalAuth backendRef) with an `egressGuard`; here each Gateway decides:
 *
 * - Names: used only when the class's KengineParameters set `spec.egress.externalHostnames:
 *   Allowed` and the flavour has the dial guard (Bundled); then the guard carries the class's
 *   `deniedCIDRs` and the proxy checks every address the name resolves to when it dials
 *   (proxy/internal/egress). Otherwise the backend is not used (its share answers 500, a
 *   mirror is not sent, a listener filter is not served) and the route or listener reports
 *   ResolvedRefs=False with reason RefNotPermitted: of the spec's ResolvedRefs reasons it is
 *   the one that says "the reference exists and resolves, but its owner's policy does not
 *   permit it" (the class's switch plays the part of a ReferenceGrant).
 * - Addresses (Service endpoints, EndpointSelector XBackends): the controller sees them, so it
 *   checks them itself: an endpoint inside the class's `deniedCIDRs`, or equal to an address of
 *   one of the Gateway's own proxy pods (the EndpointSlices of its admin Service, or of its
 *   bring-your-own proxies' Services), is left out, and the route says which and why in its
 *   ResolvedRefs condition (False, RefNotPermitted) while the other endpoints serve. Kubernetes
 *   refuses loopback and link-local endpoint addresses itself.
 */
import type { BackendIR, EndpointIR, MirrorIR } from "../ir";
import { ProxyFlavor, missingCapability } from "../flavor/proxy-flavor";
import { Cidr, EgressSettings, cidrContains, parseCidr } from "../validation/egress";
import { OWNING_GATEWAY_LABEL, proxyNames } from "../provision/names";
import type { Gateway, Snapshot } from "../snapshot";
import { slicesByService } from "./backends";

/** What one Gateway's proxies may dial for its tenants. */
export interface EgressPolicy {
  readonly gatewayClass: string;
  /** `<namespace>/<name>` of the Gateway. */
  readonly gateway: string;
  readonly flavor: ProxyFlavor;
  readonly settings: EgressSettings;
  /** Addresses of the Gateway's own proxy pods, sorted. */
  readonly proxyAddresses: readonly string[];
}

/** An upstream as compilation left it: its id, endpoints and whether they are a tenant's name. */
interface Target {
  readonly id: string;
  readonly endpoints: readonly EndpointIR[];
  readonly egressGuard?: unknown;
}

const parsed = new WeakMap<readonly string[], readonly (readonly [string, Cidr])[]>();
function cidrsOf(list: readonly string[]): readonly (readonly [string, Cidr])[] {
  let found = parsed.get(list);
  if (!found) {
    found = list.flatMap(c => {
      const r = parseCidr(c);
      return r.ok ? [[c, r.value] as const] : [];
    });
    parsed.set(list, found);
  }
  return found;
}

type Services = Snapshot["objects"]["Service"];
const owning = new WeakMap<Services, ReadonlyMap<string, readonly string[]>>();

/**
 * Bring-your-own proxies' Services (`namespace/name`) by `<namespace>/<gateway>`, made once per
 * Service map (not once per Gateway and build).
 */
function owningServices(s: Snapshot): ReadonlyMap<string, readonly string[]> {
  let index = owning.get(s.objects.Service);
  if (!index) {
    const m = new Map<string, string[]>();
    for (const svc of s.objects.Service.values()) {
      const gw = svc.metadata.labels?.[OWNING_GATEWAY_LABEL];
      if (gw === undefined) continue;
      const key = `${svc.metadata.namespace ?? ""}/${gw}`;
      m.set(key, [...(m.get(key) ?? []), `${svc.metadata.namespace ?? ""}/${svc.metadata.name}`]);
    }
    owning.set(s.objects.Service, (index = m));
  }
  return index;
}

/**
 * Addresses of the Gateway's proxy pods (ready or not): the EndpointSlices of its managed
 * Services and of the Services labelled as its bring-your-own proxies'.
 */
export function proxyAddresses(s: Snapshot, gw: Gateway): string[] {
  const ns = gw.metadata.namespace ?? "";
  const names = proxyNames(gw.metadata.name);
  const services = new Set([
    `${ns}/${names.admin}`,
    `${ns}/${names.proxy}`,
    ...(owningServices(s).get(`${ns}/${gw.metadata.name}`) ?? []),
  ]);
  const out = new Set<string>();
  const slices = slicesByService(s);
  for (const key of services)
    for (const slice of slices.get(key) ?? [])
      for (const ep of slice.endpoints ?? []) for (const a of ep.addresses ?? []) out.add(a);
  return [...out].sort();
}

/**
 * Why this Gateway does not dial names tenants write (the message of ResolvedRefs), or
 * undefined when it does (through the guard).
 */
export function namedRefusal(p: EgressPolicy): string | undefined {
  if (p.settings.externalHostnames !== "Allowed")
    return `external hostnames are not allowed for GatewayClass ${p.gatewayClass} (the KengineParameters it references must set spec.egress.externalHostnames: Allowed)`;
  const missing = missingCapability(p.flavor, ["egressGuard"]);
  if (missing) return `${missing}, so external hostnames are refused on it`;
  return undefined;
}

/** Why an endpoint address may not be dialled from this Gateway, or undefined. */
export function endpointRefusal(p: EgressPolicy, address: string): string | undefined {
  if (p.proxyAddresses.includes(address)) return `is a proxy pod of Gateway ${p.gateway} itself`;
  for (const [text, cidr] of cidrsOf(p.settings.deniedCIDRs))
    if (cidrContains(cidr, address))
      return `is inside ${text} (spec.egress.deniedCIDRs of GatewayClass ${p.gatewayClass})`;
  return undefined;
}

/** A target as this Gateway may use it: undefined when not at all. */
function gated<T extends Target>(p: EgressPolicy, t: T): T | undefined {
  if (t.egressGuard !== undefined)
    return namedRefusal(p) ? undefined : { ...t, egressGuard: { deny: p.settings.deniedCIDRs } };
  if (p.proxyAddresses.length === 0 && p.settings.deniedCIDRs.length === 0) return t;
  const endpoints = t.endpoints.filter(e => endpointRefusal(p, e.address) === undefined);
  return endpoints.length === t.endpoints.length ? t : { ...t, endpoints };
}

/** A rule's backends on this Gateway: a refused name keeps its share as invalid (HTTP 500). */
export function gatedBackends(
  p: EgressPolicy,
  backends: readonly BackendIR[],
): readonly BackendIR[] {
  let changed = false;
  const out = backends.map(b => {
    if (b.type !== "service") return b;
    const g: BackendIR = gated(p, b) ?? { type: "invalid", id: b.id, weight: b.weight };
    changed ||= g !== b;
    return g;
  });
  return changed ? out : (backends as BackendIR[]);
}

/** A rule's mirrors on this Gateway: refused names and mirrors left without endpoints dropped. */
export function gatedMirrors(
  p: EgressPolicy,
  mirrors: readonly MirrorIR[] | undefined,
): readonly MirrorIR[] | undefined {
  if (!mirrors) return undefined;
  const out = mirrors.flatMap(m => {
    const g = gated(p, m);
    return g && g.endpoints.length > 0 ? [g] : [];
  });
  return out.length > 0 ? out : undefined;
}

/** Endpoints this Gateway may dial (layer-4 backends, listener filters' Services). */
export function gatedEndpoints(p: EgressPolicy, endpoints: readonly EndpointIR[]): EndpointIR[] {
  return gated(p, { id: "", endpoints })?.endpoints.slice() ?? [];
}

/**
 * What this Gateway leaves out of the targets a route uses, as one ResolvedRefs message, or
 * undefined when it leaves out nothing. At most a few named; the count of the rest.
 */
export function egressProblem(p: EgressPolicy, targets: Iterable<Target>): string | undefined {
  const seen = new Set<string>();
  const named = namedRefusal(p);
  const checkAddresses = p.proxyAddresses.length > 0 || p.settings.deniedCIDRs.length > 0;
  for (const t of targets) {
    if (t.egressGuard !== undefined) {
      const line = `${t.id} (ExternalHostname ${t.endpoints[0]?.address ?? ""}) is not used: ${named}`;
      if (named) seen.add(line);
      continue;
    }
    if (!checkAddresses) continue;
    for (const e of t.endpoints) {
      const why = endpointRefusal(p, e.address);
      const line = `${t.id}: endpoint ${e.address} left out: it ${why}`;
      if (why) seen.add(line);
    }
  }
  // A Set keeps the order lines were first added in.
  const found = [...seen];
  if (found.length === 0) return undefined;
  const shown = found.slice(0, 3).join("; ");
  return found.length > 3 ? `${shown}; and ${found.length - 3} more` : shown;
}

/** Every target of compiled HTTP rules: backends and mirrors. */
export function* ruleTargets(
  rules: readonly {
    readonly backends: readonly BackendIR[];
    readonly mirrors?: readonly MirrorIR[];
  }[],
): Iterable<Target> {
  for (const r of rules) {
    for (const b of r.backends) if (b.type === "service") yield b;
    for (const m of r.mirrors ?? []) yield m;
  }
}
