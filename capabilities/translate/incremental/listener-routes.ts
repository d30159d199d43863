/**
 * A listener's route entries, built and ordered incrementally: one route
 * changed among thousands should cost that route, not every route of the listener.
 *
 * - Each attachment's ranked entries (one per hostname × rule × match) are kept on the
 *   attachment's compiled route object, under a key naming everything else they read (the
 *   listener's hostname, protocol and port, the proxy flavour, the attached hostnames). A
 *   compiled route is a new object whenever what it was compiled from changed
 *   (compile.ts), so a hit equals building the entries again.
 * - The listener's precedence order (precedence.ts) is kept per Gateway object and listener:
 *   the next build keeps the previous order of the entry groups it reuses and merges in the
 *   new groups' entries, sorted. `comparePrecedence` is a total order on the entries of one
 *   listener (entries it calls equal are equal data), so the merge equals sorting everything.
 *
 * Both are module state (WeakMaps keyed by compiled routes and Gateways) that decides only how
 * much is recomputed, never what.
 */
import type { HTTPRouteEntryIR } from "../../ir";
import type { Gateway } from "../../snapshot";
import { RankedMatch, comparePrecedence } from "../precedence";

/** One entry with what orders it. */
export interface Ranked extends RankedMatch {
  readonly entry: HTTPRouteEntryIR;
}

/** The entries one attachment contributes to one listener. */
export type RankedGroup = readonly Ranked[];

/** At most this many keys per compiled route (a route on many listeners of other hosts). */
const MAX_KEYS = 16;

const groups = new WeakMap<object, Map<string, RankedGroup>>();

/**
 * The entries of `route` (a compiled route object) under `key` (everything else they read),
 * from the cache or made by `make`.
 */
export function rankedGroup(route: object, key: string, make: () => RankedGroup): RankedGroup {
  let byKey = groups.get(route);
  const hit = byKey?.get(key);
  if (hit) return hit;
  const made = make();
  if (!byKey || byKey.size >= MAX_KEYS) groups.set(route, (byKey = new Map()));
  byKey.set(key, made);
  return made;
}

interface Order {
  readonly groups: ReadonlySet<RankedGroup>;
  readonly sorted: readonly Ranked[];
}

/** The last order per Gateway object (a changed Gateway is a new object) and listener id. */
const orders = new WeakMap<Gateway, Map<string, Order>>();

/**
 * Every entry of `current` in precedence order (the spec's; precedence.ts). Equals
 * `current.flat().sort(comparePrecedence)`.
 */
export function precedenceOrder(
  gateway: Gateway,
  listenerId: string,
  current: readonly RankedGroup[],
): readonly Ranked[] {
  let byListener = orders.get(gateway);
  if (!byListener) orders.set(gateway, (byListener = new Map()));
  const previous = byListener.get(listenerId);
  const now = new Set(current);
  const sorted = previous ? merged(previous, now) : current.flat().sort(comparePrecedence);
  byListener.set(listenerId, { groups: now, sorted });
  return sorted;
}

/** The previous order without the groups gone, merged with the new groups' sorted entries. */
function merged(previous: Order, now: ReadonlySet<RankedGroup>): Ranked[] {
  const added: Ranked[] = [];
  for (const g of now) if (!previous.groups.has(g)) added.push(...g);
  const gone = new Set<Ranked>();
  for (const g of previous.groups) if (!now.has(g)) for (const r of g) gone.add(r);
  const kept = gone.size > 0 ? previous.sorted.filter(r => !gone.has(r)) : previous.sorted;
  if (added.length === 0) return [...kept];
  // Many new entries (a new listener's worth): sorting them all is no slower.
  if (added.length * 4 > kept.length) return [...kept, ...added].sort(comparePrecedence);
  added.sort(comparePrecedence);
  const out: Ranked[] = [];
  let i = 0;
  let j = 0;
  // Ties keep the earlier build's entry first; tied entries are equal data (see above).
  while (i < kept.length && j < added.length)
    out.push(comparePrecedence(added[j]!, kept[i]!) < 0 ? added[j++]! : kept[i++]!);
  while (i < kept.length) out.push(kept[i++]!);
  while (j < added.length) out.push(added[j++]!);
  return out;
}
