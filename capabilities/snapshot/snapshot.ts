/**
 * The immutable snapshot of every watched kind, and the decision whether an event can
 * change any output. `apply` never mutates its input: it returns a new Snapshot that shares
 * the maps of the kinds the event did not touch.
 */
import {
  GATEWAY_GROUP,
  Gateway,
  HTTPRoute,
  KINDS,
  Kind,
  KindMap,
  KubeObject,
  ParentReference,
} from "./types";

/** The controllerName our GatewayClasses carry (defined once, in ownership/). */
export { CONTROLLER_NAME } from "../ownership";
import { isOurClass } from "../ownership";
import { acmeGrantOf, acmeIssuerOf, acmeSecretName } from "../validation/acme";
import { metadataOnly } from "./strip";
import { namespaceChangeMatters } from "./namespace-change";

export type ObjectMapOf<K extends Kind> = ReadonlyMap<string, KindMap[K]>;

export interface Snapshot {
  /** Objects by kind, keyed by `namespace/name` (cluster-scoped kinds: `name`). */
  readonly objects: { readonly [K in Kind]: ObjectMapOf<K> };
  /** True once the first full list of a kind has been ingested. */
  readonly synced: { readonly [K in Kind]: boolean };
}

export type SnapshotEvent =
  | { readonly type: "upsert"; readonly kind: Kind; readonly object: KubeObject }
  | { readonly type: "delete"; readonly kind: Kind; readonly object: KubeObject }
  /** The first full list of `kind` has been delivered (Pepr Watch's initial list is done). */
  | { readonly type: "synced"; readonly kind: Kind };

export interface ApplyResult {
  readonly snapshot: Snapshot;
  /** False when the event cannot change any translation output (or nothing may build yet). */
  readonly relevant: boolean;
}

export const keyOf = (o: KubeObject): string =>
  o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;

export function emptySnapshot(): Snapshot {
  const objects = {} as Record<Kind, ReadonlyMap<string, KubeObject>>;
  const synced = {} as Record<Kind, boolean>;
  for (const k of KINDS) {
    objects[k] = new Map();
    synced[k] = false;
  }
  return { objects: objects as Snapshot["objects"], synced };
}

/** A snapshot with every kind marked synced, built from a list of objects (goldens, CLI). */
export function snapshotOf(objects: readonly KubeObject[]): Snapshot {
  const byKind = {} as Record<Kind, Map<string, KubeObject>>;
  for (const k of KINDS) byKind[k] = new Map();
  for (const o of objects) {
    const kind = o.kind as Kind;
    if (!byKind[kind]) throw new Error(`unsupported kind ${String(o.kind)} (${o.metadata?.name})`);
    byKind[kind].set(keyOf(o), o);
  }
  const synced = {} as Record<Kind, boolean>;
  for (const k of KINDS) synced[k] = true;
  return { objects: byKind as unknown as Snapshot["objects"], synced };
}

export const isSynced = (s: Snapshot): boolean => KINDS.every(k => s.synced[k]);

/** Applies one event. */
export function apply(snapshot: Snapshot, event: SnapshotEvent): ApplyResult {
  return applyAll(snapshot, [event]);
}

/** Applies a batch of events, copying each touched kind's map once. */
export function applyAll(snapshot: Snapshot, events: readonly SnapshotEvent[]): ApplyResult {
  const wasSynced = isSynced(snapshot);
  const maps = new Map<Kind, Map<string, KubeObject>>();
  const synced = { ...snapshot.synced } as Record<Kind, boolean>;
  const changes: { kind: Kind; before?: KubeObject; after?: KubeObject }[] = [];
  const mapFor = (k: Kind): Map<string, KubeObject> => {
    let m = maps.get(k);
    if (!m) {
      m = new Map(snapshot.objects[k] as ReadonlyMap<string, KubeObject>);
      maps.set(k, m);
    }
    return m;
  };
  for (const e of events) {
    if (e.type === "synced") {
      synced[e.kind] = true;
      continue;
    }
    const key = keyOf(e.object);
    const current = (maps.get(e.kind) ?? snapshot.objects[e.kind]).get(key) as
      | KubeObject
      | undefined;
    if (e.type === "delete") {
      if (!current) continue;
      mapFor(e.kind).delete(key);
      changes.push({ kind: e.kind, before: current });
    } else {
      if (current && sameVersion(current, e.object)) continue;
      mapFor(e.kind).set(key, e.object);
      changes.push({ kind: e.kind, before: current, after: e.object });
    }
  }
  if (maps.size === 0 && KINDS.every(k => synced[k] === snapshot.synced[k])) {
    return { snapshot, relevant: false };
  }
  const objects = { ...snapshot.objects } as Record<Kind, ReadonlyMap<string, KubeObject>>;
  for (const [k, m] of maps) {
    objects[k] = m;
    recordLineage(
      snapshot.objects[k],
      m,
      changes.flatMap(c => (c.kind === k ? [keyOf((c.after ?? c.before)!)] : [])),
    );
  }
  const next: Snapshot = { objects: objects as Snapshot["objects"], synced };
  if (!isSynced(next)) return { snapshot: next, relevant: false };
  if (!wasSynced) return { snapshot: next, relevant: true };
  // Judge references against both states: an object that stops being referenced matters too.
  const relevant = changes.some(
    c => matters(snapshot, c.kind, c.before, c.after) || matters(next, c.kind, c.before, c.after),
  );
  return { snapshot: next, relevant };
}

/* ------------------------------------------------------------------ lineage */

/**
 * One version of a kind's map in its lineage: the keys changed from the version before it
 * (`parent`). The maps themselves are held weakly, so a version nobody holds is collected; the
 * steps (keys only) are held by the newer ones, at most MAX_DEPTH deep.
 */
interface Step {
  readonly map: WeakRef<ReadonlyMap<string, unknown>>;
  /** Undefined: not known (a batch of more than MAX_KEYS keys, or the first version seen). */
  readonly keys: ReadonlySet<string> | undefined;
  readonly parent: Step | undefined;
  readonly depth: number;
}

const MAX_DEPTH = 1024;
const MAX_KEYS = 256;
const EMPTY: ReadonlySet<string> = new Set();
const lineage = new WeakMap<ReadonlyMap<string, unknown>, Step>();

/**
 * Remembers which keys of a kind's map an event changed (work proportional to the
 * change), so a stage that worked from an earlier version can find what changed since.
 */
function recordLineage(
  parent: ReadonlyMap<string, unknown>,
  next: ReadonlyMap<string, unknown>,
  changed: readonly string[],
): void {
  let p = lineage.get(parent);
  if (!p) {
    p = { map: new WeakRef(parent), keys: undefined, parent: undefined, depth: 0 };
    lineage.set(parent, p);
  }
  const keys = changed.length <= MAX_KEYS ? new Set(changed) : undefined;
  const deep = p.depth + 1 >= MAX_DEPTH;
  lineage.set(next, {
    map: new WeakRef(next),
    keys,
    parent: keys && !deep ? p : undefined,
    depth: keys && !deep ? p.depth + 1 : 0,
  });
}

/**
 * The earlier versions of a kind's map still held (newest first), each with the keys whose
 * object differs between it and `map` (every other key maps to the same object in both). The
 * set given with one version is only valid until the next is asked for.
 */
export function* earlierVersions<V>(
  map: ReadonlyMap<string, V>,
): Iterable<readonly [ReadonlyMap<string, V>, ReadonlySet<string>]> {
  const acc = new Set<string>();
  for (let step = lineage.get(map); step?.keys && step.parent; step = step.parent) {
    for (const k of step.keys) acc.add(k);
    if (acc.size > MAX_KEYS) return;
    const earlier = step.parent.map.deref();
    if (earlier) yield [earlier as ReadonlyMap<string, V>, acc];
  }
}

/** The keys whose object differs between two versions of a kind's map; undefined: not known. */
export function changedKeys(
  from: ReadonlyMap<string, unknown>,
  to: ReadonlyMap<string, unknown>,
): ReadonlySet<string> | undefined {
  if (from === to) return EMPTY;
  for (const [earlier, keys] of earlierVersions(to)) if (earlier === from) return new Set(keys);
  return undefined;
}

/** The same version of an object, and both whole or both metadata only (strip.ts). */
function sameVersion(a: KubeObject, b: KubeObject): boolean {
  const ra = a.metadata.resourceVersion;
  return (
    ra !== undefined && ra === b.metadata.resourceVersion && metadataOnly(a) === metadataOnly(b)
  );
}

/* ------------------------------------------------------------------ relevance */

/** What the Gateway API objects of a snapshot reference, computed once per set of maps. */
export interface ReferenceIndex {
  readonly ourClasses: ReadonlySet<string>;
  readonly ourGateways: ReadonlySet<string>;
  readonly services: ReadonlySet<string>;
  readonly secrets: ReadonlySet<string>;
  readonly configMaps: ReadonlySet<string>;
  readonly namespaceSelectors: boolean;
  /** Namespaces with an EndpointSelector XBackend: each of their Services may be read. */
  readonly selectorNamespaces: ReadonlySet<string>;
}

const indexCache = new WeakMap<object, ReferenceIndex>();
const ROUTE_KINDS: ReadonlySet<Kind> = new Set([
  "HTTPRoute",
  "GRPCRoute",
  "TLSRoute",
  "TCPRoute",
  "UDPRoute",
]);

export function referenceIndex(s: Snapshot): ReferenceIndex {
  // The index depends only on these kinds; cache it on the tuple of their maps.
  const keyMaps = [
    s.objects.GatewayClass,
    s.objects.Gateway,
    s.objects.ListenerSet,
    s.objects.HTTPRoute,
    s.objects.GRPCRoute,
    s.objects.TLSRoute,
    s.objects.TCPRoute,
    s.objects.UDPRoute,
    s.objects.BackendTLSPolicy,
    s.objects.XBackend,
    // ACME issuer grants by namespace labels
    s.objects.KengineParameters,
  ];
  let level: WeakMap<object, unknown> = indexCache as WeakMap<object, unknown>;
  for (let i = 0; i < keyMaps.length - 1; i++) {
    let nextLevel = level.get(keyMaps[i]) as WeakMap<object, unknown> | undefined;
    if (!nextLevel) {
      nextLevel = new WeakMap();
      level.set(keyMaps[i], nextLevel);
    }
    level = nextLevel;
  }
  const last = keyMaps[keyMaps.length - 1];
  let idx = level.get(last) as ReferenceIndex | undefined;
  if (!idx) {
    idx = buildIndex(s);
    level.set(last, idx);
  }
  return idx;
}

function buildIndex(s: Snapshot): ReferenceIndex {
  const { ourClasses, ourGateways } = ownIndex(s);
  const { secrets, configMaps } = dataReferences(s);
  const services = new Set<string>();
  let namespaceSelectors = false;
  const addListenerRefs = (ns: string, listeners: Gateway["spec"]["listeners"]): void => {
    for (const l of listeners ?? []) {
      if (l.allowedRoutes?.namespaces?.from === "Selector") namespaceSelectors = true;
      // Pre-routing filters' authorization Services (translate/listenerfilters.ts).
      for (const f of l.filters?.requests ?? []) {
        const b = f.externalAuth?.backendRef;
        if (b) services.add(`${b.namespace ?? ns}/${b.name}`);
      }
    }
  };
  for (const gw of s.objects.Gateway.values()) {
    if (!ourClasses.has(gw.spec?.gatewayClassName)) continue;
    addListenerRefs(gw.metadata.namespace ?? "", gw.spec.listeners);
    if (gw.spec.allowedListeners?.namespaces?.from === "Selector") namespaceSelectors = true;
  }
  for (const ls of s.objects.ListenerSet.values()) {
    addListenerRefs(ls.metadata.namespace ?? "", ls.spec?.listeners);
  }
  // ACME issuers granted by namespace labels (acme/issuers.ts): a label change can grant one.
  if (!namespaceSelectors) namespaceSelectors = acmeSelectorGrants(s);
  const routeKinds = ["HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute"] as const;
  for (const kind of routeKinds) {
    for (const r of s.objects[kind].values()) {
      const ns = r.metadata.namespace ?? "";
      for (const rule of (r.spec?.rules ?? []) as HTTPRoute["spec"]["rules"] & object) {
        for (const b of rule.backendRefs ?? []) {
          if ((b.group ?? "") === "" && (b.kind ?? "Service") === "Service")
            services.add(`${b.namespace ?? ns}/${b.name}`);
        }
        for (const f of rule.filters ?? []) {
          const m = f.requestMirror?.backendRef;
          if (m) services.add(`${m.namespace ?? ns}/${m.name}`);
        }
      }
    }
  }
  // XBackends (translate/xbackend.ts): an EndpointSelector resolves through the Services (and
  // so EndpointSlices) of its namespace.
  const selectorNamespaces = new Set<string>();
  for (const xb of s.objects.XBackend.values())
    if (xb.spec?.type === "EndpointSelector") selectorNamespaces.add(xb.metadata.namespace ?? "");
  return {
    ourClasses,
    ourGateways,
    services,
    secrets,
    configMaps,
    namespaceSelectors,
    selectorNamespaces,
  };
}

/** The Secrets and ConfigMaps ("namespace/name") the Gateway API objects of a snapshot reference. */
export interface DataReferences {
  readonly secrets: ReadonlySet<string>;
  readonly configMaps: ReadonlySet<string>;
}

const dataCache = new WeakMap<
  object,
  WeakMap<object, WeakMap<object, WeakMap<object, WeakMap<object, DataReferences>>>>
>();

/**
 * Every Secret and ConfigMap the translator reads through a reference: listener
 * `certificateRefs` (our Gateways' listeners and every ListenerSet's), ACME certificate Secrets
 * (a Gateway's own listeners only), a Gateway's backend client certificate and frontend CA
 * ConfigMaps, and the CA references of BackendTLSPolicies and XBackends. Routes reference none, so the answer is cached
 * on the maps of the kinds that can (a route change never recomputes it).
 */
export function dataReferences(s: Snapshot): DataReferences {
  const keys = [
    s.objects.GatewayClass,
    s.objects.Gateway,
    s.objects.ListenerSet,
    s.objects.BackendTLSPolicy,
    s.objects.XBackend,
  ] as const;
  let a = dataCache.get(keys[0]);
  if (!a) dataCache.set(keys[0], (a = new WeakMap()));
  let b = a.get(keys[1]);
  if (!b) a.set(keys[1], (b = new WeakMap()));
  let c = b.get(keys[2]);
  if (!c) b.set(keys[2], (c = new WeakMap()));
  let d = c.get(keys[3]);
  if (!d) c.set(keys[3], (d = new WeakMap()));
  let refs = d.get(keys[4]);
  if (!refs) d.set(keys[4], (refs = collectDataReferences(s)));
  return refs;
}

/**
 * May an object of ours (`from`) read the Secret or ConfigMap `to` of another namespace? The
 * caller's ReferenceGrant check (translate/refs.ts); without one every reference counts.
 */
export type DataPermitted = (
  from: { readonly kind: "Gateway" | "ListenerSet"; readonly namespace: string },
  to: { readonly kind: "Secret" | "ConfigMap"; readonly namespace: string; readonly name: string },
) => boolean;

/**
 * The references of `dataReferences`, uncached: of our Gateways and the ListenerSets attached to
 * them, of every BackendTLSPolicy and XBackend (their references stay in their namespace), and
 * only to core Secrets and ConfigMaps; a reference to another namespace only when `permitted`.
 */
export function collectDataReferences(s: Snapshot, permitted?: DataPermitted): DataReferences {
  const { ourClasses, ourGateways } = ownIndex(s);
  const secrets = new Set<string>();
  const configMaps = new Set<string>();
  type Ref = {
    readonly group?: string;
    readonly kind?: string;
    readonly name: string;
    readonly namespace?: string;
  };
  const add = (
    from: Parameters<DataPermitted>[0],
    kind: "Secret" | "ConfigMap",
    ref: Ref,
    defaultKind?: string,
  ): void => {
    if ((ref.group ?? "") !== "" || (ref.kind ?? defaultKind) !== kind) return;
    const namespace = ref.namespace ?? from.namespace;
    if (
      namespace !== from.namespace &&
      permitted &&
      !permitted(from, { kind, namespace, name: ref.name })
    )
      return;
    (kind === "Secret" ? secrets : configMaps).add(`${namespace}/${ref.name}`);
  };
  const addListenerRefs = (
    from: Parameters<DataPermitted>[0],
    listeners: Gateway["spec"]["listeners"],
  ): void => {
    for (const l of listeners ?? []) {
      for (const ref of l.tls?.certificateRefs ?? []) add(from, "Secret", ref, "Secret");
      // ACME certificates (and HTTP-01 answers) are a Gateway's own listeners' only.
      if (from.kind === "Gateway" && acmeIssuerOf(l) !== undefined && l.hostname)
        secrets.add(`${from.namespace}/${acmeSecretName(l.hostname)}`);
    }
  };
  for (const gw of s.objects.Gateway.values()) {
    if (!ourClasses.has(gw.spec?.gatewayClassName)) continue;
    const from = { kind: "Gateway", namespace: gw.metadata.namespace ?? "" } as const;
    addListenerRefs(from, gw.spec.listeners);
    const tls = gw.spec.tls;
    const client = tls?.backend?.clientCertificateRef;
    if (client) add(from, "Secret", client, "Secret");
    for (const v of [
      tls?.frontend?.default?.validation,
      ...(tls?.frontend?.perPort ?? []).map(p => p.tls?.validation),
    ])
      for (const ref of v?.caCertificateRefs ?? []) add(from, "ConfigMap", ref);
  }
  for (const ls of s.objects.ListenerSet.values()) {
    const ns = ls.metadata.namespace ?? "";
    const parent = ls.spec?.parentRef;
    if (
      !parent ||
      (parent.group ?? GATEWAY_GROUP) !== GATEWAY_GROUP ||
      (parent.kind ?? "Gateway") !== "Gateway" ||
      !ourGateways.has(`${parent.namespace ?? ns}/${parent.name}`)
    )
      continue;
    addListenerRefs({ kind: "ListenerSet", namespace: ns }, ls.spec?.listeners);
  }
  for (const p of s.objects.BackendTLSPolicy.values()) {
    const ns = p.metadata.namespace ?? "";
    for (const ref of p.spec?.validation?.caCertificateRefs ?? []) {
      if (ref.kind === "Secret") secrets.add(`${ns}/${ref.name}`);
      else configMaps.add(`${ns}/${ref.name}`);
    }
  }
  // XBackends (translate/xbackend.ts): their CA ConfigMaps.
  for (const xb of s.objects.XBackend.values()) {
    const ns = xb.metadata.namespace ?? "";
    for (const ref of xb.spec?.tls?.validation?.caCertificateRefs ?? [])
      if (ref.kind === "ConfigMap") configMaps.add(`${ns}/${ref.name}`);
  }
  return { secrets, configMaps };
}

/** Whether some KengineParameters grants an ACME issuer by namespace labels. */
function acmeSelectorGrants(s: Snapshot): boolean {
  for (const p of s.objects.KengineParameters.values()) {
    const issuers = (p.spec?.["acme"] as { issuers?: unknown } | undefined)?.issuers;
    if (Array.isArray(issuers) && issuers.some(i => acmeGrantOf(i).from === "Selector"))
      return true;
  }
  return false;
}

function parentIsOurs(
  idx: ReferenceIndex,
  routeNs: string,
  refs: readonly ParentReference[] | undefined,
): boolean {
  for (const p of refs ?? []) {
    const group = p.group ?? GATEWAY_GROUP;
    const kind = p.kind ?? "Gateway";
    if (group !== GATEWAY_GROUP) continue;
    if (kind === "ListenerSet") return true; // resolved through the ListenerSet: be conservative
    if (kind === "Gateway" && idx.ourGateways.has(`${p.namespace ?? routeNs}/${p.name}`))
      return true;
  }
  return false;
}

/** Our GatewayClasses and Gateways: all a route event's relevance reads (cached per map pair). */
const ownCache = new WeakMap<
  object,
  WeakMap<object, Pick<ReferenceIndex, "ourClasses" | "ourGateways">>
>();
function ownIndex(s: Snapshot): Pick<ReferenceIndex, "ourClasses" | "ourGateways"> {
  let byGateways = ownCache.get(s.objects.GatewayClass);
  if (!byGateways) ownCache.set(s.objects.GatewayClass, (byGateways = new WeakMap()));
  let own = byGateways.get(s.objects.Gateway);
  if (!own) {
    const ourClasses = new Set<string>();
    for (const gc of s.objects.GatewayClass.values())
      if (isOurClass(gc)) ourClasses.add(gc.metadata.name);
    const ourGateways = new Set<string>();
    for (const gw of s.objects.Gateway.values())
      if (ourClasses.has(gw.spec?.gatewayClassName)) ourGateways.add(keyOf(gw));
    byGateways.set(s.objects.Gateway, (own = { ourClasses, ourGateways }));
  }
  return own;
}

/**
 * Whether a change of one object can matter to a build (what `apply` reports as `relevant`),
 * judged against one snapshot: for an update that leaves every reference alone (a status-only
 * update) the snapshot before it and the one after it give the same answer.
 */
export function relevantChange(
  s: Snapshot,
  kind: Kind,
  before?: KubeObject,
  after?: KubeObject,
): boolean {
  return matters(s, kind, before, after);
}

function matters(s: Snapshot, kind: Kind, before?: KubeObject, after?: KubeObject): boolean {
  // A route event reads only our Gateways: the whole index (every route's references) is
  // built only for the kinds that need it, so a route change does not walk every route.
  const idx =
    ROUTE_KINDS.has(kind) || kind === "GatewayClass" || kind === "Gateway"
      ? {
          ...ownIndex(s),
          services: EMPTY,
          secrets: EMPTY,
          configMaps: EMPTY,
          namespaceSelectors: false,
          selectorNamespaces: EMPTY,
        }
      : referenceIndex(s);
  const objs = [before, after].filter((o): o is KubeObject => o !== undefined);
  const key = keyOf(objs[0]);
  switch (kind) {
    case "GatewayClass":
      return objs.some(o => isOurClass(o as KindMap["GatewayClass"]));
    case "Gateway":
      return objs.some(o => idx.ourClasses.has((o as Gateway).spec?.gatewayClassName));
    case "HTTPRoute":
    case "GRPCRoute":
    case "TLSRoute":
    case "TCPRoute":
    case "UDPRoute":
      return objs.some(o =>
        parentIsOurs(idx, o.metadata.namespace ?? "", (o as HTTPRoute).spec?.parentRefs),
      );
    case "Service":
      return idx.services.has(key) || idx.selectorNamespaces.has(objs[0].metadata.namespace ?? "");
    case "EndpointSlice":
      return objs.some(o => {
        if (idx.selectorNamespaces.has(o.metadata.namespace ?? "")) return true;
        const svc = o.metadata.labels?.["kubernetes.io/service-name"];
        return svc !== undefined && idx.services.has(`${o.metadata.namespace}/${svc}`);
      });
    case "Secret":
      return idx.secrets.has(key);
    case "ConfigMap":
      return idx.configMaps.has(key);
    case "Namespace":
      return namespaceChangeMatters(s.objects.Ingress, idx.namespaceSelectors, before, after);
    default:
      // ListenerSet, ReferenceGrant, BackendTLSPolicy: cheap to rebuild, rare to change.
      return true;
  }
}
