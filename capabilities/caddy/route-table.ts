/**
 * The Bundled proxy's host-indexed route table (proxy/routetable, handler
 * `kengine_route_table`): on a proxy with the `routeTable` capability, an HTTP server's
 * listener routes become one table whose `hosts` map holds, per listener hostname (`*` for a
 * listener without one), exactly the route list the listener's subroute holds on the other
 * flavours. The proxy picks one list per request (exact host, longest wildcard, `*`) as the
 * listener routes of the linear shape do (most specific listener first), so behaviour is the
 * same (proxy/routetable/golden_test.go checks it on every golden). A route change then
 * changes only the lists of the hosts it is attached to, which the controller sends as a
 * per-host delta instead of a `/load` (table-digests.ts, table-deltas.ts). No clock, no I/O;
 * module state: two counters of tables made by delta and whole (countTable, for tests and the
 * bench).
 */
import { createHash } from "node:crypto";
import { noteHostsChange, noteHostsKeys, notedKeys, plainKey } from "./hosts-change";
import { CaddyHandler, CaddyRoute } from "./types";

export const ROUTE_TABLE_HANDLER = "kengine_route_table" as const;

/** The table's key for a listener hostname (the proxy lower-cases keys; `*`: no hostname). */
export const tableKey = (hostname: string | undefined): string =>
  hostname === undefined ? "*" : hostname.toLowerCase();

/** A table id, unique per config and stable across builds: `<namespace>/<gateway>/<server>`. */
export const tableId = (namespace: string, gateway: string, server: string): string =>
  `${namespace}/${gateway}/${server}`;

/**
 * One listener of a server: its hostname, the route list its subroute would hold, and the
 * hostnames each route of the list is limited to (exact or `*.` wildcard, lower-case;
 * undefined: any host of the listener).
 */
export interface TableListener {
  readonly hostname: string | undefined;
  readonly routes: readonly CaddyRoute[];
  readonly hostsOf: (route: CaddyRoute) => readonly string[] | undefined;
}

/** Whether hostname pattern `h` (exact or `*.` wildcard) matches every host of key `k`. */
function covers(h: string, k: string): boolean {
  if (!h.startsWith("*.")) return h === k;
  const suffix = h.slice(1);
  return k.startsWith("*.") ? k.slice(1).endsWith(suffix) : k.endsWith(suffix);
}

/**
 * The server route holding the table. Keys: each listener's hostname (`*`: none), and each
 * hostname a route of the listener is limited to, holding only the rules that can match it
 * (its own, those of wildcards covering it, those for any host: the listener's list filtered,
 * so precedence is kept); the listener's own key keeps the rules for any host. A route's
 * hostname becomes a key only when the listener is the one the linear shape picks for all its
 * hosts (no listener before it covers them); otherwise those hosts never reach the listener.
 * So a route change changes only the keys of its hostnames. The first listener of a key wins,
 * as in the linear group. Hosts no listener takes get the linear shape's final 404 (key `*`),
 * unless a listener without hostname is there. Not terminal: a list that only names a backend
 * (shared dispatch) lets the request go on to the server's dispatch routes.
 */
export function routeTableRoute(
  id: string,
  listeners: readonly TableListener[],
  notFound: () => CaddyRoute,
  /** A list equal to one made before (same routes, same order) may be given back as that object. */
  reuse: (key: string, list: readonly CaddyRoute[]) => readonly CaddyRoute[] = (_, l) => l,
): {
  readonly route: CaddyRoute;
  readonly hosts: Readonly<Record<string, readonly CaddyRoute[]>>;
  /** The listener (index) each key's list comes from. */
  readonly from: ReadonlyMap<string, number>;
} {
  const hosts: Record<string, readonly CaddyRoute[]> = {};
  const from = new Map<string, number>();
  const put = (key: string, i: number, list: readonly CaddyRoute[]) => {
    if (from.has(key)) return;
    hosts[key] = reuse(key, list);
    from.set(key, i);
  };
  listeners.forEach((l, i) => {
    const own = tableKey(l.hostname);
    const before = listeners.slice(0, i).map(o => o.hostname?.toLowerCase());
    const reaches = (key: string) => !before.some(b => b === undefined || covers(b, key));
    // One pass over the routes: those for any host, and per hostname the routes limited to it
    // (a key's list is then merged from those of the hostnames covering it, in list order).
    const any: number[] = [];
    const byHost = new Map<string, number[]>();
    const derived = new Set<string>();
    l.routes.forEach((r, j) => {
      const limits = l.hostsOf(r);
      if (limits === undefined) {
        any.push(j);
        return;
      }
      for (const raw of limits) {
        const h = raw.toLowerCase();
        const at = byHost.get(h);
        if (at === undefined) byHost.set(h, [j]);
        else if (at[at.length - 1] !== j) at.push(j);
        if (h !== own && !derived.has(h) && !from.has(h) && reaches(h)) derived.add(h);
      }
    });
    put(
      own,
      i,
      any.map(j => l.routes[j]),
    );
    const wildcards = [...byHost.keys()].some(h => h.startsWith("*."));
    for (const key of derived) {
      const parts = [any, ...coveringHosts(key, wildcards).map(h => byHost.get(h) ?? [])];
      put(
        key,
        i,
        mergeSorted(parts).map(j => l.routes[j]),
      );
    }
  });
  if (!("*" in hosts)) hosts["*"] = [notFound()];
  noteHostsKeys(hosts, Object.keys(hosts));
  const handler: CaddyHandler = { handler: ROUTE_TABLE_HANDLER, id, hosts };
  return { route: { handle: [handler] }, hosts, from };
}

/**
 * The hostname patterns that cover `key` (`covers(h, key)`): the key itself, and with
 * `wildcards`, `*.` and each of the key's parent domains (a wildcard key: its own domain too).
 */
function coveringHosts(key: string, wildcards: boolean): string[] {
  const out = [key];
  if (!wildcards) return out;
  // A wildcard key `*.<base>` is covered by itself (already in) and by its parents' wildcards.
  const base = key.startsWith("*.") ? key.slice(2) : key;
  for (let dot = base.indexOf("."); dot >= 0; dot = base.indexOf(".", dot + 1))
    out.push(`*${base.slice(dot)}`);
  return out;
}

/** The ascending union of ascending index lists. */
function mergeSorted(lists: readonly (readonly number[])[]): number[] {
  const nonEmpty = lists.filter(l => l.length > 0);
  if (nonEmpty.length === 1) return [...nonEmpty[0]];
  return [...new Set(nonEmpty.flat())].sort((a, b) => a - b);
}

/**
 * A shared-dispatch id named by its content, so that a route change does not rename the
 * backend sets of other routes (positional ids would change the lists of unrelated hosts).
 */
export const contentDispatchId = (key: string): string =>
  `b${createHash("sha256").update(key).digest("hex").slice(0, 12)}`;

/** A route table as last made: its listeners' hostnames and route lists, and its `hosts`. */
export interface TableBefore {
  readonly listeners: readonly {
    readonly hostname: string | undefined;
    readonly routes: readonly CaddyRoute[];
  }[];
  readonly hosts: Readonly<Record<string, readonly CaddyRoute[]>>;
}

/** How a route list differs from list `from` (by identity; kept routes keep their order). */
export interface ListDiff {
  readonly from: readonly CaddyRoute[];
  readonly removed: readonly CaddyRoute[];
  readonly added: readonly CaddyRoute[];
}

/**
 * `routeTableRoute(...).hosts` made from the table `before` by the routes that changed, for a
 * table of one listener whose routes name no wildcard hostname (`wildcard: false`); undefined
 * when it cannot be made so (then the whole table is made). A route list's unchanged routes
 * are the same objects in the same order (render-memo.ts): the routes removed and added are
 * found by identity, and only the keys of their hostnames are made again — each key's list
 * holds the routes for any host and those limited to it, in list order, and keys follow the
 * first route naming them. The listener's own key holds the routes for any host only, so a
 * change to them (or a wildcard) makes the whole table. The same `hosts` as `routeTableRoute`
 * (render-memo.test.ts compares them over random changes).
 */
export function routeTableDelta(
  listeners: readonly TableListener[],
  wildcard: boolean,
  before: TableBefore,
  reuse: (key: string, list: readonly CaddyRoute[]) => readonly CaddyRoute[],
  /** How the listener's list differs from `before`'s, when known (else found here). */
  diff?: ListDiff,
): Readonly<Record<string, readonly CaddyRoute[]>> | undefined {
  const l = listeners[0];
  const was = before.listeners[0];
  if (listeners.length !== 1 || before.listeners.length !== 1 || wildcard) return undefined;
  if (l === undefined || was === undefined || l.hostname !== was.hostname) return undefined;
  const { routes } = l;
  const change =
    diff && diff.from === was.routes && diff.removed.length + diff.added.length > 0
      ? diff
      : middles(was.routes, routes);
  if (change === undefined) return undefined;
  const { removed, added } = change;
  const own = tableKey(l.hostname);
  const hostsOf = (r: CaddyRoute): readonly string[] | undefined =>
    l.hostsOf(r)?.map(h => h.toLowerCase());
  const limited = new Map<CaddyRoute, readonly string[]>();
  const affected = new Set<string>();
  for (const r of [...removed, ...added]) {
    const hosts = hostsOf(r);
    if (hosts === undefined || hosts.some(h => h.startsWith("*."))) return undefined;
    limited.set(r, hosts);
    for (const h of hosts) if (h !== own) affected.add(h);
  }
  if (!Object.hasOwn(before.hosts, own)) return undefined;
  // The routes for any host: the own key's list (unchanged: no such route changed).
  const any = before.hosts[own]!;
  // (positions of the few routes placed, by search)
  const position = new Map<CaddyRoute, number>();
  const at = (r: CaddyRoute): number => {
    let i = position.get(r);
    if (i === undefined) position.set(r, (i = routes.indexOf(r)));
    return i;
  };
  const gone = new Set(removed);
  // the added routes naming each key, in list order (one pass: a filter per key was
  // O(keys × added), 3.4 s of a 10,000-route full build)
  const addedFor = new Map<string, CaddyRoute[]>();
  for (const r of added)
    for (const h of limited.get(r)!) {
      const list = addedFor.get(h);
      if (list === undefined) addedFor.set(h, [r]);
      else if (list[list.length - 1] !== r) list.push(r);
    }
  const lists = new Map<string, readonly CaddyRoute[]>();
  for (const key of affected) {
    const base = Object.hasOwn(before.hosts, key)
      ? before.hosts[key]!.filter(r => !gone.has(r))
      : [...any];
    const more = addedFor.get(key) ?? [];
    const list = [...base, ...more].sort((a, b) => at(a) - at(b));
    if (list.length > any.length) lists.set(key, list);
  }
  // Key order: the own key, then the others by the first route naming them (and the order of
  // its hostnames), then `*` when no listener takes any host.
  const order = (key: string): readonly [number, number] => {
    const list = lists.get(key) ?? before.hosts[key]!;
    for (const r of list) {
      const hosts = limited.get(r) ?? hostsOf(r);
      if (hosts !== undefined) return [at(r), hosts.indexOf(key)];
    }
    throw new Error(`route table key ${key} names no route`);
  };
  const before2 = (a: readonly [number, number], b: readonly [number, number]) =>
    a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
  const noted = notedKeys(before.hosts);
  const keys = (noted ?? Object.keys(before.hosts)).filter(k => !affected.has(k));
  // The own key first, `*` (when not own) last: else whole (a key that is an array index,
  // e.g. hostname `10`, is listed first by Object.keys, and the search below would compare it).
  if (keys[0] !== own) return undefined;
  const tail = own !== "*" && keys[keys.length - 1] === "*" ? 1 : 0;
  for (const key of [...lists.keys()]) {
    const want = order(key);
    let lo = 1;
    let hi = keys.length - tail;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (before2(order(keys[mid]!), want)) lo = mid + 1;
      else hi = mid;
    }
    keys.splice(lo, 0, key);
  }
  const hosts: Record<string, readonly CaddyRoute[]> = {};
  for (const key of keys) {
    const list = lists.get(key);
    hosts[key] = list === undefined ? before.hosts[key]! : reuse(key, list);
  }
  // (only the affected keys' lists differ from the last table's)
  noteHostsChange(hosts, { from: before.hosts, keys: [...affected] });
  // (its keys in order: the last table's, checked then, and the keys placed now)
  if (noted) {
    if ([...lists.keys()].every(plainKey)) noteHostsKeys(hosts, keys, true);
  } else noteHostsKeys(hosts, keys);
  return hosts;
}

/** The routes removed from `old` and added in `routes`, by identity (undefined: not a patch). */
function middles(
  old: readonly CaddyRoute[],
  routes: readonly CaddyRoute[],
): Omit<ListDiff, "from"> | undefined {
  // The changed middle: after the common start, before the common end.
  let start = 0;
  while (start < old.length && start < routes.length && old[start] === routes[start]) start++;
  let end = 0;
  while (
    end < old.length - start &&
    end < routes.length - start &&
    old[old.length - 1 - end] === routes[routes.length - 1 - end]
  )
    end++;
  const oldMiddle = old.slice(start, old.length - end);
  const newMiddle = routes.slice(start, routes.length - end);
  const inOld = new Set(oldMiddle);
  const inNew = new Set(newMiddle);
  if (inOld.size !== oldMiddle.length || inNew.size !== newMiddle.length) return undefined;
  const removed = oldMiddle.filter(r => !inNew.has(r));
  const added = newMiddle.filter(r => !inOld.has(r));
  // The routes kept must keep their order, and an added route must be new to the whole list.
  const keptOld = oldMiddle.filter(r => inNew.has(r));
  const keptNew = newMiddle.filter(r => inOld.has(r));
  if (keptOld.some((r, i) => r !== keptNew[i])) return undefined;
  if (added.some(r => old.includes(r))) return undefined;
  return { removed, added };
}

let tablesByDelta = 0;
let tablesWhole = 0;

/** Counts a memo render's table: made by `routeTableDelta` or whole. */
export function countTable(delta: boolean): void {
  if (delta) tablesByDelta++;
  else tablesWhole++;
}

/** Route tables rendered with a memo so far: by delta and whole (tests, the bench). */
export const tableCounts = (): { readonly delta: number; readonly whole: number } => ({
  delta: tablesByDelta,
  whole: tablesWhole,
});
