/**
 * Sealing: a desired config checked for the management channel (management.ts `checkConfig`),
 * with the readiness server, the shutdown delay and Caddy's traffic metrics added, and named by
 * its hash. Only a sealed config is pushed (proxies/fleet.ts).
 *
 * The readiness server is a plain-HTTP listener answering `GET /ready` with 200. The bootstrap
 * config has no such listener, so a pod's readiness probe fails until the controller's first
 * config is loaded. The readiness server's `@id` names the hash of the config it came with, so
 * the controller can ask a proxy "do you run hash H?" with one tiny admin request
 * (GET /id/kengine-config-H → 200 or 404), e.g. after the proxy restarted.
 */
import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { ConfigText, configText } from "./config-text";
import { configTables, ConfigTables, tableExactHosts } from "./table-digests";
import {
  checkConfig,
  MANAGEMENT_SERVER,
  ManagementSpec,
  READINESS_SERVER,
  readinessServer,
} from "./management";
import { asObject } from "./list-json";
import { ROUTE_TABLE_HANDLER } from "./route-table";
import { err, ok, Result } from "../result";
import type { PlainConfig } from "./types";

/**
 * How sealing switches on Caddy's HTTP metrics, which the controller reads for its traffic
 * totals (reconcile/traffic.ts). A proxy capability (flavor/proxy-flavor.ts `appMetrics`):
 * - `"app"` (Caddy ≥ 2.10): `apps.http.metrics`. Host labels (`per_host`) only where Caddy can
 *   bound them: Caddy labels a host it finds in a top-level `host` matcher and folds every other
 *   host into `_other` (`observe_catchall_hosts` stays off), but it turns that guard off for
 *   every HTTPS request as soon as any server has TLS connection policies, and the management
 *   server always has. So a config with an HTTPS (or TLS-terminating) listener gets no host
 *   label at all; an HTTP-only one gets `per_host` plus a last route per server that names the
 *   server's exact hostnames (our host matchers sit inside subroutes, where Caddy does not look).
 *   Caddy finds hosts in any top-level route, but times (and counts) every route a request
 *   matches: last, after the terminal routes that serve requests, it costs a request nothing
 *   (docs/bench.md, "The request path on loopback").
 * - `"server"` (Caddy 2.8, Kengine): no app-level metrics; `metrics: {}` on each traffic server
 *   (2.8's only switch, without host labels).
 * Either way the series a proxy keeps are bounded by its configuration, never by the Host
 * headers clients send.
 */
export type TrafficMetricsMode = "app" | "server";

export interface SealOptions {
  readonly trafficMetrics: TrafficMetricsMode;
}

/** The default: what stock Caddy and our build accept. */
export const DEFAULT_SEAL_OPTIONS: SealOptions = { trafficMetrics: "app" };

/** `apps.http.metrics` of an HTTP-only config in mode "app": hosts of the config only. */
export const TRAFFIC_METRICS = { per_host: true } as const;

/** Servers of ours (management, readiness): not traffic. */
const INTERNAL_SERVERS: ReadonlySet<string> = new Set([MANAGEMENT_SERVER, READINESS_SERVER]);

/** Exact hostnames of every `host` matcher in `routes`, subroutes included (no wildcards, no placeholders). */
export function exactHosts(routes: unknown): string[] {
  const out = new Set<string>();
  const tables: (readonly string[])[] = [];
  const walk = (v: unknown, top = false): void => {
    if (Array.isArray(v)) {
      if (!top) v.forEach(x => walk(x));
      // A server's routes: each route without a table walked once per route object (a
      // render keeps the routes outside the table: backends, interned).
      else
        for (const r of v) {
          const hosts = plainRouteHosts(r);
          if (hosts) for (const h of hosts) out.add(h);
          else walk(r);
        }
      return;
    }
    const o = asObject(v);
    if (o === undefined) return;
    // A route table's exact keys are hosts too, and those of its lists (walked once per list
    // object: a render keeps unchanged lists).
    // (per table, derived from the last table of its id: table-digests.ts)
    const table = o.handler === ROUTE_TABLE_HANDLER ? asObject(o.hosts) : undefined;
    if (table) tables.push(tableExactHosts(String(o.id), table, listHosts));
    for (const set of Array.isArray(o.match) ? o.match : []) {
      const host = asObject(set)?.host;
      for (const h of Array.isArray(host) ? host : [])
        if (typeof h === "string" && h !== "" && !/[*{}]/.test(h)) out.add(h.toLowerCase());
    }
    for (const [k, x] of Object.entries(o)) if (!(table && k === "hosts")) walk(x);
  };
  walk(routes, true);
  // One table and no other host (the common server): its sorted hosts as they are.
  if (tables.length === 1 && out.size === 0) return [...tables[0]!];
  for (const t of tables) for (const h of t) out.add(h);
  return [...out].sort();
}

const hostsOfLists = new WeakMap<object, readonly string[]>();
/** `exactHosts` of one server route that holds no route table, once per route object. */
const routeHosts = new WeakMap<object, readonly string[]>();

/** `exactHosts` of a route that holds no route table (undefined: it holds one, or is no object). */
function plainRouteHosts(r: unknown): readonly string[] | undefined {
  const o = asObject(r);
  if (o === undefined) return undefined;
  let hosts = routeHosts.get(o);
  if (hosts === undefined && !hasTable(o)) routeHosts.set(o, (hosts = exactHosts(o)));
  return hosts;
}

/** Whether a route holds a route table anywhere (its hosts are derived per table). */
const hasTable = (v: unknown): boolean => {
  if (Array.isArray(v)) return v.some(hasTable);
  const o = asObject(v);
  if (o === undefined) return false;
  if (o.handler === ROUTE_TABLE_HANDLER) return true;
  for (const k in o) if (Object.hasOwn(o, k) && hasTable(o[k])) return true;
  return false;
};

/** `exactHosts` of one route list of a table, once per list object. */
function listHosts(list: object): readonly string[] {
  let hosts = hostsOfLists.get(list);
  if (!hosts) hostsOfLists.set(list, (hosts = exactHosts(list)));
  return hosts;
}

/**
 * `apps.http` with Caddy's HTTP metrics switched on as `mode` says (see TrafficMetricsMode). A
 * config that sets its own `apps.http.metrics` keeps it (mode "app").
 */
export function withTrafficMetrics(
  http: { readonly [key: string]: unknown },
  mode: TrafficMetricsMode,
): { readonly [key: string]: unknown } {
  const servers = asObject(http.servers) ?? {};
  const traffic = Object.entries(servers).filter(([name]) => !INTERNAL_SERVERS.has(name));
  if (mode === "server")
    return {
      ...http,
      servers: {
        ...servers,
        ...Object.fromEntries(
          traffic.map(([name, server]) => [
            name,
            { ...asObject(server), metrics: asObject(server)?.metrics ?? {} },
          ]),
        ),
      },
    };
  if (http.metrics !== undefined) return http;
  const https = traffic.some(([, server]) => {
    const policies = asObject(server)?.tls_connection_policies;
    return Array.isArray(policies) && policies.length > 0;
  });
  if (https) return { ...http, metrics: {} };
  const hoisted = traffic.flatMap(([name, server]) => {
    const routes = asObject(server)?.routes;
    const hosts = exactHosts(routes);
    if (hosts.length === 0) return [];
    // Handles nothing; reached only by a request no route before it ended.
    const known = { match: [{ host: hosts }] };
    return [
      [name, { ...asObject(server), routes: [...(Array.isArray(routes) ? routes : []), known] }],
    ];
  });
  return {
    ...http,
    metrics: TRAFFIC_METRICS,
    servers: { ...servers, ...Object.fromEntries(hoisted) },
  };
}

/*
 * No `shutdown_delay`: Caddy applies it whenever a listener closes, on a reload too (a config
 * that drops a port), and then the load request waits the whole delay while the old servers
 * still accept on the listeners they share with the new ones, so for that long part of the
 * traffic is served by the config being replaced and every later push waits behind it. A
 * deleted proxy keeps serving through its pod's preStop sleep instead (workload/pod.ts).
 */

/** A config that passed `sealConfig`: the only input the push engine accepts. */
export interface SealedConfig {
  /** sha256 (hex) of the desired config bytes as the translator produced them (and of the seal options, unless the default). */
  readonly hash: string;
  /** What is POSTed to /load: the desired config plus the readiness server. May hold private keys: never log. */
  readonly bytes: Buffer;
  /** `bytes.length`, known without making them (sealBuilt makes them when first read). */
  readonly size?: number;
  /** Its route tables (Bundled), by which a proxy can be taken to it with deltas (table-digests.ts, table-deltas.ts). */
  readonly tables?: ConfigTables;
}

const sealed = new WeakSet<SealedConfig>();

export const isSealed = (config: SealedConfig): boolean => sealed.has(config);

export const configHash = (bytes: Uint8Array | string): string =>
  createHash("sha256").update(bytes).digest("hex");

/**
 * Checks a desired config (JSON bytes) and adds the readiness server and the shutdown delay;
 * refuses configs that lose the management channel.
 */
export function sealConfig(
  desired: Uint8Array | string,
  spec: ManagementSpec,
  options: SealOptions = DEFAULT_SEAL_OPTIONS,
): Result<SealedConfig, readonly string[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(
      typeof desired === "string" ? desired : Buffer.from(desired).toString("utf8"),
    );
  } catch (e) {
    return err([
      `config is not JSON: ${e instanceof Error ? e.message.slice(0, 200) : "parse error"}`,
    ]);
  }
  const config = asObject(parsed);
  if (config === undefined) return err(["config must be a JSON object"]);
  return sealBuilt(config, desired, spec, options);
}

/**
 * `sealConfig` for a config the controller built itself: `config` is the plain data `desired`
 * was serialised from (JSON.stringify), so it is checked as is, without parsing the text back
 * (the same bytes: a JSON round trip of plain data changes nothing JSON.stringify writes).
 */
export function sealBuilt(
  config: PlainConfig,
  desired: Uint8Array | string | ConfigText,
  spec: ManagementSpec,
  options: SealOptions = DEFAULT_SEAL_OPTIONS,
): Result<SealedConfig, readonly string[]> {
  const checked = checkConfig(config, spec, "absent");
  if (!checked.ok) return checked;
  // The hash names what the proxy runs: the desired bytes, plus the seal options unless they
  // are the default (the same desired config sealed for Caddy 2.8 is another config).
  const digest = createHash("sha256");
  if (typeof desired === "object" && "update" in desired) desired.update(digest);
  else digest.update(desired);
  if (!isDeepStrictEqual(options, DEFAULT_SEAL_OPTIONS))
    digest.update(`\n${JSON.stringify(options)}`);
  const hash = digest.digest("hex");
  const apps = asObject(config.apps)!;
  const http = withTrafficMetrics(asObject(apps.http)!, options.trafficMetrics);
  const withReadiness = {
    ...config,
    apps: {
      ...apps,
      http: {
        ...http,
        servers: { ...asObject(http.servers), [READINESS_SERVER]: readinessServer(spec, hash) },
      },
    },
  };
  const tables = configTables(withReadiness, READINESS_SERVER);
  // The bytes are made when first read (a `/load`, the last-good Secret): a proxy taken to
  // this config by route-table deltas never needs them.
  const text = configText(withReadiness);
  let bytes: Buffer | undefined;
  const result: SealedConfig = Object.freeze({
    hash,
    get bytes(): Buffer {
      return (bytes ??= Buffer.from(text.text(), "utf8"));
    },
    size: text.bytes,
    ...(tables && { tables }),
  });
  sealed.add(result);
  return ok(result);
}
