/**
 * The proxy's management channel in Caddy JSON (docs/operations.md §7): an `apps.http` server on the
 * pod IP that requires a client certificate from the controller CA and forwards to the
 * admin endpoint, a unix socket. Every config a proxy runs carries it — the bootstrap config,
 * and each pushed config, which `sealConfig` checks before anything can be pushed. No config
 * that passes these checks serves the admin API on TCP: loopback is reachable by anything the
 * proxy itself dials (an upstream a tenant names `localhost`), so only the management server
 * may reach the admin, and it requires the controller's client certificate.
 *
 * Sealing also adds the readiness server: a plain-HTTP listener answering `GET /ready` with
 * 200. The bootstrap config has no such listener, so a pod's readiness probe fails until the
 * controller's first config is loaded. The readiness server's `@id` names the hash of the
 * config it came with, so the controller can ask a proxy "do you run hash H?" with one tiny
 * admin request (GET /id/kengine-config-H → 200 or 404), e.g. after the proxy restarted.
 */
import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { pemToBase64Der } from "../pki/pki";
import {
  ConfigTables,
  ConfigText,
  configTables,
  configText,
  tableExactHosts,
} from "./route-tables";
import { err, ok, Result } from "../result";
import { SecretPem } from "../pki/secret";
import type { PlainConfig } from "../caddy/types";

export const MANAGEMENT_SERVER = "kengine-management";
export const READINESS_SERVER = "kengine-readiness";
export const READINESS_PATH = "/ready";
export const CONFIG_ID_PREFIX = "kengine-config-";
export const DEFAULT_CERT_TAG = "kengine-management";
/**
 * How sealing switches on Caddy's HTTP metrics, which the controller reads for its traffic
 * totals (reconcile/traffic.ts). A proxy capability (flavor/proxy-flavor.ts `appMetrics`):
 * - `"app"` (Caddy ≥ 2.10): `apps.http.metrics`. Host labels (`per_host`) only where Caddy can
 *   bound them: Caddy labels a host it finds in a top-level `host` matcher and folds every other
 *   host into `_other` (`observe_catchall_hosts` stays off), but it turns that guard off for
 *   every HTTPS request as soon as any server has TLS connection policies, and the management
 *   server always has. So a config with an HTTPS (or TLS-terminating) listener gets no host
 *   label at all; an HTTP-only one gets `per_host` plus a first route per server that names the
 *   server's exact hostnames (our host matchers sit inside subroutes, where Caddy does not look).
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

/** Where the proxy finds its serving certificate: files mounted from a Secret (preferred), or PEM inline. */
export type ServerCertificateSource =
  | { readonly kind: "files"; readonly certificateFile: string; readonly keyFile: string }
  | { readonly kind: "pem"; readonly certificatePem: string; readonly privateKey: SecretPem };

export interface ManagementSpec {
  /** Management listener, e.g. "{env.KENGINE_POD_IP}:9443" (same bytes for every pod) or "10.0.0.7:9443". */
  readonly listenAddress: string;
  /**
   * Caddy's admin endpoint: a unix socket as a Caddy network address, `unix/` and an absolute
   * path (e.g. "unix//tmp/kengine-admin.sock"), or `unix/{env.NAME}` when processes that share
   * a file system (tests on one host) each get their own path from the environment. Never TCP.
   */
  readonly adminAddress: string;
  /** Tag the serving certificate is loaded with and selected by. */
  readonly serverCertTag: string;
  /**
   * The controller CA; only certificates it signed may use the management listener. Several
   * during a CA rotation (old and new both trusted until every proxy and the controller moved).
   */
  readonly clientCaPem: string | readonly string[];
  readonly serverCertificate: ServerCertificateSource;
  /** Readiness listener added to pushed configs, e.g. ":8081"; absent from the bootstrap config. */
  readonly readinessAddress: string;
}

/** Caddy's network-address prefix of a unix stream socket (`unix//abs/path`). */
const UNIX_PREFIX = "unix/";
/** A listener address on one of Caddy's unix socket networks (unix, unixgram, unixpacket). */
const UNIX_NETWORK = /^\s*unix(gram|packet)?\//i;
/** Bytes of a socket path the kernel accepts (sun_path is 108 bytes with the terminating NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;
/** The whole path from the environment; Caddy refuses to start when the variable is unset or empty. */
const ENV_PLACEHOLDER = /^\{env\.[A-Za-z_][A-Za-z0-9_]*\}$/;

/**
 * Why `address` cannot be the admin endpoint, or undefined when it can: a unix stream socket
 * at an absolute path (or one placeholder for the whole path), with Caddy's default mode (0200:
 * only the proxy's user may connect), so no `|mode` suffix; no abstract socket (`@name`, which
 * anything in the pod's network namespace may connect to) and no placeholder within the path.
 */
export function adminAddressProblem(address: unknown): string | undefined {
  const shown = JSON.stringify(address);
  if (typeof address !== "string" || !address.startsWith(UNIX_PREFIX))
    return `must be a unix socket ("unix//path"), never a TCP address: got ${shown}`;
  const path = address.slice(UNIX_PREFIX.length);
  if (ENV_PLACEHOLDER.test(path)) return undefined;
  if (!path.startsWith("/") || /[|{}\s\0]/.test(path))
    return `must be "unix/" and an absolute socket path with no permission suffix, placeholder or space: got ${shown}`;
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES)
    return `socket path is longer than ${MAX_SOCKET_PATH_BYTES} bytes: got ${shown}`;
  return undefined;
}

/**
 * The Host header the management server sends to the admin socket. Caddy 2.8's admin on a unix
 * socket accepts only "", "127.0.0.1" and "::1" (its DNS-rebinding guard); Caddy ≥ 2.10 checks no
 * Host on unix sockets. The client's own Host (the pod's DNS name) would be refused by 2.8.
 */
export const ADMIN_SOCKET_HOST = "127.0.0.1";
/** A port number, or an environment placeholder Caddy resolves at load (so every pod gets the same bytes). */
const PORT = /^(\d{1,5}|\{env\.[A-Za-z_][A-Za-z0-9_]*\})$/;

const caList = (pems: string | readonly string[]): readonly string[] =>
  typeof pems === "string" ? [pems] : pems;

/** "host:port" split at the last colon; the port may be a placeholder or a range. */
const splitAddress = (address: string): { host: string; port: string } => {
  const i = address.lastIndexOf(":");
  return i < 0
    ? { host: address, port: "" }
    : { host: address.slice(0, i), port: address.slice(i + 1) };
};

/** Problems with the spec itself; a bad spec must not produce configs. */
export function checkSpec(spec: ManagementSpec): readonly string[] {
  const problems: string[] = [];
  const admin = adminAddressProblem(spec.adminAddress);
  if (admin !== undefined) problems.push(`adminAddress ${admin}`);
  for (const [field, value] of [
    ["listenAddress", spec.listenAddress],
    ["readinessAddress", spec.readinessAddress],
  ] as const) {
    if (!PORT.test(splitAddress(value).port))
      problems.push(`${field} needs a port (number or {env.NAME}), got ${JSON.stringify(value)}`);
  }
  const ports = [splitAddress(spec.listenAddress).port, splitAddress(spec.readinessAddress).port];
  if (new Set(ports).size !== ports.length)
    problems.push(`management and readiness ports must differ, got ${ports.join(", ")}`);
  if (spec.serverCertTag.trim() === "") problems.push("serverCertTag must not be empty");
  const cas = caList(spec.clientCaPem);
  if (cas.length === 0 || cas.some(pem => !pemToBase64Der(pem).ok))
    problems.push("clientCaPem must be one or more PEM certificates");
  return problems;
}

/** The admin block every config carries: on the unix socket only, never autosaved (the config holds private keys). */
export const adminBlock = (spec: ManagementSpec): PlainConfig => ({
  listen: spec.adminAddress,
  config: { persist: false },
});

/** The `apps.http.servers["kengine-management"]` fragment. Throws only on a spec `checkSpec` rejects. */
export function managementServer(
  spec: Pick<ManagementSpec, "listenAddress" | "adminAddress" | "serverCertTag" | "clientCaPem">,
): PlainConfig {
  const cas = caList(spec.clientCaPem).map(pemToBase64Der);
  const trusted = cas.flatMap(ca => (ca.ok ? [ca.value] : []));
  if (trusted.length === 0 || trusted.length !== cas.length)
    throw new Error("managementServer: clientCaPem must be one or more PEM certificates");
  return {
    listen: [spec.listenAddress],
    protocols: ["h1", "h2"],
    automatic_https: { disable: true },
    tls_connection_policies: [
      {
        certificate_selection: { any_tag: [spec.serverCertTag] },
        client_authentication: {
          // The `inline` CA pool module, not the field `trusted_ca_certs` beside `mode`: Caddy 2.8
          // builds no pool from that field (its handshakes fail with "unknown ca").
          ca: { provider: "inline", trusted_ca_certs: trusted },
          mode: "require_and_verify",
        },
      },
    ],
    routes: [
      {
        handle: [
          {
            handler: "reverse_proxy",
            upstreams: [{ dial: spec.adminAddress }],
            headers: { request: { set: { Host: [ADMIN_SOCKET_HOST] } } },
          },
        ],
      },
    ],
  };
}

/** The `apps.tls.certificates` loader entry for the serving certificate. */
export function managementCertificateLoader(
  spec: Pick<ManagementSpec, "serverCertTag" | "serverCertificate">,
): { readonly key: "load_files" | "load_pem"; readonly entry: PlainConfig } {
  const source = spec.serverCertificate;
  return source.kind === "files"
    ? {
        key: "load_files",
        entry: {
          certificate: source.certificateFile,
          key: source.keyFile,
          tags: [spec.serverCertTag],
        },
      }
    : {
        key: "load_pem",
        entry: {
          certificate: source.certificatePem,
          key: source.privateKey.reveal(),
          tags: [spec.serverCertTag],
        },
      };
}

/** The readiness server a pushed config adds; its `@id` carries the config's hash. */
export function readinessServer(
  spec: Pick<ManagementSpec, "readinessAddress">,
  configHash: string,
): PlainConfig {
  return {
    "@id": `${CONFIG_ID_PREFIX}${configHash}`,
    listen: [spec.readinessAddress],
    protocols: ["h1"],
    automatic_https: { disable: true },
    routes: [
      {
        match: [{ path: [READINESS_PATH] }],
        handle: [{ handler: "static_response", status_code: 200, body: "ready\n" }],
      },
      { handle: [{ handler: "static_response", status_code: 404 }] },
    ],
  };
}

const asObject = (v: unknown): { readonly [key: string]: unknown } | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v)
    ? (v as { [key: string]: unknown })
    : undefined;

/** Adds admin block, certificate loader and management server to a config; refuses to overwrite anything. */
export function withManagement(
  config: PlainConfig,
  spec: ManagementSpec,
): Result<PlainConfig, readonly string[]> {
  const specProblems = checkSpec(spec);
  if (specProblems.length > 0) return err(specProblems);
  const out = structuredClone(config) as { [key: string]: unknown };
  const problems: string[] = [];
  if (out.admin !== undefined && !isDeepStrictEqual(out.admin, adminBlock(spec)))
    problems.push("config already has a different admin block");
  out.admin = adminBlock(spec);
  const apps = (out.apps = { ...(asObject(out.apps) ?? {}) });
  const http = (apps.http = { ...(asObject(apps.http) ?? {}) }) as { [key: string]: unknown };
  const servers = (http.servers = { ...(asObject(http.servers) ?? {}) }) as {
    [key: string]: unknown;
  };
  if (servers[MANAGEMENT_SERVER] !== undefined)
    problems.push(`config already has a server named ${MANAGEMENT_SERVER}`);
  servers[MANAGEMENT_SERVER] = managementServer(spec);
  const tls = (apps.tls = { ...(asObject(apps.tls) ?? {}) }) as { [key: string]: unknown };
  const certificates = (tls.certificates = { ...(asObject(tls.certificates) ?? {}) }) as {
    [key: string]: unknown;
  };
  const loader = managementCertificateLoader(spec);
  const existing = certificates[loader.key];
  certificates[loader.key] = [...(Array.isArray(existing) ? existing : []), loader.entry];
  if (problems.length > 0) return err(problems);
  const checked = checkConfig(out, spec);
  return checked.ok ? ok(out) : checked;
}

/** The config a proxy pod starts from: admin on the unix socket, the management listener, nothing else. */
export function bootstrapConfig(spec: ManagementSpec): Result<PlainConfig, readonly string[]> {
  return withManagement({}, spec);
}

const listenersOf = (
  config: PlainConfig,
): { readonly owner: string; readonly address: string }[] => {
  const apps = asObject(config.apps) ?? {};
  const out: { owner: string; address: string }[] = [];
  for (const app of ["http", "layer4"]) {
    const servers = asObject(asObject(apps[app])?.servers) ?? {};
    for (const [name, server] of Object.entries(servers)) {
      const listen = asObject(server)?.listen;
      for (const address of Array.isArray(listen) ? listen : [])
        if (typeof address === "string") out.push({ owner: `${app}/${name}`, address });
    }
  }
  return out;
};

/**
 * Everything a config must keep for the controller to stay in charge of the proxy. Collects
 * all problems. `readiness: "absent"` for input to `sealConfig`, `"any"` to check a sealed one.
 */
export function checkConfig(
  config: PlainConfig,
  spec: ManagementSpec,
  readiness: "absent" | "any" = "absent",
): Result<PlainConfig, readonly string[]> {
  const problems: string[] = [...checkSpec(spec)];
  const admin = asObject(config.admin);
  if (admin === undefined) problems.push("admin block is missing");
  else {
    if (admin.disabled === true) problems.push("admin must not be disabled");
    // absent or empty, Caddy listens on its default, localhost:2019
    const listen = adminAddressProblem(admin.listen);
    if (listen !== undefined) problems.push(`admin.listen ${listen}`);
    else if (admin.listen !== spec.adminAddress)
      problems.push(
        `admin.listen must be ${spec.adminAddress}, got ${JSON.stringify(admin.listen)}`,
      );
    if (asObject(admin.config)?.persist !== false)
      problems.push(
        "admin.config.persist must be false (Caddy would autosave private keys to disk)",
      );
    if (asObject(admin.config)?.load !== undefined)
      problems.push(
        "admin.config.load is not allowed (a config loader could replace the management server)",
      );
    if (admin.remote !== undefined)
      problems.push(
        "admin.remote is not allowed (only the management server exposes the admin API)",
      );
  }
  const apps = asObject(config.apps) ?? {};
  const servers = asObject(asObject(apps.http)?.servers) ?? {};
  const management = servers[MANAGEMENT_SERVER];
  if (management === undefined) problems.push(`apps.http.servers.${MANAGEMENT_SERVER} is missing`);
  else if (problems.length === 0 && !isDeepStrictEqual(management, managementServer(spec)))
    problems.push(
      `apps.http.servers.${MANAGEMENT_SERVER} differs from the management server for this proxy`,
    );
  if (readiness === "absent" && servers[READINESS_SERVER] !== undefined)
    problems.push(`apps.http.servers.${READINESS_SERVER} is reserved (sealing adds it)`);
  const loader = managementCertificateLoader(spec);
  const loaded = asObject(asObject(apps.tls)?.certificates)?.[loader.key];
  if (!Array.isArray(loaded) || !loaded.some(e => isDeepStrictEqual(e, loader.entry)))
    problems.push(
      `apps.tls.certificates.${loader.key} lacks the management certificate tagged ${spec.serverCertTag}`,
    );
  const reservedPorts = new Map([
    [splitAddress(spec.listenAddress).port, MANAGEMENT_SERVER],
    [splitAddress(spec.readinessAddress).port, READINESS_SERVER],
  ]);
  for (const { owner, address } of listenersOf(config)) {
    if (UNIX_NETWORK.test(address)) {
      problems.push(`${owner} listens on ${address}: only the admin API uses a unix socket`);
      continue;
    }
    const reservedBy = reservedPorts.get(splitAddress(address).port);
    if (reservedBy !== undefined && owner !== `http/${reservedBy}`)
      problems.push(`${owner} listens on ${address}, a port reserved for ${reservedBy}`);
  }
  return problems.length === 0 ? ok(config) : err(problems);
}

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
    // (per table, derived from the last table of its id: route-tables.ts)
    const table = o.handler === "kengine_route_table" ? asObject(o.hosts) : undefined;
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
  if (o.handler === "kengine_route_table") return true;
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
    // Matches, handles nothing, never terminal: the request goes on to the routes that follow.
    const known = { match: [{ host: hosts }] };
    return [
      [name, { ...asObject(server), routes: [known, ...(Array.isArray(routes) ? routes : [])] }],
    ];
  });
  return {
    ...http,
    metrics: TRAFFIC_METRICS,
    servers: { ...servers, ...Object.fromEntries(hoisted) },
  };
}

/**
 * How long a proxy keeps serving after it is told to stop (pod deletion: SIGTERM) before it
 * closes its listeners: the pod has turned not-ready by then and load balancers have stopped
 * sending it new connections. Caddy applies it only to listeners that close, never on a reload
 * (a listener the new config keeps). Well below the pod's terminationGracePeriodSeconds (30).
 */
export const SHUTDOWN_DELAY = "5s";

/** A config that passed `sealConfig`: the only input the push engine accepts. */
export interface SealedConfig {
  /** sha256 (hex) of the desired config bytes as the translator produced them (and of the seal options, unless the default). */
  readonly hash: string;
  /** What is POSTed to /load: the desired config plus the readiness server. May hold private keys: never log. */
  readonly bytes: Buffer;
  /** `bytes.length`, known without making them (sealBuilt makes them when first read). */
  readonly size?: number;
  /** Its route tables (Bundled), by which a proxy can be taken to it with deltas (route-tables.ts). */
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
        shutdown_delay: SHUTDOWN_DELAY,
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
