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
}

export interface ParentReference {
  readonly group?: string;
  readonly kind?: string;
  readonly namespace?: string;
  readonly name: string;
}

export async function isOurGatewayClass(name: string, l: OwnershipLookups): Promise<boolean> {
  return (await l.gatewayClassController(name)) === CONTROLLER_NAME;
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

/**
 * Wraps an async look-up with a short-lived cache (admission answers many requests for the same
 * parents; a stale answer lives at most ttlMs). `now` is injectable for tests.
 */
export function cached<K, V>(
  fn: (key: K) => Promise<V>,
  ttlMs: number,
  keyOf: (key: K) => string = k => JSON.stringify(k),
  now: () => number = Date.now,
  maxEntries = 1000,
): (key: K) => Promise<V> {
  const entries = new Map<string, { at: number; value: Promise<V> }>();
  return (key: K) => {
    const k = keyOf(key);
    const hit = entries.get(k);
    if (hit && now() - hit.at < ttlMs) return hit.value;
    if (entries.size >= maxEntries) entries.clear();
    const value = fn(key);
    entries.set(k, { at: now(), value });
    // A failed look-up is not remembered.
    value.catch(() => entries.delete(k));
    return value;
  };
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
