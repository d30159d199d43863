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
import { createHash, randomBytes } from "node:crypto";

export const ROUTE_TABLE_HANDLER = "kengine_route_table";

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

/** A host list's digest, computed once per list object (rendering reuses unchanged lists). */
export function hostList(list: object): HostList {
  let d = digests.get(list);
  if (!d) {
    const json = goJSON(list);
    d = { json, sha: sha256(json) };
    digests.set(list, d);
  }
  return d;
}

/** The key's share of a table hash. */
const share = (key: string, sha: string): Buffer =>
  createHash("sha256").update(`${key} ${sha}`).digest();

const shares = new WeakMap<HostList, { readonly key: string; readonly share: Buffer }>();

/** `tableHash` of digests kept from build to build: each key's share computed once per digest. */
function tableHashOf(hosts: ReadonlyMap<string, HostList>): string {
  const acc = Buffer.alloc(32);
  for (const [key, list] of hosts) {
    let s = shares.get(list);
    if (s?.key !== key) shares.set(list, (s = { key, share: share(key, list.sha) }));
    for (let i = 0; i < 32; i++) acc[i] ^= s.share[i];
  }
  return acc.toString("hex");
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
            const hosts = new Map<string, HostList>();
            for (const [key, list] of Object.entries(asObject(o.hosts) ?? {}))
              hosts.set(key.toLowerCase(), hostList(list as object));
            const id = String(o.id);
            tables.set(id, {
              id,
              server: name,
              route: index,
              handler: p,
              hosts,
              hash: tableHashOf(hosts),
            });
            return { ...o, hosts: {} };
          }),
        });
      } else stripped.push(r);
      index++;
    }
    strippedServers[name] = { ...asObject(server), routes: stripped };
  }
  if (tables.size === 0) return undefined;
  const skeleton = {
    ...config,
    apps: { ...apps, http: { ...http, servers: strippedServers } },
  };
  return { skeleton: sha256(JSON.stringify(skeleton)), tables };
}

/**
 * A config as JSON text, the same as `JSON.stringify(config)`, with each route table's `hosts`
 * assembled from its lists' JSON, kept per list object (a render keeps unchanged lists as the
 * same objects, caddy/render-memo.ts): a build serialises what changed, not the whole table.
 */
export function configJSON(config: Obj): string {
  const spliced: string[] = [];
  const copy = withTables(config, hosts => {
    spliced.push(hostsText(hosts));
    return `${SPLICE}${spliced.length - 1}`;
  });
  if (spliced.length === 0) return JSON.stringify(config);
  const parts = JSON.stringify(copy).split(SPLICED);
  // Odd parts are the markers' numbers: each once, in order (else the plain way).
  if (
    parts.length !== 2 * spliced.length + 1 ||
    parts.some((p, i) => i % 2 === 1 && p !== String((i - 1) / 2))
  )
    return JSON.stringify(config);
  return parts.map((p, i) => (i % 2 === 0 ? p : spliced[(i - 1) / 2])).join("");
}

/** Stands for a table's hosts in the text (NUL and a per-process nonce: no config holds it). */
const NONCE = randomBytes(8).toString("hex");
const SPLICE = `\u0000kengine-hosts-${NONCE}-`;
/** The marker as JSON.stringify writes it (NUL as `\u0000`), its number captured. */
const SPLICED = new RegExp(`"\\\\u0000kengine-hosts-${NONCE}-(\\d+)"`);

const texts = new WeakMap<object, string>();

/** JSON.stringify(o), once per object. */
function textOf(o: object): string {
  let t = texts.get(o);
  if (t === undefined) texts.set(o, (t = JSON.stringify(o)));
  return t;
}

/** A table's `hosts` as JSON text, from its lists' texts. */
function hostsText(hosts: Obj): string {
  let t = texts.get(hosts);
  if (t === undefined) {
    const parts: string[] = [];
    for (const key of Object.keys(hosts)) {
      const list = hosts[key];
      if (list !== undefined)
        parts.push(
          `${JSON.stringify(key)}:${list !== null && typeof list === "object" ? textOf(list) : JSON.stringify(list)}`,
        );
    }
    texts.set(hosts, (t = `{${parts.join(",")}}`));
  }
  return t;
}

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
