/**
 * What rendering keeps from one build to the next (issue 16, item 3), so that a route change
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
 * same bytes as none. Pure (no clock, no I/O).
 */
import type { GatewayIR, HTTPRouteEntryIR } from "../ir";
import type { CaddyHandler, CaddyRoute } from "./types";

/** A backend set an entry's route names (shared dispatch): its reverse_proxy by its JSON. */
export interface DispatchUse {
  readonly key: string;
  readonly id: string;
  readonly handler: CaddyHandler;
}

/** An entry's rendered route and what rendering it did besides. */
export interface EntryFragment {
  /** The rendering context it was made in (entryContext in config.ts). */
  readonly context: string;
  readonly route: CaddyRoute;
  readonly uses: readonly DispatchUse[];
  readonly needsErrorServer: boolean;
}

const fragments = new WeakMap<HTTPRouteEntryIR, EntryFragment>();
let fragmentsRendered = 0;
let fragmentsReused = 0;

/** The entry's fragment, if it was rendered in `context`. */
export function fragmentOf(e: HTTPRouteEntryIR, context: string): EntryFragment | undefined {
  const f = fragments.get(e);
  if (f?.context !== context) return undefined;
  fragmentsReused++;
  return f;
}

export function keepFragment(e: HTTPRouteEntryIR, f: EntryFragment): void {
  fragmentsRendered++;
  fragments.set(e, f);
}

/** Route entries rendered and reused so far (build-timings and the bench report the difference). */
export const fragmentCounts = (): { readonly rendered: number; readonly reused: number } => ({
  rendered: fragmentsRendered,
  reused: fragmentsReused,
});

const grouped = new WeakMap<CaddyRoute, Map<string, CaddyRoute>>();

/** `make(r)` for `group`, made once per route object and group. */
export function groupedRoute(
  r: CaddyRoute,
  group: string,
  make: (r: CaddyRoute) => CaddyRoute,
): CaddyRoute {
  let byGroup = grouped.get(r);
  if (!byGroup) grouped.set(r, (byGroup = new Map()));
  let g = byGroup.get(group);
  if (!g) byGroup.set(group, (g = make(r)));
  return g;
}

const derived = new WeakMap<object, Map<string, unknown>>();

/** `make(o)`, computed once per object (and name). */
export function derivedOf<O extends object, T>(o: O, name: string, make: (o: O) => T): T {
  let byName = derived.get(o);
  if (!byName) derived.set(o, (byName = new Map()));
  if (byName.has(name)) return byName.get(name) as T;
  const v = make(o);
  byName.set(name, v);
  return v;
}

/** One route table's render state, made from the previous render's (see the file comment). */
export class TableMemo {
  readonly #lists = new Map<string, readonly CaddyRoute[]>();
  readonly #interned = new Map<string, CaddyRoute>();
  #previous: TableMemo | undefined;

  constructor(previous: TableMemo | undefined) {
    this.#previous = previous;
  }

  /** `list`, or the previous render's list of `key` when it holds the same routes in order. */
  list(key: string, list: readonly CaddyRoute[]): readonly CaddyRoute[] {
    const before = this.#previous && this.#previous.#lists.get(key);
    const kept =
      before !== undefined && before.length === list.length && before.every((r, i) => r === list[i])
        ? before
        : list;
    this.#lists.set(key, kept);
    return kept;
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
