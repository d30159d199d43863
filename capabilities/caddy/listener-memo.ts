/**
 * A listener's route list made from the last render's by the entries that changed: the
 * translator keeps unchanged route entries as the same objects in the same
 * order, so the entries removed and added are found by identity (one walk of pointer
 * compares), only the added ones are rendered, and the merge of host catch-alls
 * (config.ts `mergeHostCatchAlls`) is patched by the hostnames of the routes that changed.
 * Whenever a patch cannot be shown equal to the whole computation (an entry out of order, a
 * route taking any host among the changed ones, an unknown fragment), the state is made
 * whole from the list. render-memo.test.ts compares the result with a render from scratch
 * over random changes. No clock, no I/O; the state is moved from one render to the next (a
 * state has one successor). Module state: two counters of lists patched and made whole
 * (listenerCounts, for tests and the bench).
 */
import type { HTTPRouteEntryIR } from "../ir";
import { type DispatchUse, countReused } from "./fragments";
import type { CaddyRoute } from "./types";

/** What the merge needs of the renderer (config.ts). */
export interface MergeRules {
  /** The exact hostnames a route is limited to when its only matcher is `host`. */
  readonly onlyHosts: (r: CaddyRoute) => readonly string[] | undefined;
  /** Equal keys: routes that do the same thing (merged into one route). */
  readonly mergeKey: (r: CaddyRoute) => string;
  /** The merged route of a group: its first route matching `hosts`. */
  readonly merged: (key: string, hosts: readonly string[], first: CaddyRoute) => CaddyRoute;
}

/** An entry's rendered route and what rendering it did besides (render-memo.ts). */
export interface Rendered {
  readonly route: CaddyRoute;
  readonly uses: readonly DispatchUse[];
  readonly needsErrorServer: boolean;
}

/** The merge of host catch-alls over a rendered list, kept to be patched. */
interface MergeState {
  /** The first route that is not limited to hosts (the merged routes go before it). */
  readonly endRoute: CaddyRoute | undefined;
  /** Per hostname, the routes naming it, in list order. */
  readonly hostRoutes: Map<string, CaddyRoute[]>;
  /** Per hostname, its movable route (the last naming it, before the end, its only host). */
  readonly movableOf: Map<string, CaddyRoute>;
  /** Per merge key, its movable routes in list order. */
  readonly groups: Map<string, CaddyRoute[]>;
  /** The merge keys by their first route. */
  readonly order: string[];
  /** Per merge key, its merged route. */
  readonly mergedOf: Map<string, CaddyRoute>;
  /** The routes before the end that stay where they are, in list order. */
  readonly prefix: CaddyRoute[];
}

export interface ListenerState {
  readonly context: string;
  readonly entries: readonly HTTPRouteEntryIR[];
  /** The entries as a set (moved to the successor). */
  readonly entrySet: Set<HTTPRouteEntryIR>;
  /** Each entry's rendered route, in entry order. */
  readonly rendered: readonly CaddyRoute[];
  /** Per dispatch key, its use and how many entries name it (moved to the successor). */
  readonly uses: Map<string, { readonly use: DispatchUse; n: number }>;
  /** How many entries need the error server. */
  readonly errorServer: number;
  /** How many entries are limited to a wildcard hostname. */
  readonly wildcards: number;
  /** The merge state (undefined: no merge, per-route dispatch). */
  readonly merge: MergeState | undefined;
  /** The merged list (the rendered list when fewer than two routes move). */
  readonly merged: readonly CaddyRoute[];
  /** Whether it was made by a patch (tests, the bench). */
  readonly patched: boolean;
}

let patchedLists = 0;
let wholeLists = 0;

/** Listener lists made so far with a memo: patched from the last one, or whole. */
export const listenerCounts = (): { readonly patched: number; readonly whole: number } => ({
  patched: patchedLists,
  whole: wholeLists,
});

/** A route's hostnames over all its matcher sets (each once). */
const hostsOf = (r: CaddyRoute): readonly string[] => {
  const m = r.match;
  if (!m) return [];
  if (m.length === 1 && (m[0]!.host?.length ?? 0) <= 1) return m[0]!.host ?? [];
  const out = new Set<string>();
  for (const set of m) for (const h of set.host ?? []) out.add(h);
  return [...out];
};

const isWildcard = (e: HTTPRouteEntryIR): boolean => e.match.hostname?.startsWith("*.") === true;

/** Limited to hosts: every matcher set has a `host` matcher (mergeHostCatchAlls' end). */
const hostLimited = (r: CaddyRoute): boolean =>
  !!r.match?.length && r.match.every(m => m.host !== undefined);

/**
 * The listener's state for `entries`: patched from `prev` when there is one of the same
 * context, else whole. `render` renders an entry (its kept fragment when it has one);
 * `fragment` gives a rendered route's fragment (undefined: unknown, then whole).
 */
export function listenerState(
  prev: ListenerState | undefined,
  entries: readonly HTTPRouteEntryIR[],
  context: string,
  render: (e: HTTPRouteEntryIR) => Rendered,
  fragment: (r: CaddyRoute) => Rendered | undefined,
  rules: MergeRules | undefined,
): ListenerState {
  if (prev && prev.context === context && (prev.merge !== undefined) === (rules !== undefined)) {
    const patched = patch(prev, entries, render, fragment, rules);
    if (patched) {
      patchedLists++;
      return patched;
    }
  }
  wholeLists++;
  return whole(entries, context, render, rules);
}

function whole(
  entries: readonly HTTPRouteEntryIR[],
  context: string,
  render: (e: HTTPRouteEntryIR) => Rendered,
  rules: MergeRules | undefined,
): ListenerState {
  const rendered: CaddyRoute[] = [];
  const uses = new Map<string, { readonly use: DispatchUse; n: number }>();
  let errorServer = 0;
  let wildcards = 0;
  for (const e of entries) {
    if (isWildcard(e)) wildcards++;
    const f = render(e);
    rendered.push(f.route);
    count(uses, f, 1);
    if (f.needsErrorServer) errorServer++;
  }
  const merge = rules && wholeMerge(rendered, rules);
  return {
    context,
    entries,
    entrySet: new Set(entries),
    rendered,
    uses,
    errorServer,
    wildcards,
    merge,
    merged: merge ? mergedList(merge, rendered, rules!) : rendered,
    patched: false,
  };
}

function count(
  uses: Map<string, { readonly use: DispatchUse; n: number }>,
  f: Rendered,
  by: number,
): void {
  for (const u of f.uses) {
    const c = uses.get(u.key);
    if (c === undefined) uses.set(u.key, { use: u, n: by });
    else if ((c.n += by) === 0) uses.delete(u.key);
  }
}

function patch(
  prev: ListenerState,
  entries: readonly HTTPRouteEntryIR[],
  render: (e: HTTPRouteEntryIR) => Rendered,
  fragment: (r: CaddyRoute) => Rendered | undefined,
  rules: MergeRules | undefined,
): ListenerState | undefined {
  const old = prev.entries;
  const was = prev.rendered;
  const set = prev.entrySet;
  const n1 = entries.length;
  const rendered: CaddyRoute[] = [];
  const removed: CaddyRoute[] = [];
  const removedEntries: HTTPRouteEntryIR[] = [];
  const added: CaddyRoute[] = [];
  const addedEntries: HTTPRouteEntryIR[] = [];
  const addedFragments: Rendered[] = [];
  const walked = walkDiff(old, entries, set, {
    kept: (i, n) => {
      for (let k = i; k < i + n; k++) rendered.push(was[k]!);
    },
    added: j => {
      const f = render(entries[j]!);
      rendered.push(f.route);
      added.push(f.route);
      addedEntries.push(entries[j]!);
      addedFragments.push(f);
    },
    removed: i => {
      removed.push(was[i]!);
      removedEntries.push(old[i]!);
    },
  });
  if (!walked) return undefined;
  if (addedEntries.length === 0 && removedEntries.length === 0) {
    countReused(n1);
    return { ...prev, entries, patched: true };
  }
  const removedFragments: Rendered[] = [];
  for (const r of removed) {
    const f = fragment(r);
    if (f === undefined) return undefined;
    removedFragments.push(f);
  }
  // From here on the previous state's structures are changed (moved to this state).
  for (const e of removedEntries) set.delete(e);
  for (const e of addedEntries) set.add(e);
  if (set.size !== n1) return undefined; // an entry twice
  const uses = prev.uses;
  let errorServer = prev.errorServer;
  for (const f of removedFragments) {
    count(uses, f, -1);
    if (f.needsErrorServer) errorServer--;
  }
  for (const f of addedFragments) {
    count(uses, f, 1);
    if (f.needsErrorServer) errorServer++;
  }
  let wildcards = prev.wildcards;
  for (const e of removedEntries) if (isWildcard(e)) wildcards--;
  for (const e of addedEntries) if (isWildcard(e)) wildcards++;
  countReused(n1 - addedEntries.length);
  const base = {
    context: prev.context,
    entries,
    entrySet: set,
    rendered,
    uses,
    errorServer,
    wildcards,
  };
  if (!rules || !prev.merge) return { ...base, merge: undefined, merged: rendered, patched: true };
  const merge =
    patchMerge(prev.merge, rendered, removed, added, rules) ?? wholeMerge(rendered, rules);
  return { ...base, merge, merged: mergedList(merge, rendered, rules), patched: true };
}

/**
 * Walks from list `old` to list `next` by identity, given `old` as a set: the items both hold
 * (`kept`: a run of `n` from old index `i`), those only `next` holds (`added`, by next index)
 * and those only `old` holds (`removed`, by old index), in list order. Items both hold must
 * keep their order (the translator keeps its order: a total order on a listener's entries);
 * false when they do not (then nothing can be made from the walk).
 */
export function walkDiff<T>(
  old: readonly T[],
  next: readonly T[],
  set: ReadonlySet<T>,
  on: {
    readonly kept: (i: number, n: number) => void;
    readonly added: (j: number) => void;
    readonly removed: (i: number) => void;
  },
): boolean {
  const n0 = old.length;
  const n1 = next.length;
  let p = 0;
  while (p < n0 && p < n1 && old[p] === next[p]) p++;
  let q = 0;
  while (q < n0 - p && q < n1 - p && old[n0 - 1 - q] === next[n1 - 1 - q]) q++;
  if (p > 0) on.kept(0, p);
  // The middles: an item of the old middle that is not the next new one while that one is
  // old was removed (kept items keep their order); a new one not in the old set was added.
  let i = p;
  let j = p;
  const iEnd = n0 - q;
  const jEnd = n1 - q;
  while (i < iEnd || j < jEnd) {
    if (i < iEnd && j < jEnd && old[i] === next[j]) {
      // (a run of kept items at once)
      let n = 1;
      while (i + n < iEnd && j + n < jEnd && old[i + n] === next[j + n]) n++;
      on.kept(i, n);
      i += n;
      j += n;
    } else if (j < jEnd && !set.has(next[j]!)) on.added(j++);
    else if (i < iEnd) on.removed(i++);
    else return false; // an old item out of its order
  }
  if (q > 0) on.kept(n0 - q, q);
  return true;
}

/** The merge state of a rendered list, from scratch (mergeHostCatchAlls' rules). */
function wholeMerge(routes: readonly CaddyRoute[], rules: MergeRules): MergeState {
  let end = routes.findIndex(r => !hostLimited(r));
  if (end < 0) end = routes.length;
  const hostRoutes = new Map<string, CaddyRoute[]>();
  routes.forEach(r => {
    for (const h of hostsOf(r)) {
      const at = hostRoutes.get(h);
      if (at === undefined) hostRoutes.set(h, [r]);
      else if (at[at.length - 1] !== r) at.push(r);
    }
  });
  const movableOf = new Map<string, CaddyRoute>();
  const movable = new Set<CaddyRoute>();
  for (let i = 0; i < end; i++) {
    const r = routes[i]!;
    const only = rules.onlyHosts(r);
    if (only?.length !== 1) continue;
    const named = hostRoutes.get(only[0]!)!;
    if (named[named.length - 1] !== r) continue;
    movableOf.set(only[0]!, r);
    movable.add(r);
  }
  const groups = new Map<string, CaddyRoute[]>();
  const prefix: CaddyRoute[] = [];
  for (let i = 0; i < end; i++) {
    const r = routes[i]!;
    if (!movable.has(r)) {
      prefix.push(r);
      continue;
    }
    const key = rules.mergeKey(r);
    const g = groups.get(key);
    if (g) g.push(r);
    else groups.set(key, [r]);
  }
  const mergedOf = new Map<string, CaddyRoute>();
  for (const [key, g] of groups) mergedOf.set(key, rules.merged(key, hostsIn(g, rules), g[0]!));
  return {
    endRoute: routes[end],
    hostRoutes,
    movableOf,
    groups,
    order: [...groups.keys()],
    mergedOf,
    prefix,
  };
}

const hostsIn = (g: readonly CaddyRoute[], rules: MergeRules): string[] =>
  g.map(r => rules.onlyHosts(r)![0]!);

/** The merged list: as mergeHostCatchAlls makes it. */
function mergedList(
  m: MergeState,
  routes: readonly CaddyRoute[],
  rules: MergeRules,
): readonly CaddyRoute[] {
  if (m.movableOf.size < 2) return routes;
  void rules;
  const out = m.prefix.slice();
  for (const key of m.order) out.push(m.mergedOf.get(key)!);
  const end = m.endRoute === undefined ? routes.length : routes.indexOf(m.endRoute);
  for (let k = end; k < routes.length; k++) out.push(routes[k]!);
  return out;
}

/**
 * `m` (the merge of the previous list) changed to the merge of `routes`, the previous list
 * without `removed` and with `added`; undefined when a route that takes any host changed.
 */
function patchMerge(
  m: MergeState,
  routes: readonly CaddyRoute[],
  removed: readonly CaddyRoute[],
  added: readonly CaddyRoute[],
  rules: MergeRules,
): MergeState | undefined {
  // The routes not limited to hosts are the same, in the same order: the end is the same route.
  if (!removed.every(hostLimited) || !added.every(hostLimited)) return undefined;
  const end = m.endRoute === undefined ? routes.length : routes.indexOf(m.endRoute);
  if (end < 0) return undefined;
  const positions = new Map<CaddyRoute, number>();
  const pos = (r: CaddyRoute): number => {
    let at = positions.get(r);
    if (at === undefined) positions.set(r, (at = routes.indexOf(r)));
    return at;
  };
  /** Inserts `r` into `list` (ascending positions), by binary search. */
  const insert = (list: CaddyRoute[], r: CaddyRoute): void => {
    const want = pos(r);
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (pos(list[mid]!) < want) lo = mid + 1;
      else hi = mid;
    }
    list.splice(lo, 0, r);
  };
  const remove = (list: CaddyRoute[], r: CaddyRoute): boolean => {
    const at = list.indexOf(r);
    if (at >= 0) list.splice(at, 1);
    return at >= 0;
  };
  const hosts = new Set<string>();
  const gone = new Set(removed);
  for (const r of removed)
    for (const h of hostsOf(r)) {
      hosts.add(h);
      const named = m.hostRoutes.get(h);
      if (!named || !remove(named, r)) return undefined;
      if (named.length === 0) m.hostRoutes.delete(h);
    }
  for (const r of added)
    for (const h of hostsOf(r)) {
      hosts.add(h);
      const named = m.hostRoutes.get(h);
      if (named === undefined) m.hostRoutes.set(h, [r]);
      else if (!named.includes(r)) insert(named, r);
    }
  // The routes leaving the prefix (removed, or now movable) and entering it.
  for (const r of removed) remove(m.prefix, r);
  const affected = new Set<string>();
  const entering: CaddyRoute[] = [];
  // Which route each hostname's movable one is now; the old ones leave their groups before
  // any new one is placed (a group's routes are placed by position: all must be in the list).
  const moves: [string, CaddyRoute | undefined][] = [];
  for (const h of hosts) {
    const named = m.hostRoutes.get(h);
    const last = named?.[named.length - 1];
    const only = last && rules.onlyHosts(last);
    const now = last && only?.length === 1 && pos(last) < end ? last : undefined;
    const before = m.movableOf.get(h);
    if (now === before) continue;
    moves.push([h, now]);
    if (before) {
      m.movableOf.delete(h);
      const key = rules.mergeKey(before);
      if (!remove(m.groups.get(key) ?? [], before)) return undefined;
      affected.add(key);
      if (!gone.has(before)) entering.push(before);
    }
  }
  for (const [h, now] of moves) {
    if (!now) continue;
    m.movableOf.set(h, now);
    const key = rules.mergeKey(now);
    const g = m.groups.get(key);
    if (g === undefined) m.groups.set(key, [now]);
    else insert(g, now);
    affected.add(key);
    remove(m.prefix, now);
  }
  const movable = (r: CaddyRoute): boolean => {
    const only = rules.onlyHosts(r);
    return only?.length === 1 && m.movableOf.get(only[0]!) === r;
  };
  for (const r of added) if (pos(r) < end && !movable(r)) entering.push(r);
  for (const r of entering) if (!m.prefix.includes(r)) insert(m.prefix, r);
  // The affected groups: their merged routes, and their place by their first route.
  for (const key of affected) {
    const at = m.order.indexOf(key);
    if (at >= 0) m.order.splice(at, 1);
  }
  for (const key of affected) {
    const g = m.groups.get(key)!;
    if (g.length === 0) {
      m.groups.delete(key);
      m.mergedOf.delete(key);
      continue;
    }
    m.mergedOf.set(key, rules.merged(key, hostsIn(g, rules), g[0]!));
    const want = pos(g[0]!);
    let lo = 0;
    let hi = m.order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (pos(m.groups.get(m.order[mid]!)![0]!) < want) lo = mid + 1;
      else hi = mid;
    }
    m.order.splice(lo, 0, key);
  }
  return m;
}
