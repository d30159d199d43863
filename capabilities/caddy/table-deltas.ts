/**
 * Route-table deltas: what a proxy runs in its tables after a `/load` or a delta, the deltas
 * that take it to a sealed config's tables (table-digests.ts), and their request bodies. No
 * I/O (proxies/fleet.ts sends them); deltas are kept per (running, desired) pair so that the
 * proxies of a Gateway share them.
 */
import { createHash } from "node:crypto";
import { ROUTE_TABLE_HANDLER } from "./route-table";
import { ConfigTables, TableDigest } from "./table-digests";

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

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
