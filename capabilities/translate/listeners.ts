/**
 * Listener resolution for one Gateway (and the ListenerSets attached to it): validation,
 * supported route kinds, certificate references, and conflicts between listeners that
 * share a port.
 */
import { checkKeyPair } from "../validation/keypair";
import { CertificateIR, ListenerFilterIR } from "../ir";
import {
  GATEWAY_GROUP,
  Gateway,
  Listener,
  ListenerSet,
  RouteGroupKind,
  Snapshot,
  keyOf,
  selectorMatches,
} from "../snapshot";
import { Condition, ConditionType, ListenerReason, condition } from "./conditions";
import { refPermitted } from "./refs";
import { ClientValidation, frontendValidation } from "./gatewaytls";
import { listenerProblems } from "../validation/gateway";
import { problemText } from "../validation/message";
import {
  ACME_LISTENERSET_MESSAGE,
  acmeIssuerOf,
  ingressPlatformNameMessage,
  isIngressAcmeListener,
} from "../validation/acme";
import { acmeListener } from "./acme";
import { ingressOnlyClass } from "../ingress/fleet";
import { isIngressObject } from "../ingress/synthetic";
import { resolveListenerFilters } from "./listenerfilters";
import type { EgressPolicy } from "./egress";
import { DEFAULT_PROXY_FLAVOR, ProxyFlavor } from "../flavor/proxy-flavor";
import { DEFAULT_LIMITS, Limits } from "../validation/limits";

import type { RouteKind } from "../ir/refusable";

export type { RouteKind };

export interface ListenerOwner {
  readonly kind: "Gateway" | "ListenerSet";
  readonly namespace: string;
  readonly name: string;
  readonly generation?: number;
  /** Lower is higher precedence: the Gateway 0, ListenerSets 1, 2, … by age then name. */
  readonly precedence: number;
}

export interface ResolvedListener {
  readonly owner: ListenerOwner;
  readonly listener: Listener;
  /**
   * `<namespace>/<Gateway name>/<listener name>`, or `ListenerSet:<namespace>/<name>/<listener
   * name>` (a ListenerSet may share its Gateway's name, and its listeners their names).
   */
  readonly id: string;
  readonly supportedKinds: readonly { readonly group: string; readonly kind: RouteKind }[];
  /** Accepted, Programmed, ResolvedRefs, Conflicted. */
  readonly conditions: readonly Condition[];
  /** Whether the proxy serves this listener (accepted, not conflicted, references resolved). */
  readonly served: boolean;
  readonly certificates: readonly CertificateIR[];
  /** HTTPS: the client certificate validation of its port (Gateway spec.tls.frontend). */
  readonly clientValidation?: ClientValidation;
  /** Pre-routing filters (filters.requests), in order; empty when it has none. */
  readonly filters: readonly ListenerFilterIR[];
}

const PROTOCOL_KINDS: Readonly<Record<string, readonly RouteKind[]>> = {
  HTTP: ["HTTPRoute", "GRPCRoute"],
  HTTPS: ["HTTPRoute", "GRPCRoute"],
  TLS: ["TLSRoute"],
  TCP: ["TCPRoute"],
  UDP: ["UDPRoute"],
};

const transport = (protocol: string): string => (protocol === "UDP" ? "udp" : "tcp");

interface Draft {
  owner: ListenerOwner;
  listener: Listener;
  id: string;
  supportedKinds: { group: string; kind: RouteKind }[];
  accepted?: { reason: string; message: string };
  resolvedRefs?: { reason: string; message: string };
  /** resolvedRefs does not stop the listener being served (some CA refs are still usable). */
  resolvedRefsServed?: boolean;
  /** Automatic HTTPS: waiting for the certificate (Programmed=False, Pending). */
  pending?: string;
  /** ResolvedRefs=True's message, when there is more to say than "resolved" (ACME). */
  resolvedNote?: string;
  conflicted?: { reason: string; message: string };
  certificates: CertificateIR[];
  clientValidation?: ClientValidation;
  filters?: readonly ListenerFilterIR[];
  /** A pre-routing filter cannot run: never served without it, whatever else is resolved. */
  filtersUnresolved?: boolean;
}

/** ListenerSets attached to `gw` and allowed by its `allowedListeners`, in precedence order. */
export function listenerSetsOf(
  s: Snapshot,
  gw: Gateway,
): { allowed: ListenerSet[]; refused: ListenerSet[] } {
  const allowed: ListenerSet[] = [];
  const refused: ListenerSet[] = [];
  const gwNs = gw.metadata.namespace ?? "";
  const sets = [...s.objects.ListenerSet.values()].filter(ls => {
    const p = ls.spec?.parentRef;
    return (
      p &&
      (p.group ?? GATEWAY_GROUP) === GATEWAY_GROUP &&
      (p.kind ?? "Gateway") === "Gateway" &&
      p.name === gw.metadata.name &&
      (p.namespace ?? ls.metadata.namespace) === gwNs
    );
  });
  sets.sort((a, b) => {
    const ta = a.metadata.creationTimestamp ?? "";
    const tb = b.metadata.creationTimestamp ?? "";
    if (ta !== tb) return ta < tb ? -1 : 1;
    return keyOf(a) < keyOf(b) ? -1 : 1;
  });
  const from = gw.spec.allowedListeners?.namespaces?.from ?? "None";
  // An IngressClass's own Gateway takes only what was made from its Ingresses (ingress/fleet.ts).
  const ingressOnly = ingressOnlyClass(gw) !== undefined;
  for (const ls of sets) {
    const ns = ls.metadata.namespace ?? "";
    const ok =
      (!ingressOnly || isIngressObject(ls)) &&
      (from === "All" ||
        (from === "Same" && ns === gwNs) ||
        (from === "Selector" &&
          selectorMatches(
            gw.spec.allowedListeners?.namespaces?.selector,
            s.objects.Namespace.get(ns)?.metadata.labels,
          )));
    (ok ? allowed : refused).push(ls);
  }
  return { allowed, refused };
}

/** Resolves every listener of a Gateway and of its allowed ListenerSets. */
export function resolveListeners(
  s: Snapshot,
  gw: Gateway,
  listenerSets: readonly ListenerSet[],
  flavor: ProxyFlavor = DEFAULT_PROXY_FLAVOR,
  limits: Limits = DEFAULT_LIMITS,
  egress?: EgressPolicy,
): ResolvedListener[] {
  const drafts: Draft[] = [];
  const gwOwner: ListenerOwner = {
    kind: "Gateway",
    namespace: gw.metadata.namespace ?? "",
    name: gw.metadata.name,
    generation: gw.metadata.generation,
    precedence: 0,
  };
  (gw.spec.listeners ?? []).forEach((l, i) =>
    drafts.push(draft(s, gw, gwOwner, l, i, flavor, limits, egress)),
  );
  listenerSets.forEach((ls, i) => {
    const owner: ListenerOwner = {
      kind: "ListenerSet",
      namespace: ls.metadata.namespace ?? "",
      name: ls.metadata.name,
      generation: ls.metadata.generation,
      precedence: i + 1,
    };
    (ls.spec?.listeners ?? []).forEach((l, j) =>
      drafts.push(draft(s, gw, owner, l, j, flavor, limits, egress)),
    );
  });
  markConflicts(drafts);
  return drafts.map(finish);
}

function draft(
  s: Snapshot,
  gw: Gateway,
  owner: ListenerOwner,
  l: Listener,
  listenerIndex: number,
  flavor: ProxyFlavor,
  limits: Limits,
  egress: EgressPolicy | undefined,
): Draft {
  const d: Draft = {
    owner,
    listener: l,
    id: `${owner.kind === "ListenerSet" ? "ListenerSet:" : ""}${owner.namespace}/${owner.name}/${l.name}`,
    supportedKinds: [],
    certificates: [],
  };
  // Values no proxy of ours can run (the same rules admission applies).
  const problems = listenerProblems(`spec.listeners[${listenerIndex}]`, l);
  if (problems.length > 0) {
    d.accepted = {
      reason: problems.some(p => p.path.endsWith(".port"))
        ? ListenerReason.PortUnavailable
        : ListenerReason.UnsupportedValue,
      message: problems.map(problemText).join("; "),
    };
    return d;
  }
  const kinds = PROTOCOL_KINDS[l.protocol];
  if (!kinds) {
    d.accepted = {
      reason: ListenerReason.UnsupportedProtocol,
      message: `protocol ${l.protocol} is not supported`,
    };
    return d;
  }
  // Route kinds.
  if (l.allowedRoutes?.kinds && l.allowedRoutes.kinds.length > 0) {
    const invalid: string[] = [];
    for (const k of l.allowedRoutes.kinds as readonly RouteGroupKind[]) {
      const group = k.group ?? GATEWAY_GROUP;
      if (group === GATEWAY_GROUP && (kinds as readonly string[]).includes(k.kind)) {
        if (!d.supportedKinds.some(x => x.kind === k.kind))
          d.supportedKinds.push({ group, kind: k.kind as RouteKind });
      } else invalid.push(`${k.kind}.${group || "core"}`);
    }
    if (invalid.length > 0) {
      d.resolvedRefs = {
        reason: ListenerReason.InvalidRouteKinds,
        message: `route kinds not supported on a ${l.protocol} listener: ${invalid.join(", ")}`,
      };
    }
  } else {
    d.supportedKinds = kinds.map(kind => ({ group: GATEWAY_GROUP, kind }));
  }
  // TLS.
  const mode = l.tls?.mode ?? "Terminate";
  if (l.protocol === "HTTPS" || (l.protocol === "TLS" && mode === "Terminate")) {
    if (mode !== "Terminate") {
      d.accepted = {
        reason: ListenerReason.UnsupportedProtocol,
        message: "HTTPS listeners terminate TLS; use protocol TLS for Passthrough",
      };
      return d;
    }
    const refs = l.tls?.certificateRefs ?? [];
    const issuer = acmeIssuerOf(l);
    const fromIngress = owner.kind === "ListenerSet" && isIngressAcmeListener(l);
    if (issuer !== undefined && owner.kind === "ListenerSet" && !fromIngress) {
      // The ACME manager orders for a Gateway's own listeners only (acme/issuers.ts), and
      // HTTP-01 is answered only for those (translate/acme.ts): a tenant's ListenerSet never
      // spends the platform's issuer account nor answers a challenge for the platform's name.
      d.resolvedRefs = {
        reason: ListenerReason.InvalidCertificateRef,
        message: ACME_LISTENERSET_MESSAGE,
      };
    } else if (
      issuer !== undefined &&
      fromIngress &&
      l.hostname &&
      (gw.spec.listeners ?? []).some(o => o.hostname?.toLowerCase() === l.hostname!.toLowerCase())
    ) {
      // The platform's own name: the Gateway's listener holds its certificate.
      d.resolvedRefs = {
        reason: ListenerReason.InvalidCertificateRef,
        message: ingressPlatformNameMessage(l.hostname, keyOf(gw)),
      };
    } else if (issuer !== undefined) {
      const r = acmeListener(s, gw, l, issuer, d.certificates, owner.namespace);
      if (r.resolvedRefs) d.resolvedRefs = r.resolvedRefs;
      if (r.pending !== undefined) d.pending = r.pending;
      if (r.note !== undefined) d.resolvedNote = r.note;
    } else if (refs.length === 0) {
      d.resolvedRefs = {
        reason: ListenerReason.InvalidCertificateRef,
        message: `a ${l.protocol} listener that terminates TLS needs at least one certificateRef`,
      };
    }
    for (const ref of refs) {
      const problem = resolveCertificate(s, owner, ref, d.certificates);
      if (problem) {
        d.resolvedRefs = problem;
        break;
      }
    }
  }
  // Client certificate validation (Gateway spec.tls.frontend), HTTPS listeners only.
  const fv = l.protocol === "HTTPS" ? frontendValidation(s, gw, l.port) : undefined;
  if (fv) {
    if (fv.problem && !d.resolvedRefs) {
      d.resolvedRefs = fv.problem;
      d.resolvedRefsServed = fv.validation !== undefined;
    }
    if (fv.validation) d.clientValidation = fv.validation;
    else
      d.accepted = {
        reason: ListenerReason.NoValidCACertificate,
        message: `no usable CA certificate for client certificate validation: ${fv.problem?.message ?? "no caCertificateRefs"}`,
      };
  }
  // Pre-routing filters (translate/listenerfilters.ts).
  const lf = resolveListenerFilters(s, owner.kind, owner.namespace, l, flavor, limits, egress);
  if (lf.ok) {
    if (lf.filters.length > 0) d.filters = lf.filters;
  } else if (lf.condition === "Accepted") {
    d.accepted = { reason: lf.reason, message: lf.message };
  } else {
    d.filtersUnresolved = true;
    if (!d.resolvedRefs || d.resolvedRefsServed)
      d.resolvedRefs = { reason: lf.reason, message: lf.message };
  }
  return d;
}

function resolveCertificate(
  s: Snapshot,
  owner: ListenerOwner,
  ref: NonNullable<NonNullable<Listener["tls"]>["certificateRefs"]>[number],
  into: CertificateIR[],
): { reason: string; message: string } | undefined {
  const group = ref.group ?? "";
  const kind = ref.kind ?? "Secret";
  const ns = ref.namespace ?? owner.namespace;
  const id = `${ns}/${ref.name}`;
  if (group !== "" || kind !== "Secret") {
    return {
      reason: ListenerReason.InvalidCertificateRef,
      message: `certificateRef ${kind}.${group || "core"} ${id}: only core Secrets are supported`,
    };
  }
  if (
    !refPermitted(
      s,
      { group: GATEWAY_GROUP, kind: owner.kind, namespace: owner.namespace },
      { group: "", kind: "Secret", namespace: ns, name: ref.name },
    )
  ) {
    return {
      reason: ListenerReason.RefNotPermitted,
      message: `certificateRef to Secret ${id} is not permitted by any ReferenceGrant in namespace ${ns}`,
    };
  }
  const secret = s.objects.Secret.get(id);
  if (!secret)
    return { reason: ListenerReason.InvalidCertificateRef, message: `Secret ${id} not found` };
  const crt = decode(secret.data?.["tls.crt"]);
  const key = decode(secret.data?.["tls.key"]);
  if (!crt || !key)
    return {
      reason: ListenerReason.InvalidCertificateRef,
      message: `Secret ${id} must hold tls.crt and tls.key`,
    };
  const pair = checkKeyPair(crt, key);
  if (!pair.ok)
    return {
      reason: ListenerReason.InvalidCertificateRef,
      message: `Secret ${id} cannot be served: ${pair.error}`,
    };
  if (!into.some(c => c.id === id)) into.push({ id, certificatePem: crt, keyPem: key });
  return undefined;
}

const decode = (b64: string | undefined): string | undefined =>
  b64 === undefined ? undefined : Buffer.from(b64, "base64").toString("utf8");

/**
 * Listeners on one port must share the protocol (TCP- and UDP-based protocols may share a
 * port number), and same-protocol listeners must differ in hostname (TCP, UDP: may not
 * share). Owners are settled in precedence order (the Gateway, then its ListenerSets): a
 * listener indistinct from a live listener of a higher-precedence owner loses; the listeners
 * of one owner left after that which are indistinct from each other are all Conflicted. A
 * listener that lost does not take its siblings down with it.
 */
function markConflicts(drafts: Draft[]): void {
  const live: Draft[] = [];
  const owners = [...new Set(drafts.map(d => d.owner.precedence))].sort((a, b) => a - b);
  for (const precedence of owners) {
    const group = drafts.filter(d => !d.accepted && d.owner.precedence === precedence);
    for (const d of group) {
      for (const o of live) {
        d.conflicted = conflictBetween(d, o);
        if (d.conflicted) break;
      }
    }
    const survivors = group.filter(d => !d.conflicted);
    for (const d of survivors) {
      for (const o of survivors) {
        if (o === d) continue;
        d.conflicted = conflictBetween(d, o);
        if (d.conflicted) break;
      }
    }
    live.push(...survivors.filter(d => !d.conflicted));
  }
}

/** Why `d` cannot share the proxy with `o`, if it cannot. */
function conflictBetween(d: Draft, o: Draft): Draft["conflicted"] {
  if (o.listener.port !== d.listener.port) return undefined;
  if (transport(o.listener.protocol) !== transport(d.listener.protocol)) return undefined;
  if (o.listener.protocol !== d.listener.protocol) {
    return {
      reason: ListenerReason.ProtocolConflict,
      message: `port ${d.listener.port} is also used by listener ${o.id} with protocol ${o.listener.protocol}`,
    };
  }
  const hostless = d.listener.protocol === "TCP" || d.listener.protocol === "UDP";
  if (
    hostless ||
    (o.listener.hostname ?? "").toLowerCase() === (d.listener.hostname ?? "").toLowerCase()
  ) {
    return {
      reason: ListenerReason.HostnameConflict,
      message: hostless
        ? `port ${d.listener.port} is also used by ${d.listener.protocol} listener ${o.id}`
        : `hostname ${JSON.stringify(d.listener.hostname ?? "")} on port ${d.listener.port} is also used by listener ${o.id}`,
    };
  }
  return undefined;
}

function finish(d: Draft): ResolvedListener {
  const gen = d.owner.generation;
  const conditions: Condition[] = [];
  const problem = d.accepted ?? d.conflicted;
  conditions.push(
    problem
      ? condition(ConditionType.Accepted, false, problem.reason, problem.message, gen)
      : condition(ConditionType.Accepted, true, ListenerReason.Accepted, "listener accepted", gen),
  );
  // A listener with some unsupported route kinds still serves the supported ones.
  const refsBlock =
    d.resolvedRefs &&
    !d.resolvedRefsServed &&
    !(d.resolvedRefs.reason === ListenerReason.InvalidRouteKinds && d.supportedKinds.length > 0);
  const served =
    !d.accepted && !d.conflicted && !refsBlock && !d.filtersUnresolved && d.pending === undefined;
  conditions.push(
    served
      ? condition(
          ConditionType.Programmed,
          true,
          ListenerReason.Programmed,
          "listener programmed",
          gen,
        )
      : condition(
          ConditionType.Programmed,
          false,
          programmedReason(d),
          (d.accepted ?? d.conflicted ?? d.resolvedRefs)?.message ?? d.pending ?? "not programmed",
          gen,
        ),
  );
  conditions.push(
    d.resolvedRefs
      ? condition(
          ConditionType.ResolvedRefs,
          false,
          d.resolvedRefs.reason,
          d.resolvedRefs.message,
          gen,
        )
      : condition(
          ConditionType.ResolvedRefs,
          true,
          ListenerReason.ResolvedRefs,
          d.resolvedNote ?? "all references resolved",
          gen,
        ),
  );
  conditions.push(
    d.conflicted
      ? condition(ConditionType.Conflicted, true, d.conflicted.reason, d.conflicted.message, gen)
      : condition(ConditionType.Conflicted, false, ListenerReason.NoConflicts, "no conflicts", gen),
  );
  return {
    owner: d.owner,
    listener: d.listener,
    id: d.id,
    supportedKinds: d.supportedKinds,
    conditions,
    served,
    certificates: d.certificates,
    ...(d.clientValidation && { clientValidation: d.clientValidation }),
    filters: d.filters ?? [],
  };
}

/**
 * Why a listener is not programmed: its conflict or an unavailable port as such (the
 * ListenerSet conformance tests expect a conflicted listener's Programmed reason to name the
 * conflict), anything else Invalid.
 */
function programmedReason(d: Draft): string {
  if (!d.accepted && d.conflicted) return d.conflicted.reason;
  if (d.accepted?.reason === ListenerReason.PortUnavailable) return ListenerReason.PortUnavailable;
  if (!d.accepted && !d.conflicted && !d.resolvedRefs && d.pending !== undefined)
    return ListenerReason.Pending;
  return ListenerReason.Invalid;
}

/** Whether a route in `routeNamespace` may attach to this listener by namespace. */
export function namespaceAllowed(
  s: Snapshot,
  l: ResolvedListener,
  routeNamespace: string,
): boolean {
  const from = l.listener.allowedRoutes?.namespaces?.from ?? "Same";
  switch (from) {
    case "All":
      return true;
    case "Same":
      return routeNamespace === l.owner.namespace;
    case "Selector":
      return selectorMatches(
        l.listener.allowedRoutes?.namespaces?.selector ?? {
          matchLabels: { "kubernetes.io/metadata.name": "\u0000none" },
        },
        s.objects.Namespace.get(routeNamespace)?.metadata.labels,
      );
    default:
      return false;
  }
}
