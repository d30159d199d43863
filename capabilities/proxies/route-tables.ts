/**
 * Route tables of a sealed config (the Bundled proxy's `kengine_route_table` handlers,
 * proxy/routetable) and the deltas that take a proxy from the tables it runs to the ones a new
 * config holds. Pure.
 *
 * A config is its **skeleton** (everything but the tables' `hosts`, and but the readiness
 * server, whose `@id` names the config's hash) plus its tables. Two configs with the same
 * skeleton differ only in table hosts: the proxy can be taken from one to the other by one
 * `POST /kengine/route-tables/<id>` per changed table, without a `/load`. The table hash is the
 * proxy's own (proxy/routetable/README.md): hex XOR over keys of SHA-256("<key> <hex SHA-256
 * of the key's compact route JSON>"), computed here from the bytes the controller sends.
 *
 * The route sealing adds first to an HTTP-only server (`{match: [{host: [...]}]}`, no handler:
 * the exact hosts Caddy may label in its metrics, management.ts withTrafficMetrics) is left out
 * of the skeleton: a new hostname is a delta, and Caddy labels its traffic `_other` until the
 * next `/load` (docs/operations.md, "Route-table deltas").
 */
import { Hash, createHash, randomBytes } from "node:crypto";
import { hostsChangeFrom, hostsKeys } from "../caddy/hosts-change";
import { ROUTE_TABLE_HANDLER } from "../caddy/route-table";

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

/** What a proxy runs in its tables: per table, key → SHA-256 of the list, and the table hash. */
export interface RunningTables {
  /** The hash of the config last loaded (`/load`): the readiness server's `@id` names it. */
  readonly base: string;
  readonly skeleton: string;
  readonly tables: ReadonlyMap<
    string,
    { readonly hash: string; readonly hosts: ReadonlyMap<string, string> }
  >;
}

export interface TableDelta {
  readonly id: string;
  /** key → compact route list JSON, or null (delete). */
  readonly hosts: ReadonlyMap<string, string | null>;
  /** The table hash the proxy holds before (If-Match) and after the delta. */
  readonly ifMatch: string;
  readonly expect: string;
}

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

const digests = new WeakMap<object, HostList>();

/**
 * JSON as Go's encoding/json writes a value decoded into `any`: object keys sorted, `<`, `>`,
 * `&`, U+2028 and U+2029 escaped. Caddy decodes a `/load` body that way and encodes it again
 * before provisioning, so the proxy hashes a config's host lists in this form; deltas are sent
 * in it too, so that both hash alike.
 */
export function goJSON(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(goJSON).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o)
      .filter(k => o[k] !== undefined)
      .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    return `{${keys.map(k => `${goString(k)}:${goJSON(o[k])}`).join(",")}}`;
  }
  return typeof v === "string" ? goString(v) : JSON.stringify(v);
}

const GO_ESCAPES: Readonly<Record<string, string>> = {
  "<": "\\u003c",
  ">": "\\u003e",
  "&": "\\u0026",
  "\u2028": "\\u2028",
  "\u2029": "\\u2029",
};
const goString = (s: string): string =>
  JSON.stringify(s).replace(/[<>&\u2028\u2029]/g, c => GO_ESCAPES[c]);

/**
 * The JSON of a list's routes in `form`, joined: the text of a route several lists hold (a
 * merged host route: `match` names several hosts) is made once per route object.
 */
function listJSON(
  list: object,
  form: (v: unknown) => string,
  kept: WeakMap<object, string>,
): string {
  if (!Array.isArray(list)) return form(list);
  const parts: string[] = [];
  for (const r of list as unknown[]) {
    if (!shared(r)) {
      parts.push(form(r));
      continue;
    }
    let text = kept.get(r);
    if (text === undefined) kept.set(r, (text = form(r)));
    parts.push(text);
  }
  return `[${parts.join(",")}]`;
}

/** A route that names several hosts (held by the list of each). */
const shared = (r: unknown): r is object => {
  const match = asObject(r)?.match;
  const host = Array.isArray(match) ? asObject(match[0])?.host : undefined;
  return Array.isArray(host) && host.length > 1;
};

const goTexts = new WeakMap<object, string>();
const texts = new WeakMap<object, string>();
const plainJSON = (v: unknown): string => JSON.stringify(v) ?? "null";

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
  const prev = lastDigests.get(id)?.deref();
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

/** The last digest of each table id (weakly: it lives as long as its sealed config). */
let lastDigests = new Map<string, WeakRef<TableDigest>>();
let sweepDigestsAt = 64;
/** The hosts record a digest was made from (its keys lower-case and distinct). */
const recordOf = new WeakMap<TableDigest, Obj>();
/** What a digest keeps alive besides itself (the exact hosts derived from its table). */
const keptWith = new WeakMap<TableDigest, unknown>();

function sweepLast(): void {
  for (const index of [lastDigests, lastExact] as Map<string, WeakRef<object>>[]) {
    if (index.size < sweepDigestsAt) continue;
    for (const [k, ref] of index) if (ref.deref() === undefined) index.delete(k);
  }
  sweepDigestsAt = Math.max(64, 2 * Math.max(lastDigests.size, lastExact.size));
}

/**
 * The exact hostnames of a table (metrics, management.ts `exactHosts`): its keys without `*`,
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
  const prev = lastExact.get(id)?.deref();
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
  lastExact.set(id, new WeakRef(state));
  return state.sorted;
}

interface ExactHosts {
  readonly record: Obj;
  /** Per host, how many keys give it; moved to the state derived from this one. */
  counts: Map<string, number> | undefined;
  readonly sorted: readonly string[];
}

const exactStates = new WeakMap<Obj, ExactHosts>();
let lastExact = new Map<string, WeakRef<ExactHosts>>();

/**
 * `f()` with no earlier table to derive from (what it seals is computed from scratch and
 * found by no later seal): tests compare such a build with an incremental one.
 */
export function fromScratch<T>(f: () => T): T {
  const saved = [lastDigests, lastExact] as const;
  lastDigests = new Map();
  lastExact = new Map();
  try {
    return f();
  } finally {
    [lastDigests, lastExact] = saved;
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

type Obj = { readonly [k: string]: unknown };
const asObject = (v: unknown): Obj | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : undefined;

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
            lastDigests.set(id, new WeakRef(digest));
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
  sweepLast();
  if (tables.size === 0) return undefined;
  const skeleton = {
    ...config,
    apps: { ...apps, http: { ...http, servers: strippedServers } },
  };
  return { skeleton: sha256(JSON.stringify(skeleton)), tables };
}

/**
 * A config's JSON text (the same bytes as `JSON.stringify(config)`) as pieces: the skeleton's
 * text and each route table's `hosts` from its lists' texts, kept per list object and key (a
 * render keeps unchanged lists as the same objects, caddy/render-memo.ts). The text is joined
 * only when asked for; its size and its hash come from the pieces, so a build that pushes
 * deltas serialises what changed, not the whole table.
 */
export interface ConfigText {
  /** UTF-8 length of the text. */
  readonly bytes: number;
  /** Feeds the text to `hash` piece by piece (the digest of the whole text: SHA-256 streams). */
  update(hash: Hash): void;
  /** The text (joined on first use). */
  text(): string;
}

/** The same as `JSON.stringify(config)`, from the kept pieces (see ConfigText). */
export const configJSON = (config: Obj): string => configText(config).text();

export function configText(config: Obj): ConfigText {
  const tables: HostsParts[] = [];
  const copy = withTables(config, hosts => {
    tables.push(hostsParts(hosts));
    return `${SPLICE}${tables.length - 1}`;
  });
  if (tables.length === 0) return plainText(JSON.stringify(config));
  const parts = JSON.stringify(copy).split(SPLICED);
  // Odd parts are the markers' numbers: each once, in order (else the plain way).
  if (
    parts.length !== 2 * tables.length + 1 ||
    parts.some((p, i) => i % 2 === 1 && p !== String((i - 1) / 2))
  )
    return plainText(JSON.stringify(config));
  const skeleton = parts.filter((_, i) => i % 2 === 0);
  let bytes = 0;
  for (const p of skeleton) bytes += Buffer.byteLength(p);
  for (const t of tables) bytes += t.bytes;
  let text: string | undefined;
  return {
    bytes,
    update: hash => {
      skeleton.forEach((p, i) => {
        hash.update(p);
        const t = tables[i];
        if (t === undefined) return;
        // `{` + the parts without the first one's comma + `}`
        if (t.parts.length === 0) hash.update("{}");
        else {
          hash.update("{");
          hash.update(t.parts[0]!.slice(1));
          for (let j = 1; j < t.parts.length; j++) hash.update(t.parts[j]!);
          hash.update("}");
        }
      });
    },
    text: () =>
      (text ??= skeleton
        .map((p, i) => (i < tables.length ? p + hostsText(tables[i]!) : p))
        .join("")),
  };
}

const plainText = (text: string): ConfigText => ({
  bytes: Buffer.byteLength(text),
  update: hash => void hash.update(text),
  text: () => text,
});

/** Stands for a table's hosts in the text (NUL and a per-process nonce: no config holds it). */
const NONCE = randomBytes(8).toString("hex");
const SPLICE = `\u0000kengine-hosts-${NONCE}-`;
/** The marker as JSON.stringify writes it (NUL as `\u0000`), its number captured. */
const SPLICED = new RegExp(`"\\\\u0000kengine-hosts-${NONCE}-(\\d+)"`);

/** A table's `hosts` as pieces: `,"<key>":<list JSON>` per key, and their UTF-8 length with braces. */
interface HostsParts {
  readonly parts: readonly string[];
  readonly bytes: number;
}

const partsOf = new WeakMap<object, HostsParts>();
const listParts = new WeakMap<object, { readonly key: string; part: string; bytes: number }>();

/** The pieces of a table's `hosts` (once per hosts object; each key's piece once per list object). */
function hostsParts(hosts: Obj): HostsParts {
  let t = partsOf.get(hosts);
  if (t !== undefined) return t;
  const parts: string[] = [];
  let bytes = 2;
  for (const key of hostsKeys(hosts)) {
    const list = hosts[key];
    if (list === undefined) continue;
    if (list === null || typeof list !== "object") {
      const part = `,${JSON.stringify(key)}:${JSON.stringify(list)}`;
      parts.push(part);
      bytes += Buffer.byteLength(part);
      continue;
    }
    let p = listParts.get(list);
    if (p?.key !== key) {
      const part = `,${JSON.stringify(key)}:${listJSON(list, plainJSON, texts)}`;
      listParts.set(list, (p = { key, part, bytes: Buffer.byteLength(part) }));
    }
    parts.push(p.part);
    bytes += p.bytes;
  }
  // (the first part's comma is not written)
  if (parts.length > 0) bytes -= 1;
  partsOf.set(hosts, (t = { parts, bytes }));
  return t;
}

const hostsText = (t: HostsParts): string => `{${t.parts.join("").slice(1)}}`;

/** `config` with each route table handler's `hosts` replaced by `sub(hosts)` (a shallow copy). */
function withTables(config: Obj, sub: (hosts: Obj) => unknown): Obj {
  const apps = asObject(config.apps);
  const http = asObject(apps?.http);
  const servers = asObject(http?.servers);
  if (!servers) return config;
  let changed = false;
  const out: Record<string, unknown> = {};
  for (const [name, server] of Object.entries(servers)) {
    const routes = asObject(server)?.routes;
    out[name] = server;
    if (!Array.isArray(routes)) continue;
    let any = false;
    const mapped = (routes as unknown[]).map(r => {
      const handle = asObject(r)?.handle;
      if (!Array.isArray(handle) || !handle.some(isTableHandler)) return r;
      any = true;
      return {
        ...asObject(r),
        handle: (handle as unknown[]).map(h =>
          isTableHandler(h) ? { ...asObject(h), hosts: sub(asObject(asObject(h)!.hosts)!) } : h,
        ),
      };
    });
    if (any) out[name] = { ...asObject(server), routes: mapped };
    changed ||= any;
  }
  return changed ? { ...config, apps: { ...apps, http: { ...http, servers: out } } } : config;
}

const isTableHandler = (h: unknown): boolean => {
  const o = asObject(h);
  return o?.handler === ROUTE_TABLE_HANDLER && asObject(o.hosts) !== undefined;
};

const running = new WeakMap<ConfigTables, Map<string, RunningTables>>();

/**
 * What a proxy runs right after loading a config with these tables (or after deltas took it
 * there from a load of `base`). One object per (tables, base): the proxies of a Gateway share
 * it, and with it the deltas to their next config (`tableDeltas`), computed once for all.
 */
export function runningAfterLoad(base: string, tables: ConfigTables): RunningTables {
  const byBase = running.get(tables) ?? new Map<string, RunningTables>();
  running.set(tables, byBase);
  let r = byBase.get(base);
  if (!r) {
    r = freshRunning(base, tables);
    byBase.set(base, r);
  }
  return r;
}

function freshRunning(base: string, tables: ConfigTables): RunningTables {
  return {
    base,
    skeleton: tables.skeleton,
    tables: new Map(
      [...tables.tables].map(([id, t]) => [
        id,
        { hash: t.hash, hosts: new Map([...t.hosts].map(([k, v]) => [k, v.sha])) },
      ]),
    ),
  };
}

/**
 * The deltas taking a proxy that runs `running` to `desired`, one per changed table; undefined
 * when only a `/load` can (another skeleton, a table added or removed).
 */
export function tableDeltas(
  from: RunningTables,
  desired: ConfigTables,
): readonly TableDelta[] | undefined {
  const cached = deltaCache.get(from)?.get(desired);
  if (cached !== undefined) return cached ?? undefined;
  const computed = computeDeltas(from, desired);
  const byDesired =
    deltaCache.get(from) ?? new WeakMap<ConfigTables, readonly TableDelta[] | null>();
  byDesired.set(desired, computed ?? null);
  deltaCache.set(from, byDesired);
  return computed;
}

/** Deltas by (running, desired): a change costs its hosts once, not once per proxy. */
const deltaCache = new WeakMap<
  RunningTables,
  WeakMap<ConfigTables, readonly TableDelta[] | null>
>();

function computeDeltas(
  running: RunningTables,
  desired: ConfigTables,
): readonly TableDelta[] | undefined {
  if (running.skeleton !== desired.skeleton || running.tables.size !== desired.tables.size)
    return undefined;
  const out: TableDelta[] = [];
  for (const [id, want] of desired.tables) {
    const has = running.tables.get(id);
    if (!has) return undefined;
    if (has.hash === want.hash) continue;
    const hosts = new Map<string, string | null>();
    for (const [key, list] of want.hosts)
      if (has.hosts.get(key) !== list.sha) hosts.set(key, list.json);
    for (const key of has.hosts.keys()) if (!want.hosts.has(key)) hosts.set(key, null);
    out.push({ id, hosts, ifMatch: has.hash, expect: want.hash });
  }
  return out;
}

/** `running` with `delta` applied. */
export function applyDelta(running: RunningTables, delta: TableDelta): RunningTables {
  const table = running.tables.get(delta.id);
  const hosts = new Map(table?.hosts);
  for (const [key, json] of delta.hosts) {
    if (json === null) hosts.delete(key);
    else hosts.set(key, sha256(json));
  }
  const tables = new Map(running.tables);
  tables.set(delta.id, { hash: delta.expect, hosts });
  return { ...running, tables };
}

const bodies = new WeakMap<TableDelta, { label: string; body: string }>();

/** The body of `POST /kengine/route-tables/<id>` (compact lists inserted verbatim; built once per delta and label). */
export function deltaBody(delta: TableDelta, label: string): string {
  const hit = bodies.get(delta);
  if (hit?.label === label) return hit.body;
  const parts = [...delta.hosts].map(([key, json]) => `${JSON.stringify(key)}:${json ?? "null"}`);
  const body = `{"hosts":{${parts.join(",")}},"label":${JSON.stringify(label)}}`;
  bodies.set(delta, { label, body });
  return body;
}

/**
 * A delta's refusal (the admin API's 400: `host "<key>": …`) in the words of a `/load` error,
 * so that the culprit machinery traces it like one (reconcile/error-path.ts).
 */
export function deltaRefusal(table: TableDigest, message: string): string {
  return `loading http app module: provision http: server ${table.server}: setting up route handlers: route ${table.route}: loading handler modules: position ${table.handler}: loading module '${ROUTE_TABLE_HANDLER}': provision http.handlers.${ROUTE_TABLE_HANDLER}: ${message}`;
}
