/** Every route attached to its parents, patched from the last build or replayed route by route. */
import { ParentReference, Snapshot, changedKeys, keyOf } from "../../snapshot";
import { fingerprintOf } from "../refused";
import type { RefusedObject } from "../refused";
import type { RouteParentStatusResult, RouteStatusResult } from "../status";
import type { RouteKind } from "../listeners";
import type { AnyCompiled, Attachment, GatewayContext } from "../context";
import { attach, parentTarget } from "../attach";
import { compileAny, compileMaps } from "./compile";
import { keptOrMade, stableData } from "./kept";
import { sortedByKey } from "./order";
import { isIngressObject } from "../../ingress/synthetic";

/**
 * Per route object, what it contributed to the last build that translated it: kept while the
 * world it attached in (worldOf) is the same and its compilation is the same object. Invisible to
 * the caller: a replay appends the attachments and status result that attaching again
 * would make, in the same order.
 */
interface Replay {
  readonly world: object;
  readonly compiled: AnyCompiled | undefined;
  /** Gateway key, listener id, attachment. */
  readonly attached: readonly (readonly [string, string, Attachment])[];
  readonly result: RouteStatusResult | undefined;
}
/** Per world, per route object (a route may be translated in several worlds: a full build, a
 * culprit search beside the controller's builds). */
const replayMaps = new WeakMap<object, WeakMap<object, Replay>>();
function replaysIn(world: object): WeakMap<object, Replay> {
  let m = replayMaps.get(world);
  if (!m) replayMaps.set(world, (m = new WeakMap()));
  return m;
}

/**
 * Everything a route's attachment reads besides the route's own compilation: the Gateways of
 * our classes with their resolved listeners, flavour and ListenerSets (which also decide what
 * a parentRef names), the Namespaces (allowedRoutes selectors) and the refused objects. The
 * same object while all of them are the same objects, so one comparison per route suffices.
 */
const worlds: { readonly token: object; readonly parts: readonly unknown[] }[] = [];
/** Worlds remembered (a full build or a culprit search beside the controller's builds). */
const MAX_WORLDS = 4;
const refusedOwner = {};
function worldOf(
  s: Snapshot,
  contexts: ReadonlyMap<string, GatewayContext>,
  refused: readonly RefusedObject[] | undefined,
): object {
  const parts: unknown[] = [s.objects.Namespace, stableData(refusedOwner, refused ?? [])];
  for (const [key, ctx] of contexts)
    parts.push(
      key,
      ctx.gateway,
      ctx.listeners,
      ctx.flavor,
      ctx.egress,
      ctx.listenerSets.length,
      ...ctx.listenerSets,
      ctx.refusedListenerSets.length,
      ...ctx.refusedListenerSets,
    );
  const known = worlds.find(
    w => w.parts.length === parts.length && w.parts.every((p, i) => p === parts[i]),
  );
  if (known) {
    // Most recently used first: the controller's own world is not pushed out by others.
    worlds.splice(worlds.indexOf(known), 1);
    worlds.unshift(known);
    return known.token;
  }
  worlds.unshift({ token: {}, parts });
  worlds.length = Math.min(worlds.length, MAX_WORLDS);
  return worlds[0]!.token;
}

const ROUTE_KINDS: readonly RouteKind[] = [
  "HTTPRoute",
  "GRPCRoute",
  "TLSRoute",
  "TCPRoute",
  "UDPRoute",
];

/** The last build's routes: what the next one patches when only routes changed (routesDelta). */
interface LastRoutes {
  readonly maps: readonly ReadonlyMap<string, unknown>[];
  readonly compileMaps: readonly unknown[];
  /** Per Gateway key, its listeners' attachments (not changed after the build). */
  readonly attachments: ReadonlyMap<string, ReadonlyMap<string, Attachment[]>>;
  readonly routes: readonly RouteStatusResult[];
}
/** Per world (worldOf), the last build's routes: what the next one patches (routesDelta). */
const lastRoutes = new WeakMap<object, LastRoutes>();
let deltaBuilds = 0;
/** How many translations patched the last one's routes instead of walking them (tests). */
export const routeDeltas = (): number => deltaBuilds;

/**
 * Every route of the snapshot attached to the Gateways in `contexts` (appended to their
 * attachment lists), and each route's status result in walk order (kind, then key): patched
 * from the last build in the same world when only routes changed (routesDelta), else walked
 * with each unchanged route replayed (walkRoutes). Equal to attaching every route afresh.
 */
export function attachRoutes(
  s: Snapshot,
  contexts: ReadonlyMap<string, GatewayContext>,
  listenerSetOwner: ReadonlyMap<string, GatewayContext>,
  refused: readonly RefusedObject[] | undefined,
): RouteStatusResult[] {
  const world = worldOf(s, contexts, refused);
  const routes =
    routesDelta(s, world, contexts, listenerSetOwner) ??
    walkRoutes(s, world, contexts, listenerSetOwner);
  lastRoutes.set(world, {
    maps: ROUTE_KINDS.map(k => s.objects[k]),
    compileMaps: compileMaps(s),
    attachments: new Map([...contexts].map(([key, ctx]) => [key, ctx.attachments])),
    routes,
  });
  return routes;
}

/** Every route in order (kind, then key), each attached again or replayed (replays). */
function walkRoutes(
  s: Snapshot,
  world: object,
  contexts: ReadonlyMap<string, GatewayContext>,
  listenerSetOwner: ReadonlyMap<string, GatewayContext>,
): RouteStatusResult[] {
  const routes: RouteStatusResult[] = [];
  const replays = replaysIn(world);
  for (const kind of ROUTE_KINDS) {
    for (const obj of sortedByKey(s.objects[kind])) {
      // An unchanged route in an unchanged world attaches as it did: its attachments are
      // appended again and its status result is the same object.
      let replay = replays.get(obj as object);
      if (
        replay === undefined ||
        replay.world !== world ||
        (replay.compiled !== undefined && compileAny(s, kind, obj) !== replay.compiled)
      ) {
        replay = routeOutcome(s, kind, obj, world, contexts, listenerSetOwner);
        replays.set(obj as object, replay);
      } else
        for (const [gw, id, a] of replay.attached) {
          const attachments = contexts.get(gw)!.attachments;
          const list = attachments.get(id);
          if (list) list.push(a);
          else attachments.set(id, [a]);
        }
      if (replay.result) routes.push(replay.result);
    }
  }
  return routes;
}

/** Position of a route (kind, then `namespace/name`) in the walk's order. */
const routeRank = (kind: string, namespace: string, name: string): [number, string] => [
  ROUTE_KINDS.indexOf(kind as RouteKind),
  `${namespace}/${name}`,
];
const beforeRank = (a: [number, string], b: [number, string]): boolean =>
  a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

/** Inserts `item` into `list` (in walk order by `rank`) where the walk would have put it. */
function insertInOrder<T>(list: T[], item: T, rank: (t: T) => [number, string]): void {
  const r = rank(item);
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (beforeRank(rank(list[mid]!), r)) lo = mid + 1;
    else hi = mid;
  }
  list.splice(lo, 0, item);
}

function removeItem<T>(list: T[], item: T): boolean {
  const i = list.lastIndexOf(item);
  if (i < 0) return false;
  list.splice(i, 1);
  return true;
}

/**
 * The routes of this build from the last build's when only routes changed (work
 * proportional to the change): the same world (worldOf), the same maps compilation reads, and
 * each route kind's map a later version of the last one with known changed keys (the
 * snapshot's lineage). Each changed route's old contribution (its replay) is taken out of the
 * listeners' attachment lists and the status results, and its new one put where the walk
 * would put it. Undefined: walk every route instead.
 */
function routesDelta(
  s: Snapshot,
  world: object,
  contexts: ReadonlyMap<string, GatewayContext>,
  listenerSetOwner: ReadonlyMap<string, GatewayContext>,
): RouteStatusResult[] | undefined {
  const last = lastRoutes.get(world);
  if (!last) return undefined;
  const replays = replaysIn(world);
  const maps = compileMaps(s);
  if (!maps.every((m, i) => m === last.compileMaps[i])) return undefined;
  const changes: [RouteKind, unknown, unknown][] = [];
  for (const [i, kind] of ROUTE_KINDS.entries()) {
    const before = last.maps[i]!;
    const keys = changedKeys(before, s.objects[kind]);
    if (!keys) return undefined;
    for (const key of keys) changes.push([kind, before.get(key), s.objects[kind].get(key)]);
  }
  // The old contributions must be known.
  for (const [, before] of changes)
    if (before !== undefined && !replays.has(before as object)) return undefined;
  // Copies of the last build's lists: the last build's result stays as it was.
  const lists = new Map<string, Map<string, Attachment[]>>();
  for (const [gw, byId] of last.attachments)
    lists.set(gw, new Map([...byId].map(([id, l]) => [id, l.slice()])));
  const routes = last.routes.slice();
  for (const [, before] of changes) {
    if (before === undefined) continue;
    const r = replays.get(before as object)!;
    for (const [gw, id, a] of r.attached)
      if (!removeItem(lists.get(gw)?.get(id) ?? [], a)) return undefined;
    if (r.result && !removeItem(routes, r.result)) return undefined;
  }
  // New contributions, made against empty lists, then put in order.
  const scratch = new Map(
    [...contexts].map(([k, ctx]) => [k, { ...ctx, attachments: new Map<string, Attachment[]>() }]),
  );
  const scratchOwner = new Map(
    [...listenerSetOwner].map(([k, ctx]) => [k, scratch.get(keyOf(ctx.gateway))!]),
  );
  for (const [kind, , after] of changes) {
    if (after === undefined) continue;
    const r = routeOutcome(s, kind, after, world, scratch, scratchOwner);
    replays.set(after as object, r);
    for (const [gw, id, a] of r.attached) {
      let byId = lists.get(gw);
      if (!byId) lists.set(gw, (byId = new Map()));
      let list = byId.get(id);
      if (!list) byId.set(id, (list = []));
      insertInOrder(list, a, x => routeRank(x.route.kind, x.route.namespace, x.route.name));
    }
    if (r.result) insertInOrder(routes, r.result, x => routeRank(x.kind, x.namespace, x.name));
  }
  for (const [gw, ctx] of contexts)
    for (const [id, list] of lists.get(gw) ?? [])
      if (list.length > 0) ctx.attachments.set(id, list);
  deltaBuilds++;
  return routes;
}

/** Attaches one route to its parents (appending to the contexts' lists): its Replay. */
function routeOutcome(
  s: Snapshot,
  kind: RouteKind,
  obj: unknown,
  world: object,
  contexts: ReadonlyMap<string, GatewayContext>,
  listenerSetOwner: ReadonlyMap<string, GatewayContext>,
): Replay {
  const route = obj as {
    metadata: { name: string; namespace?: string; generation?: number };
    spec?: { parentRefs?: readonly ParentReference[] };
  };
  const ns = route.metadata.namespace ?? "";
  const parents: RouteParentStatusResult[] = [];
  let compiled: AnyCompiled | undefined;
  const touched: [GatewayContext, string][] = [];
  (route.spec?.parentRefs ?? []).forEach((parentRef, i) => {
    const target = parentTarget(parentRef, ns, contexts, listenerSetOwner);
    if (!target) return;
    const c = (compiled ??= compileAny(s, kind, obj));
    const refusal = target.ctx.refusals.find(
      { kind, namespace: ns, name: route.metadata.name },
      () => fingerprintOf(c),
    );
    // Everything attach() reads (c stands for the route object, so its generation and
    // parentRefs); a refused route is not kept.
    const reads = refusal
      ? [refusal]
      : [
          target.ctx.gateway,
          target.ctx.listeners,
          target.ctx.flavor,
          target.ctx.egress,
          target.type === "listenerSet" ? target.listenerSet : undefined,
          target.type === "listenerSet" && target.refused,
          s.objects.Namespace,
        ];
    const { result, added } = keptOrMade(c, i, reads, () => {
      const before = new Map([...target.ctx.attachments].map(([id, l]) => [id, l.length]));
      const result = attach(
        s,
        kind,
        c,
        route.metadata.generation,
        parentRef,
        target,
        refusal,
        isIngressObject(obj),
      );
      const added: [string, Attachment][] = [];
      for (const [id, list] of target.ctx.attachments)
        for (const a of list.slice(before.get(id) ?? 0)) added.push([id, a]);
      return { result, added };
    });
    // A hit replays what attach() added; a miss has added it already.
    for (const [id, a] of added) {
      const list = target.ctx.attachments.get(id) ?? [];
      const last = list[list.length - 1];
      if (last !== a && last?.route !== c) list.push(a);
      target.ctx.attachments.set(id, list);
      touched.push([target.ctx, id]);
    }
    parents.push(result);
  });
  const result =
    parents.length > 0
      ? keptOrMade(obj as object, -1, parents, () => ({
          kind,
          namespace: ns,
          name: route.metadata.name,
          parents,
        }))
      : undefined;
  // What this route added: the last attachment of each list it touched (one per list).
  const attached: [string, string, Attachment][] = [];
  for (const [ctx, id] of touched) {
    const list = ctx.attachments.get(id)!;
    const last = list[list.length - 1]!;
    const gw = keyOf(ctx.gateway);
    if (last.route === compiled && !attached.some(([g, i]) => g === gw && i === id))
      attached.push([gw, id, last]);
  }
  return { world, compiled, attached, result };
}
