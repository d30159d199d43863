/**
 * Route tables of a sealed config (the Bundled proxy's `kengine_route_table` handlers,
 * proxy/routetable): their digests, from which table-deltas.ts computes the deltas that take a
 * proxy from the tables it runs to the ones a new config holds. No I/O; the digests of each
 * table id's last config are kept (weakly) so that the next config's are derived from them by
 * the keys that changed, the same result as from scratch (`fromScratch`).
 *
 * A config is its **skeleton** (everything but the tables' `hosts`, and but the readiness
 * server, whose `@id` names the config's hash) plus its tables. Two configs with the same
 * skeleton differ only in table hosts: the proxy can be taken from one to the other by one
 * `POST /kengine/route-tables/<id>` per changed table, without a `/load`. The table hash is the
 * proxy's own (proxy/routetable/README.md): hex XOR over keys of SHA-256("<key> <hex SHA-256
 * of the key's compact route JSON>"), computed here from the bytes the controller sends.
 *
 * The route sealing adds last to an HTTP-only server (`{match: [{host: [...]}]}`, no handler:
 * the exact hosts Caddy may label in its metrics, seal.ts withTrafficMetrics) is left out
 * of the skeleton: a new hostname is a delta, and Caddy labels its traffic `_other` until the
 * next `/load` (docs/operations.md, "Route-table deltas").
 */
import { createHash } from "node:crypto";
import { hostsChangeFrom } from "./hosts-change";
import { asObject, goJSON, listJSON, Obj } from "./list-json";
import { ROUTE_TABLE_HANDLER } from "./route-table";

/** One host's route list as sent: compact JSON and its SHA-256 (hex). */
export interface HostList {
  readonly json: string;
  readonly sha: string;
}

export interface TableDigest {
  readonly id: string;
  /** Where the handler is, as `server`, route index (without the sealing's host route) and handler index. */
  readonly server: string;
  readonly route: number;
  readonly handler: number;
  readonly hosts: ReadonlyMap<string, HostList>;
  readonly hash: string;
}

export interface ConfigTables {
  /** SHA-256 (hex) of the skeleton. */
  readonly skeleton: string;
  readonly tables: ReadonlyMap<string, TableDigest>;
}

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

const digests = new WeakMap<object, HostList>();

const goTexts = new WeakMap<object, string>();

/** A host list's digest, computed once per list object (rendering reuses unchanged lists). */
export function hostList(list: object): HostList {
  let d = digests.get(list);
  if (!d) {
    const json = listJSON(list, goJSON, goTexts);
    d = { json, sha: sha256(json) };
    digests.set(list, d);
  }
  return d;
}

/** The key's share of a table hash. */
const share = (key: string, sha: string): Buffer =>
  createHash("sha256").update(`${key} ${sha}`).digest();

const shares = new WeakMap<HostList, { readonly key: string; readonly share: Buffer }>();

/** The key's share of a table hash for a kept digest (computed once per digest and key). */
function shareOf(key: string, list: HostList): Buffer {
  let s = shares.get(list);
  if (s?.key !== key) shares.set(list, (s = { key, share: share(key, list.sha) }));
  return s.share;
}

/** `tableHash` of digests kept from build to build: each key's share computed once per digest. */
function tableHashOf(hosts: ReadonlyMap<string, HostList>): string {
  const acc = Buffer.alloc(32);
  for (const [key, list] of hosts) {
    const s = shareOf(key, list);
    for (let i = 0; i < 32; i++) acc[i] ^= s[i];
  }
  return acc.toString("hex");
}

/**
 * A table's digests by key and its hash, from the table of the same id in the last config
 * sealed (while that one lives): a list that is the same object has the same digest, so only
 * the keys whose list changed are looked at twice, and the hash (an XOR of per-key shares)
 * changes by theirs. The same result as computing them from scratch.
 */
function tableHosts(
  id: string,
  record: Obj,
): {
  readonly hosts: ReadonlyMap<string, HostList>;
  readonly hash: string;
  readonly lower: boolean;
} {
  const prev = last.digest(id);
  const from = prev && recordOf.get(prev);
  const change = from && hostsChangeFrom(record, from);
  if (prev && change) {
    // Made from the last table by the keys the change names (caddy/hosts-change.ts): the
    // last digests copied, those keys' changed (a digest map's order is not the text's).
    const hosts = new Map(prev.hosts);
    const acc = Buffer.from(prev.hash, "hex");
    for (const key of change.keys) {
      if (key.toLowerCase() !== key) return tableHostsWhole(prev, record);
      const was = prev.hosts.get(key);
      const list = Object.hasOwn(record, key) ? record[key] : undefined;
      const now = list === undefined ? undefined : hostList(list as object);
      if (was === now) continue;
      if (was !== undefined) xorInto(acc, shareOf(key, was));
      if (now === undefined) hosts.delete(key);
      else {
        hosts.set(key, now);
        xorInto(acc, shareOf(key, now));
      }
    }
    return { hosts, hash: acc.toString("hex"), lower: true };
  }
  return tableHostsWhole(prev, record);
}

const xorInto = (acc: Buffer, s: Buffer): void => {
  for (let i = 0; i < 32; i++) acc[i] ^= s[i];
};

/** `tableHosts` by every key of the record (the last digest only saves the shares). */
function tableHostsWhole(
  prev: TableDigest | undefined,
  record: Obj,
): {
  readonly hosts: ReadonlyMap<string, HostList>;
  readonly hash: string;
  readonly lower: boolean;
} {
  const hosts = new Map<string, HostList>();
  let lower = true;
  for (const key of Object.keys(record)) {
    const k = key.toLowerCase();
    if (k !== key || hosts.has(k)) lower = false;
    hosts.set(k, hostList(record[key] as object));
  }
  if (!prev || !lower) return { hosts, hash: tableHashOf(hosts), lower };
  const acc = Buffer.from(prev.hash, "hex");
  const xor = (key: string, list: HostList) => {
    const s = shareOf(key, list);
    for (let i = 0; i < 32; i++) acc[i] ^= s[i];
  };
  let kept = 0;
  for (const [key, list] of hosts) {
    const was = prev.hosts.get(key);
    if (was !== undefined) kept++;
    if (was === list) continue;
    if (was !== undefined) xor(key, was);
    xor(key, list);
  }
  if (kept !== prev.hosts.size)
    for (const [key, was] of prev.hosts) if (!hosts.has(key)) xor(key, was);
  return { hosts, hash: acc.toString("hex"), lower };
}

/**
 * What the configs sealed last left for the next ones to derive from, per table id: the table's
 * digest and its exact hosts, held weakly (they live as long as their sealed config). The one
 * piece of state that makes sealing incremental; `fromScratch` runs without it.
 */
class LastTables {
  readonly #digests = new Map<string, WeakRef<TableDigest>>();
  readonly #exact = new Map<string, WeakRef<ExactHosts>>();
  #sweepAt = 64;

  digest(id: string): TableDigest | undefined {
    return this.#digests.get(id)?.deref();
  }

  keepDigest(id: string, digest: TableDigest): void {
    this.#digests.set(id, new WeakRef(digest));
  }

  exact(id: string): ExactHosts | undefined {
    return this.#exact.get(id)?.deref();
  }

  keepExact(id: string, state: ExactHosts): void {
    this.#exact.set(id, new WeakRef(state));
  }

  /** Forgets the ids whose table was collected (when an index has doubled since the last sweep). */
  sweep(): void {
    for (const index of [this.#digests, this.#exact] as Map<string, WeakRef<object>>[]) {
      if (index.size < this.#sweepAt) continue;
      for (const [k, ref] of index) if (ref.deref() === undefined) index.delete(k);
    }
    this.#sweepAt = Math.max(64, 2 * Math.max(this.#digests.size, this.#exact.size));
  }
}

let last = new LastTables();
/** The hosts record a digest was made from (its keys lower-case and distinct). */
const recordOf = new WeakMap<TableDigest, Obj>();
/** What a digest keeps alive besides itself (the exact hosts derived from its table). */
const keptWith = new WeakMap<TableDigest, unknown>();

/**
 * The exact hostnames of a table (metrics, seal.ts `exactHosts`): its keys without `*`,
 * `{` or `}`, lower-cased, and `listHosts` of each list; sorted. Derived from the last table
 * of the same id by the keys whose list changed (a count per host), while that table's sealed
 * config lives: the same result as from scratch.
 */
export function tableExactHosts(
  id: string,
  record: Obj,
  listHosts: (list: object) => readonly string[],
): readonly string[] {
  const hit = exactStates.get(record);
  if (hit) return hit.sorted;
  const prev = last.exact(id);
  const deriving = prev?.counts !== undefined;
  const touched = new Set<string>();
  const contribute = (counts: Map<string, number>, key: string, list: unknown, by: number) => {
    const hosts =
      list !== null && typeof list === "object" ? listHosts(list) : ([] as readonly string[]);
    const add = (h: string) => {
      const n = (counts.get(h) ?? 0) + by;
      if (deriving && (n === 0 || n === by)) touched.add(h);
      if (n === 0) counts.delete(h);
      else counts.set(h, n);
    };
    if (!/[*{}]/.test(key)) add(key.toLowerCase());
    for (const h of hosts) add(h);
  };
  let state: ExactHosts;
  const change = prev?.counts && hostsChangeFrom(record, prev.record);
  if (prev?.counts && change) {
    // Made from the previous state's table by the keys it names (caddy/hosts-change.ts).
    const counts = prev.counts;
    prev.counts = undefined;
    const before = prev.record;
    for (const key of change.keys) {
      const was = Object.hasOwn(before, key) ? before[key] : undefined;
      const list = Object.hasOwn(record, key) ? record[key] : undefined;
      if (was === list) continue;
      if (was !== undefined) contribute(counts, key, was, -1);
      if (list !== undefined) contribute(counts, key, list, 1);
    }
    state = { record, counts, sorted: sameHosts(prev.sorted, counts, touched) };
  } else if (prev?.counts) {
    // The previous state's counts move to this one (a state derives one successor).
    const counts = prev.counts;
    prev.counts = undefined;
    let kept = 0;
    const before = prev.record;
    for (const key of Object.keys(record)) {
      const list = record[key];
      if (Object.hasOwn(before, key)) {
        kept++;
        if (before[key] === list) continue;
        contribute(counts, key, before[key], -1);
      }
      contribute(counts, key, list, 1);
    }
    const keys = Object.keys(before);
    if (kept !== keys.length)
      for (const key of keys)
        if (!Object.hasOwn(record, key)) contribute(counts, key, before[key], -1);
    state = { record, counts, sorted: sameHosts(prev.sorted, counts, touched) };
  } else {
    const counts = new Map<string, number>();
    for (const key of Object.keys(record)) contribute(counts, key, record[key], 1);
    state = { record, counts, sorted: [...counts.keys()].sort() };
  }
  exactStates.set(record, state);
  last.keepExact(id, state);
  return state.sorted;
}

interface ExactHosts {
  readonly record: Obj;
  /** Per host, how many keys give it; moved to the state derived from this one. */
  counts: Map<string, number> | undefined;
  readonly sorted: readonly string[];
}

const exactStates = new WeakMap<Obj, ExactHosts>();

/**
 * `f()` with no earlier table to derive from (what it seals is computed from scratch and
 * found by no later seal): tests compare such a build with an incremental one.
 */
export function fromScratch<T>(f: () => T): T {
  const saved = last;
  last = new LastTables();
  try {
    return f();
  } finally {
    last = saved;
  }
}

/** `sorted` (the hosts before) updated to the hosts of `counts`, given the hosts whose count changed. */
function sameHosts(
  sorted: readonly string[],
  counts: ReadonlyMap<string, number>,
  touched: ReadonlySet<string>,
): readonly string[] {
  let out: string[] | undefined;
  for (const h of touched) {
    const list = out ?? sorted;
    const at = lowerBound(list, h);
    const was = list[at] === h;
    if (was === counts.has(h)) continue;
    out ??= [...sorted];
    if (was) out.splice(at, 1);
    else out.splice(at, 0, h);
  }
  return out ?? sorted;
}

/** The first index of `sorted` (default sort order: UTF-16 code units) whose value is not below `h`. */
function lowerBound(sorted: readonly string[], h: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < h) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The proxy's table hash for key → SHA-256 (hex) of each list. */
export function tableHash(hosts: Iterable<readonly [string, string]>): string {
  const acc = Buffer.alloc(32);
  for (const [key, sha] of hosts) {
    const s = share(key, sha);
    for (let i = 0; i < 32; i++) acc[i] ^= s[i];
  }
  return acc.toString("hex");
}

/** The sealing's metrics host route: a host matcher and nothing else. */
const isHostRoute = (r: unknown): boolean => {
  const o = asObject(r);
  return o !== undefined && o.handle === undefined && Object.keys(o).length === 1;
};

/**
 * The tables of a sealed config (before the readiness server is added: `config` is what the
 * hash names) and its skeleton hash; undefined when it has no table.
 */
export function configTables(config: Obj, readinessServer: string): ConfigTables | undefined {
  const apps = asObject(config.apps);
  const http = asObject(apps?.http);
  const servers = asObject(http?.servers);
  if (!servers) return undefined;
  const tables = new Map<string, TableDigest>();
  const strippedServers: Record<string, unknown> = {};
  for (const [name, server] of Object.entries(servers)) {
    if (name === readinessServer) continue;
    const routes = asObject(server)?.routes;
    if (!Array.isArray(routes)) {
      strippedServers[name] = server;
      continue;
    }
    let index = 0;
    const stripped: unknown[] = [];
    for (const r of routes as unknown[]) {
      if (isHostRoute(r)) continue;
      const handle = asObject(r)?.handle;
      if (Array.isArray(handle) && handle.some(h => asObject(h)?.handler === ROUTE_TABLE_HANDLER)) {
        stripped.push({
          ...asObject(r),
          handle: (handle as unknown[]).map((h, p) => {
            const o = asObject(h);
            if (o?.handler !== ROUTE_TABLE_HANDLER) return h;
            const id = String(o.id);
            const record = asObject(o.hosts) ?? {};
            const { hosts, hash, lower } = tableHosts(id, record);
            const digest: TableDigest = { id, server: name, route: index, handler: p, hosts, hash };
            tables.set(id, digest);
            // (a later table made from this record derives its digests from these)
            if (lower) recordOf.set(digest, record);
            last.keepDigest(id, digest);
            // (what was derived from the table's hosts lives as long as its digest does)
            const exact = exactStates.get(record);
            if (exact) keptWith.set(digest, exact);
            return { ...o, hosts: {} };
          }),
        });
      } else stripped.push(r);
      index++;
    }
    strippedServers[name] = { ...asObject(server), routes: stripped };
  }
  last.sweep();
  if (tables.size === 0) return undefined;
  const skeleton = {
    ...config,
    apps: { ...apps, http: { ...http, servers: strippedServers } },
  };
  return { skeleton: sha256(JSON.stringify(skeleton)), tables };
}
