/**
 * Which Gateway API objects belong to us: a GatewayClass whose controllerName is ours, the
 * Gateways of such classes, and routes with at least one parentRef to such a Gateway (directly
 * or through a ListenerSet). Plain TypeScript: the look-ups are injected, so admission can use
 * cached API reads and the translator can use its snapshot.
 */

export const CONTROLLER_NAME = "kengine.io/gateway-controller";
export const GATEWAY_GROUP = "gateway.networking.k8s.io";

export interface ObjectKey {
  readonly namespace: string;
  readonly name: string;
}

/** Reads of the cluster that ownership needs; undefined means "does not exist". */
export interface OwnershipLookups {
  /** spec.controllerName of a GatewayClass. */
  gatewayClassController(name: string): Promise<string | undefined>;
  /** spec.gatewayClassName of a Gateway. */
  gatewayClassOf(gateway: ObjectKey): Promise<string | undefined>;
  /** The Gateway a ListenerSet attaches to (its spec.parentRef), if any. */
  listenerSetParent(listenerSet: ObjectKey): Promise<ObjectKey | undefined>;
  /**
   * Every HTTPRoute and GRPCRoute with a backendRef to the Service (or, with `kind: XBackend`,
   * to the XBackend): their namespace and parents.
   */
  routesUsingService(backend: BackendKey): Promise<readonly RouteParents[]>;
}

/** A backend a route names: a core Service (default) or an XBackend. */
export interface BackendKey extends ObjectKey {
  readonly kind?: "Service" | "XBackend";
}

const X_GATEWAY_GROUP = "gateway.networking.x-k8s.io";

/** The key of indexRoutesByService's map for a backend. */
export const backendIndexKey = (b: BackendKey): string =>
  `${b.kind === "XBackend" ? "XBackend:" : ""}${b.namespace}/${b.name}`;

/** A route reduced to what ownership needs: where it lives and its parents. */
export interface RouteParents {
  readonly namespace: string;
  readonly parentRefs?: readonly ParentReference[];
}

export interface ParentReference {
  readonly group?: string;
  readonly kind?: string;
  readonly namespace?: string;
  readonly name: string;
}

/**
 * Whether a GatewayClass's spec.controllerName is ours: the one test of "is this object ours"
 * that every other one (Gateways, routes, policies; in admission, translation, status and the
 * controller's watches) comes down to. `ours`: another controllerName (tests, translate options).
 */
export const isOurControllerName = (
  controllerName: string | undefined,
  ours: string = CONTROLLER_NAME,
): boolean => controllerName === ours;

/** Whether a GatewayClass object is ours (isOurControllerName of its spec.controllerName). */
export function isOurClass<T extends { readonly spec?: { readonly controllerName?: string } }>(
  gc: T | undefined,
  ours: string = CONTROLLER_NAME,
): gc is T & { readonly spec: NonNullable<T["spec"]> } {
  return isOurControllerName(gc?.spec?.controllerName, ours);
}

export async function isOurGatewayClass(name: string, l: OwnershipLookups): Promise<boolean> {
  return isOurControllerName(await l.gatewayClassController(name));
}

export async function isOurGateway(gateway: ObjectKey, l: OwnershipLookups): Promise<boolean> {
  const cls = await l.gatewayClassOf(gateway);
  return cls !== undefined && isOurGatewayClass(cls, l);
}

/**
 * True when any parentRef of a route (in namespace routeNamespace) points at a Gateway of ours,
 * directly or through a ListenerSet. A parent that does not exist yet is not ours: such a route
 * is admitted and reported through status once its Gateway appears.
 */
export async function isOurRoute(
  routeNamespace: string,
  parentRefs: readonly ParentReference[] | undefined,
  l: OwnershipLookups,
): Promise<boolean> {
  for (const ref of parentRefs ?? []) {
    if ((ref.group ?? GATEWAY_GROUP) !== GATEWAY_GROUP) continue;
    const key = { namespace: ref.namespace ?? routeNamespace, name: ref.name };
    const kind = ref.kind ?? "Gateway";
    if (kind === "Gateway" && (await isOurGateway(key, l))) return true;
    if (kind === "ListenerSet") {
      const gw = await l.listenerSetParent(key);
      if (gw && (await isOurGateway(gw, l))) return true;
    }
  }
  return false;
}

export interface PolicyTargetReference {
  readonly group?: string;
  readonly kind?: string;
  readonly name?: string;
}

/**
 * True when a BackendTLSPolicy (in namespace policyNamespace) targets a Service that an
 * HTTPRoute or GRPCRoute of ours uses as a backend: the policies the translator applies and
 * reports on (it covers a Service port one of our routes uses; here any port of the Service
 * counts). Other implementations' policies, and ones whose routes do not exist yet, are not
 * ours.
 */
export async function isOurBackendTLSPolicy(
  policyNamespace: string,
  targetRefs: readonly PolicyTargetReference[] | undefined,
  l: OwnershipLookups,
): Promise<boolean> {
  const seen = new Set<string>();
  for (const t of Array.isArray(targetRefs) ? targetRefs.slice(0, 16) : []) {
    if ((t?.group ?? "") !== "" || t?.kind !== "Service" || typeof t.name !== "string") continue;
    if (seen.has(t.name)) continue;
    seen.add(t.name);
    for (const route of await l.routesUsingService({ namespace: policyNamespace, name: t.name }))
      if (await isOurRoute(route.namespace, route.parentRefs, l)) return true;
  }
  return false;
}

/**
 * True when an XBackend is a backend of an HTTPRoute or GRPCRoute of ours (the XBackends the
 * translator resolves). Other implementations' XBackends, and unused ones, are not ours.
 */
export async function isOurXBackend(
  namespace: string,
  name: string,
  l: OwnershipLookups,
): Promise<boolean> {
  for (const route of await l.routesUsingService({ kind: "XBackend", namespace, name }))
    if (await isOurRoute(route.namespace, route.parentRefs, l)) return true;
  return false;
}

/**
 * Indexes routes by the Services and XBackends they use as backends (backendIndexKey; a
 * backendRef's namespace defaults to the route's, its kind to Service, its group to core), for
 * routesUsingService. Rule-level backendRefs only (those are the ones BackendTLSPolicy covers).
 */
export function indexRoutesByService(
  routes: readonly {
    readonly metadata?: { readonly namespace?: string };
    readonly spec?: {
      readonly parentRefs?: readonly ParentReference[];
      readonly rules?: readonly {
        readonly backendRefs?: readonly {
          readonly group?: string;
          readonly kind?: string;
          readonly namespace?: string;
          readonly name?: string;
        }[];
      }[];
    };
  }[],
): ReadonlyMap<string, readonly RouteParents[]> {
  const index = new Map<string, RouteParents[]>();
  for (const r of routes) {
    const namespace = r.metadata?.namespace ?? "default";
    const services = new Set<string>();
    for (const rule of r.spec?.rules ?? [])
      for (const b of rule?.backendRefs ?? [])
        if ((b?.group ?? "") === "" && (b?.kind ?? "Service") === "Service" && b?.name)
          services.add(backendIndexKey({ namespace: b.namespace ?? namespace, name: b.name }));
        else if (b?.group === X_GATEWAY_GROUP && b.kind === "XBackend" && b.name)
          services.add(
            backendIndexKey({
              kind: "XBackend",
              namespace: b.namespace ?? namespace,
              name: b.name,
            }),
          );
    for (const key of services) {
      const list = index.get(key) ?? [];
      list.push({ namespace, parentRefs: r.spec?.parentRefs });
      index.set(key, list);
    }
  }
  return index;
}

/**
 * When the API server is slow, answer from the last answer instead of waiting for it: an expired
 * key whose new read has not answered within `graceMs` (or failed) gets the last answer that
 * `keep` accepts, if that answer's read started less than `maxAgeMs` ago.
 */
export interface StaleWhenSlow<V> {
  readonly maxAgeMs: number;
  readonly graceMs: number;
  /** Which answers may be served stale (e.g. only "it exists": never let a stale "no" through). */
  readonly keep?: (value: V) => boolean;
}

/**
 * Wraps an async look-up with a short-lived cache (admission answers many requests for the same
 * parents; an answer is at most ttlMs old, counted from when its read started). Refresh-ahead:
 * once an entry has lived half its TTL, the next caller starts a new read in the background and
 * still gets the current answer, so a key in steady use is never waited for again (no request
 * pays for an API round trip on expiry). With `stale`, an expired key is not waited for longer
 * than its grace either, while its last answer is young enough (StaleWhenSlow). `now` is
 * injectable for tests.
 */
export function cached<K, V>(
  fn: (key: K) => Promise<V>,
  ttlMs: number,
  keyOf: (key: K) => string = k => JSON.stringify(k),
  now: () => number = Date.now,
  maxEntries = 1000,
  stale?: StaleWhenSlow<V>,
): (key: K) => Promise<V> {
  const entries = new Map<string, { at: number; value: Promise<V>; refreshing: boolean }>();
  /** Per key, the newest answer that arrived and when its read started (for `stale`). */
  const answers = new Map<string, { at: number; value: V }>();
  /** Reads that have answered or failed (a pending one may be answered stale). */
  const settled = new WeakSet<Promise<V>>();
  const read = (k: string, key: K, at: number): Promise<V> => {
    const value = fn(key);
    if (stale)
      value.then(
        v => {
          settled.add(value);
          const last = answers.get(k);
          if (!last || last.at <= at) answers.set(k, { at, value: v });
        },
        () => settled.add(value),
      );
    return value;
  };
  /**
   * A read still pending: its answer, or the key's last answer once the grace has passed (for
   * every caller waiting on it, not only the one that started it).
   */
  const orLast = (k: string, value: Promise<V>, t: number): Promise<V> => {
    if (!stale || settled.has(value)) return value;
    const last = answers.get(k);
    if (!last || t - last.at >= stale.maxAgeMs || !(stale.keep?.(last.value) ?? true)) return value;
    return lastIfSlow(value, last.value, stale.graceMs);
  };
  return (key: K) => {
    const k = keyOf(key);
    const t = now();
    const hit = entries.get(k);
    if (hit && t - hit.at < ttlMs) {
      if (!hit.refreshing && t - hit.at >= ttlMs / 2) {
        hit.refreshing = true;
        const next = read(k, key, t);
        next.then(
          () => {
            if (entries.get(k) === hit) entries.set(k, { at: t, value: next, refreshing: false });
          },
          // A failed refresh is not remembered: the entry expires as before.
          () => {
            hit.refreshing = false;
          },
        );
      }
      return orLast(k, hit.value, t);
    }
    if (entries.size >= maxEntries || answers.size >= maxEntries) {
      entries.clear();
      answers.clear();
    }
    const value = read(k, key, t);
    const entry = { at: t, value, refreshing: false };
    entries.set(k, entry);
    // A failed look-up is not remembered.
    value.catch(() => {
      if (entries.get(k) === entry) entries.delete(k);
    });
    return orLast(k, value, t);
  };
}

/** `work`'s answer, or `last` if work fails or has not answered within graceMs. */
function lastIfSlow<V>(work: Promise<V>, last: V, graceMs: number): Promise<V> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work.catch(() => last),
    new Promise<V>(resolve => (timer = setTimeout(() => resolve(last), graceMs))),
  ]).finally(() => clearTimeout(timer));
}

/**
 * The outcome of a look-up that must finish within `ms`: its value, or why not (it failed, or
 * the deadline passed first). Never rejects.
 */
export async function withDeadline<T>(
  work: Promise<T>,
  ms: number,
): Promise<{ ok: true; value: T } | { ok: false; error: string }> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<{ ok: false; error: string }>(resolve => {
    timer = setTimeout(
      () => resolve({ ok: false, error: `the API server did not answer within ${ms} ms` }),
      ms,
    );
  });
  try {
    return await Promise.race([
      work.then(
        value => ({ ok: true as const, value }),
        (e: unknown) => ({
          ok: false as const,
          error: `reading the parent failed: ${e instanceof Error ? e.message : JSON.stringify(e)}`,
        }),
      ),
      deadline,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
