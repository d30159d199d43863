/**
 * What rendering keeps from one build to the next, so that a route change
 * costs about that route: the translator keeps an unchanged route's IR entries as the same
 * objects, and this keeps what was rendered from them.
 *
 * - Per IR entry (WeakMap: it lives as long as the entry does): its rendered route and the
 *   shared-dispatch backends it named, for the context it was rendered in (flavour, listener
 *   hostname, options, client certificate: everything `entryRoute` reads besides the entry).
 * - Per route object: the derived values the listener list needs (its grouped copy, its merge
 *   key), so a kept route gives back the same objects.
 * - Per route table (a Gateway's HTTP server; held by the Gateway's IR, so it goes with it):
 *   each key's list of the last render, given back when the new list holds the same routes in
 *   the same order, and the small routes made per build (merged host routes, 404s, backend
 *   routes) interned by their content. Unchanged lists are then the same objects, and their
 *   JSON, digests and backend ids (cached per list object) are not computed again.
 *
 * Only identity and content decide a reuse, never which build came before: any memo gives the
 * same bytes as none. No clock, no I/O; the memos above are module state (WeakMaps keyed by IR
 * and route objects, and a table registry of WeakRefs swept every so many renders).
 */
import type { GatewayIR } from "../ir";
import { hostsChangeFrom } from "./hosts-change";
import { type ListenerState, walkDiff } from "./listener-memo";
import type { ListDiff, TableBefore } from "./route-table";
import type { CaddyRoute } from "./types";

export {
  type DispatchUse,
  type EntryFragment,
  fragmentOf,
  keepFragment,
  fragmentOfRoute,
  countReused,
  fragmentCounts,
} from "./fragments";

/** Per route object: its grouped copy for one group (the commonest), and for others. */
const grouped = new WeakMap<
  CaddyRoute,
  { readonly group: string; readonly route: CaddyRoute; others?: Map<string, CaddyRoute> }
>();

/** `make(r)` for `group`, made once per route object and group. */
export function groupedRoute(
  r: CaddyRoute,
  group: string,
  make: (r: CaddyRoute) => CaddyRoute,
): CaddyRoute {
  const kept = grouped.get(r);
  if (kept === undefined) {
    const route = make(r);
    grouped.set(r, { group, route });
    return route;
  }
  if (kept.group === group) return kept.route;
  let g = kept.others?.get(group);
  if (!g) (kept.others ??= new Map()).set(group, (g = make(r)));
  return g;
}

/** Per name, the values derived from objects (a WeakMap each: no map per object). */
const derived = new Map<string, WeakMap<object, unknown>>();

/** `make(o)`, computed once per object (and name); `make` never returns undefined. */
export function derivedOf<O extends object, T>(o: O, name: string, make: (o: O) => T): T {
  let of = derived.get(name);
  if (!of) derived.set(name, (of = new WeakMap()));
  let v = of.get(o) as T | undefined;
  if (v === undefined) of.set(o, (v = make(o)));
  return v;
}

/** One route table's render state, made from the previous render's (see the file comment). */
export class TableMemo {
  readonly #interned = new Map<string, CaddyRoute>();
  #previous: TableMemo | undefined;
  /** The table this render made (its listeners' route lists and its `hosts`). */
  #table: TableBefore | undefined;
  /** Per backend id, how many of the table's lists name it (`backendIds`). */
  #backends: Map<string, number> | undefined;
  /** Per listener index, its route list state (listener-memo.ts). */
  readonly #listeners = new Map<number, ListenerState>();
  /** Per listener index, its final route list (and the list as a set, moved to the next render). */
  readonly #finals = new Map<
    number,
    { readonly list: readonly CaddyRoute[]; readonly set: Set<CaddyRoute> | undefined }
  >();
  /** Per listener index, how its final list differs from the previous render's. */
  readonly #diffs = new Map<number, ListDiff>();

  constructor(previous: TableMemo | undefined) {
    this.#previous = previous;
  }

  /** The table the previous render made, if any. */
  before(): TableBefore | undefined {
    return this.#previous && this.#previous.#table;
  }

  /** Listener `index`'s state of the previous render (given once: it moves to this render's). */
  listenerBefore(index: number): ListenerState | undefined {
    const previous = this.#previous;
    if (previous === undefined) return undefined;
    const before = previous.#listeners.get(index);
    previous.#listeners.delete(index);
    return before;
  }

  /**
   * Keeps listener `index`'s final route list, and how it differs from the previous render's
   * by identity (`finalDiff`), when that can be known.
   */
  keepFinal(index: number, list: readonly CaddyRoute[]): void {
    const previous = this.#previous;
    const before = previous && previous.#finals.get(index);
    if (previous) previous.#finals.delete(index);
    let set: Set<CaddyRoute> | undefined;
    if (before?.set) {
      const removed: CaddyRoute[] = [];
      const added: CaddyRoute[] = [];
      const walked = walkDiff(before.list, list, before.set, {
        kept: () => undefined,
        added: j => added.push(list[j]!),
        removed: i => removed.push(before.list[i]!),
      });
      if (walked) {
        set = before.set;
        for (const r of removed) set.delete(r);
        for (const r of added) set.add(r);
        if (set.size === list.length) this.#diffs.set(index, { from: before.list, removed, added });
        else set = undefined;
      }
    }
    set ??= new Set(list);
    this.#finals.set(index, { list, set: set.size === list.length ? set : undefined });
  }

  /** How listener `index`'s final list differs from the previous render's (`keepFinal`). */
  finalDiff(index: number): ListDiff | undefined {
    return this.#diffs.get(index);
  }

  /** Listener `index`'s state of this render, once kept. */
  listener(index: number): ListenerState | undefined {
    return this.#listeners.get(index);
  }

  /** Listener `index`'s state of this render. */
  keepListener(index: number, state: ListenerState): void {
    this.#listeners.set(index, state);
  }

  /** The table this render made (the next render's `before`). */
  keep(table: TableBefore): void {
    this.#table = table;
  }

  /**
   * The backend ids the lists of `hosts` (this render's table) name, `idsOf` each list: each
   * id with how many lists name it, from the previous render's counts and the keys whose list
   * changed (the counts move here: a memo is the previous of one memo only).
   */
  backendIds(
    hosts: Readonly<Record<string, readonly CaddyRoute[]>>,
    idsOf: (list: readonly CaddyRoute[]) => ReadonlySet<string>,
  ): ReadonlyMap<string, number> {
    const previous = this.#previous;
    const before = previous && previous.#table && previous.#table.hosts;
    let counts = previous && previous.#backends;
    const add = (list: readonly CaddyRoute[], by: number) => {
      for (const id of idsOf(list)) {
        const n = (counts!.get(id) ?? 0) + by;
        if (n === 0) counts!.delete(id);
        else counts!.set(id, n);
      }
    };
    const change = before && hostsChangeFrom(hosts, before);
    if (previous && change && counts) {
      // (made from the last table: only the keys it names may differ)
      previous.#backends = undefined;
      for (const key of change.keys) {
        const was = Object.hasOwn(before, key) ? before[key] : undefined;
        const list = Object.hasOwn(hosts, key) ? hosts[key] : undefined;
        if (was === list) continue;
        if (was) add(was, -1);
        if (list) add(list, 1);
      }
    } else if (previous && before && counts) {
      previous.#backends = undefined;
      let kept = 0;
      for (const key of Object.keys(hosts)) {
        const list = hosts[key]!;
        if (Object.hasOwn(before, key)) {
          kept++;
          const was = before[key]!;
          if (was === list) continue;
          add(was, -1);
        }
        add(list, 1);
      }
      const keys = Object.keys(before);
      if (kept !== keys.length)
        for (const key of keys) if (!Object.hasOwn(hosts, key)) add(before[key]!, -1);
    } else {
      counts = new Map();
      for (const key of Object.keys(hosts)) add(hosts[key]!, 1);
    }
    this.#backends = counts;
    return counts;
  }

  /** `list`, or the previous render's list of `key` when it holds the same routes in order. */
  list(key: string, list: readonly CaddyRoute[]): readonly CaddyRoute[] {
    const hosts = this.#previous && this.#previous.#table && this.#previous.#table.hosts;
    const before = hosts && Object.hasOwn(hosts, key) ? hosts[key] : undefined;
    return before !== undefined &&
      before.length === list.length &&
      before.every((r, i) => r === list[i])
      ? before
      : list;
  }

  /** The route named `key` (its content: equal keys must make equal JSON), made once. */
  intern(key: string, make: () => CaddyRoute): CaddyRoute {
    let r = this.#interned.get(key) ?? (this.#previous && this.#previous.#interned.get(key));
    if (r === undefined) r = make();
    this.#interned.set(key, r);
    return r;
  }

  /** `r`, or an equal route made before (by its JSON). */
  internJSON(r: CaddyRoute): CaddyRoute {
    return this.intern(`j\0${JSON.stringify(r)}`, () => r);
  }

  /** The render is done: forget the previous state (only what this render used is kept). */
  finish(): void {
    this.#previous = undefined;
  }
}

const tables = new Map<string, WeakRef<TableMemo>>();
const heldBy = new WeakMap<GatewayIR, Map<string, TableMemo>>();
let sweepAt = 64;

/**
 * A new memo for table `id` of `ir`, from the last one made for that id if it is still held.
 * The IR holds it (a memo lives as long as the Gateway's IR does; the index only refers to it).
 */
export function tableMemo(ir: GatewayIR, id: string): TableMemo {
  const next = new TableMemo(tables.get(id)?.deref());
  tables.set(id, new WeakRef(next));
  let held = heldBy.get(ir);
  if (!held) heldBy.set(ir, (held = new Map()));
  held.set(id, next);
  if (tables.size >= sweepAt) {
    for (const [k, ref] of tables) if (ref.deref() === undefined) tables.delete(k);
    sweepAt = Math.max(64, tables.size * 2);
  }
  return next;
}
