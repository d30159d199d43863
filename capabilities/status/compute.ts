/**
 * Status as the API stores it, computed from the translator's results and the objects' current
 * status: pure, with the time passed in. lastTransitionTime moves only when a condition's status
 * changes; route parent entries of other controllers are kept as they are; an object whose status
 * would not change yields no update.
 */
import { equals } from "ramda";
import { changedKeys } from "../snapshot/snapshot";
import { ConditionType } from "../translate/conditions";
import type {
  BackendTLSPolicyStatusResult,
  Condition,
  GatewayClassStatusResult,
  GatewayStatusResult,
  ListenerSetStatusResult,
  ListenerStatusResult,
  RouteStatusResult,
  StatusResults,
} from "../translate";

export interface StoredCondition extends Condition {
  readonly lastTransitionTime: string;
}

export interface GatewayAddress {
  readonly type?: "IPAddress" | "Hostname" | string;
  readonly value: string;
  /** Gateway API v1.7 (`Cluster`: the proxies' Service cluster IP); absent: the default. */
  readonly routability?: string;
}

/** The parts of a stored object the writer needs. */
export interface StoredObject {
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly resourceVersion?: string;
  };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly status?: any;
}

export type StatusKind =
  | "GatewayClass"
  | "Gateway"
  | "ListenerSet"
  | "BackendTLSPolicy"
  | "XTelemetryPolicy"
  | RouteStatusResult["kind"];

export interface StatusUpdate {
  readonly kind: StatusKind;
  readonly namespace?: string;
  readonly name: string;
  /** The version the update was computed from: the write is conditional on it. */
  readonly resourceVersion?: string;
  readonly status: Record<string, unknown>;
  /**
   * The update changes what a user acts on (an address, or a condition's status or reason), not
   * only counts, messages or generations: the writer does not hold it back to rate-limit.
   */
  readonly urgent?: boolean;
}

/** Looks up the current stored object (from the watch snapshot, or a fresh read). */
export type CurrentObject = (
  kind: StatusKind,
  namespace: string | undefined,
  name: string,
) => StoredObject | undefined;

/** The condition types this controller writes; any other type belongs to someone else. */
const OUR_CONDITION_TYPES: ReadonlySet<string> = new Set(Object.values(ConditionType));

/**
 * The stored conditions: ours as desired (lastTransitionTime kept while the status holds),
 * then every condition of a type we never write, unchanged (another controller's or a user's:
 * Gateway API v1.7.0 requires keeping them, GatewayPreserveForeignConditions).
 */
export function stampConditions(
  existing: readonly StoredCondition[] | undefined,
  desired: readonly Condition[],
  now: string,
): StoredCondition[] {
  const foreign = (existing ?? []).filter(c => !OUR_CONDITION_TYPES.has(c.type));
  const ours = desired.map(d => {
    const old = existing?.find(c => c.type === d.type);
    const lastTransitionTime =
      old && old.status === d.status && old.lastTransitionTime ? old.lastTransitionTime : now;
    return {
      type: d.type,
      status: d.status,
      reason: d.reason,
      message: d.message,
      ...(d.observedGeneration !== undefined ? { observedGeneration: d.observedGeneration } : {}),
      lastTransitionTime,
    };
  });
  return [...ours, ...foreign.filter(f => !desired.some(d => d.type === f.type))];
}

const listenerStatuses = (
  existing: readonly { name: string; conditions?: StoredCondition[] }[] | undefined,
  desired: readonly ListenerStatusResult[],
  now: string,
) =>
  desired.map(l => ({
    name: l.name,
    supportedKinds: l.supportedKinds.map(k => ({ group: k.group, kind: k.kind })),
    attachedRoutes: l.attachedRoutes,
    conditions: stampConditions(
      existing?.find(e => e.name === l.name)?.conditions,
      l.conditions,
      now,
    ),
  }));

export function gatewayClassStatus(
  current: StoredObject | undefined,
  r: GatewayClassStatusResult,
  now: string,
) {
  return {
    conditions: stampConditions(current?.status?.conditions, r.conditions, now),
    supportedFeatures: r.supportedFeatures.map(f => ({ name: f.name })),
  };
}

export function gatewayStatus(
  current: StoredObject | undefined,
  r: GatewayStatusResult | ListenerSetStatusResult,
  now: string,
  addresses?: readonly GatewayAddress[],
) {
  return {
    ...(addresses !== undefined
      ? {
          addresses: addresses.map(a => ({
            type: a.type ?? "IPAddress",
            value: a.value,
            // GEP-5093: explicit, empty included (CRDs before v1.7 prune the field).
            ...(a.routability !== undefined && { routability: a.routability }),
          })),
        }
      : {}),
    conditions: stampConditions(current?.status?.conditions, r.conditions, now),
    listeners: listenerStatuses(current?.status?.listeners, r.listeners, now),
    ...attachedListenerSets(current, r),
  };
}

/**
 * A Gateway's status.attachedListenerSets: written when the translator counts it, and reset
 * to 0 when it no longer does but a count is stored (a merge patch keeps what it omits).
 */
function attachedListenerSets(
  current: StoredObject | undefined,
  r: GatewayStatusResult | ListenerSetStatusResult,
): { attachedListenerSets?: number } {
  const count = "attachedListenerSets" in r ? r.attachedListenerSets : undefined;
  if (count !== undefined) return { attachedListenerSets: count };
  const stored: unknown = current?.status?.attachedListenerSets;
  return typeof stored === "number" && stored !== 0 ? { attachedListenerSets: 0 } : {};
}

interface Ref {
  readonly group?: string;
  readonly kind?: string;
  readonly namespace?: string;
  readonly name: string;
  readonly sectionName?: string;
  readonly port?: number;
}

const GATEWAY_GROUP = "gateway.networking.k8s.io";

const sameParent = (a: Ref, b: Ref): boolean =>
  (a.group ?? GATEWAY_GROUP) === (b.group ?? GATEWAY_GROUP) &&
  (a.kind ?? "Gateway") === (b.kind ?? "Gateway") &&
  (a.namespace ?? "") === (b.namespace ?? "") &&
  a.name === b.name &&
  (a.sectionName ?? "") === (b.sectionName ?? "") &&
  (a.port ?? 0) === (b.port ?? 0);

export function routeStatus(
  current: StoredObject | undefined,
  r: RouteStatusResult,
  controllerName: string,
  now: string,
) {
  const existing: { controllerName: string; parentRef: Ref; conditions?: StoredCondition[] }[] =
    current?.status?.parents ?? [];
  const others = existing.filter(p => p.controllerName !== controllerName);
  const ours = r.parents.map(p => {
    const old = existing.find(
      e => e.controllerName === controllerName && sameParent(e.parentRef, p.parentRef),
    );
    return {
      // Written with the API's defaults filled in, as the server would store it.
      parentRef: { group: GATEWAY_GROUP, kind: "Gateway", ...p.parentRef },
      controllerName,
      conditions: stampConditions(old?.conditions, p.conditions, now),
    };
  });
  return { parents: [...others, ...ours] };
}

/** Policy status: our ancestor entries replaced, other controllers' entries kept. */
export function policyStatus(
  current: StoredObject | undefined,
  r: BackendTLSPolicyStatusResult,
  controllerName: string,
  now: string,
) {
  const existing: { controllerName: string; ancestorRef: Ref; conditions?: StoredCondition[] }[] =
    current?.status?.ancestors ?? [];
  const others = existing.filter(a => a.controllerName !== controllerName);
  const ours = r.ancestors.map(a => {
    const old = existing.find(
      e => e.controllerName === controllerName && sameParent(e.ancestorRef, a.ancestorRef),
    );
    return {
      ancestorRef: { group: GATEWAY_GROUP, kind: "Gateway", ...a.ancestorRef },
      controllerName,
      conditions: stampConditions(old?.conditions, a.conditions, now),
    };
  });
  return { ancestors: [...others, ...ours] };
}

type Cond = { type?: string; status?: string; reason?: string };
const condShape = (cs: readonly Cond[] | undefined) =>
  (cs ?? []).map(c => `${c.type}=${c.status}/${c.reason}`).sort();
/** What a user acts on in a status: addresses and conditions' status and reason. */
function shape(status: Record<string, unknown> | undefined) {
  const st = (status ?? {}) as {
    addresses?: unknown;
    conditions?: Cond[];
    listeners?: { name?: string; conditions?: Cond[] }[];
    parents?: { parentRef?: unknown; conditions?: Cond[] }[];
  };
  return {
    addresses: st.addresses ?? [],
    conditions: condShape(st.conditions),
    listeners: (st.listeners ?? []).map(l => [l.name, condShape(l.conditions)]),
    parents: (st.parents ?? []).map(p => [p.parentRef, condShape(p.conditions)]),
  };
}

/** Whether the stored status already says all that `next` says (fields of `next` only). */
function unchanged(current: StoredObject | undefined, next: Record<string, unknown>): boolean {
  const stored = (current?.status ?? {}) as Record<string, unknown>;
  return Object.keys(next).every(k =>
    k === "addresses"
      ? equals(plainRoutability(stored[k]), plainRoutability(next[k]))
      : equals(stored[k], next[k]),
  );
}

/**
 * Addresses with an empty routability as without one: the same to consumers (GEP-5093), and
 * what the API server keeps of it when the CRDs predate v1.7 (it prunes the field), so such a
 * cluster is not written to again and again.
 */
const plainRoutability = (addresses: unknown): unknown =>
  Array.isArray(addresses)
    ? addresses.map((a: Record<string, unknown>) => {
        if (a?.routability !== "") return a;
        // eslint-disable-next-line @typescript-eslint/no-unused-vars
        const { routability, ...rest } = a;
        return rest;
      })
    : addresses;

/**
 * Where `current` reads routes from: the snapshot's route maps (`namespace/name` keys, the
 * snapshot records which keys each new map changed: snapshot.ts `changedKeys`) and the
 * writer's answers to its own writes (StatusWriter `version`, `writtenSince`). Given to
 * computeStatusUpdates with a memo, a route whose result is the object found in place last
 * time and whose stored object changed in neither is skipped without being read.
 */
export interface StoredSource {
  readonly routes: { readonly [K in RouteStatusResult["kind"]]: ReadonlyMap<string, unknown> };
  readonly version: number;
  readonly writtenSince: (version: number) => ReadonlySet<string> | undefined;
}

const ROUTE_KINDS = ["HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute"] as const;

/**
 * Remembers, per route result object, the stored object over which it was last found already
 * in place, so the next computation skips that route while both are the same (status
 * recomputed only for objects whose inputs changed; the translator keeps an unchanged route's
 * result object, translate/incremental/routes.ts). The answer cannot differ: the status is a pure function of the
 * stored object, the result and `now`, and `now` only reaches conditions whose status changes
 * (stampConditions), which an object found in place has none of. With a StoredSource, routes
 * are skipped without reading their stored object at all.
 */
export class StatusMemo {
  #found = new WeakMap<object, StoredObject>();
  /** The result last found in place per `kind/namespace/name`, to forget it when its stored object changes. */
  readonly #byKey = new Map<string, object>();
  #source: StoredSource | undefined;
  #version = 0;

  /** Whether `result` over `current` was found in place by an earlier computation. */
  inPlace(_key: string, current: StoredObject, result: unknown): boolean {
    return typeof result === "object" && result !== null && this.#found.get(result) === current;
  }

  found(key: string, current: StoredObject, result: unknown): void {
    if (typeof result !== "object" || result === null) return;
    const before = this.#byKey.get(key);
    if (before !== undefined && before !== result) this.#found.delete(before);
    this.#byKey.set(key, result);
    this.#found.set(result, current);
  }

  /**
   * A computation starts: forgets the routes whose stored object changed since the last one
   * and says whether the rest may be skipped unread (`skips`): only when `source` tells all
   * that changed.
   */
  begin(source: StoredSource | undefined): boolean {
    const before = this.#source;
    const version = this.#version;
    this.#source = source;
    if (source) this.#version = source.version;
    if (!source || !before) return false;
    const written = source.writtenSince(version);
    const changed: string[] = [];
    for (const kind of ROUTE_KINDS) {
      const keys = changedKeys(before.routes[kind], source.routes[kind]);
      if (!keys || !written) {
        this.#forgetAll();
        return false;
      }
      for (const k of keys) changed.push(`${kind}/${k}`);
    }
    for (const key of [...changed, ...written!]) {
      const r = this.#byKey.get(key);
      if (r !== undefined) this.#found.delete(r);
      this.#byKey.delete(key);
    }
    return true;
  }

  /** Whether a route result was found in place and nothing it was found over changed since. */
  skips(result: object): boolean {
    return this.#found.has(result);
  }

  #forgetAll(): void {
    this.#found = new WeakMap();
    this.#byKey.clear();
  }

  /** Kept for callers of the earlier memo: nothing to settle. */
  settle(): void {}
}

export interface ComputeInput {
  readonly results: StatusResults;
  readonly current: CurrentObject;
  readonly controllerName: string;
  /** Gateway addresses by "namespace/name"; a Gateway missing here keeps its stored addresses. */
  readonly addresses?: ReadonlyMap<string, readonly GatewayAddress[]>;
  readonly now: string;
  /** Called for each object whose stored status already matches (nothing to write). */
  readonly onUnchanged?: (kind: StatusKind) => void;
  /** Skips objects whose stored object and result are those found in place last time. */
  readonly memo?: StatusMemo;
  /** With `memo`: where the stored routes come from, so unchanged ones are not even read. */
  readonly stored?: StoredSource;
}

/** Every status write needed to make the stored status match the results. */
export function computeStatusUpdates(input: ComputeInput): StatusUpdate[] {
  const { results, current, controllerName, addresses, now, onUnchanged, memo } = input;
  const skipUnread = memo?.begin(input.stored) ?? false;
  const updates: StatusUpdate[] = [];
  const push = (
    kind: StatusKind,
    namespace: string | undefined,
    name: string,
    f: (c: StoredObject | undefined) => Record<string, unknown>,
    /** What the status is made of besides the stored object (memo: routes). */
    result?: unknown,
  ) => {
    const cur = current(kind, namespace, name);
    if (!cur) return; // deleted meanwhile: nothing to write
    const key = `${kind}/${namespace ?? ""}/${name}`;
    if (memo && result !== undefined && memo.inPlace(key, cur, result)) {
      onUnchanged?.(kind);
      return;
    }
    const status = f(cur);
    if (unchanged(cur, status)) {
      onUnchanged?.(kind);
      if (result !== undefined) memo?.found(key, cur, result);
      return;
    }
    const urgent = !equals(shape(cur.status), shape(status));
    updates.push({
      kind,
      namespace,
      name,
      resourceVersion: cur.metadata?.resourceVersion,
      status,
      urgent,
    });
  };
  for (const r of results.gatewayClasses)
    push("GatewayClass", undefined, r.name, c => gatewayClassStatus(c, r, now));
  for (const r of results.gateways) {
    push("Gateway", r.namespace, r.name, c =>
      gatewayStatus(c, r, now, addresses?.get(`${r.namespace}/${r.name}`)),
    );
  }
  for (const r of results.listenerSets)
    push("ListenerSet", r.namespace, r.name, c => gatewayStatus(c, r, now));
  for (const r of results.routes) {
    if (skipUnread && memo!.skips(r)) {
      onUnchanged?.(r.kind);
      continue;
    }
    push(r.kind, r.namespace, r.name, c => routeStatus(c, r, controllerName, now), r);
  }
  for (const r of results.backendTLSPolicies ?? []) {
    push("BackendTLSPolicy", r.namespace, r.name, c => policyStatus(c, r, controllerName, now));
  }
  for (const r of results.telemetryPolicies ?? [])
    push("XTelemetryPolicy", r.namespace, r.name, c => policyStatus(c, r, controllerName, now));
  memo?.settle();
  return updates;
}
