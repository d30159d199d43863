/**
 * GatewayIR → Caddy JSON. One Caddy HTTP server per HTTP(S) port: a route per listener
 * (most specific hostname first, each ending in 404 so listeners stay isolated), holding the
 * listener's entries in precedence order. Layer-4 servers (caddy-l4) for TLS passthrough,
 * TCP and UDP. The admin endpoint is a unix socket and never persists config, and the
 * management server is kept.
 */
import {
  ActionIR,
  BackendIR,
  CertificateIR,
  CorsIR,
  EndpointIR,
  GatewayIR,
  HTTPListenerIR,
  HTTPRouteEntryIR,
  HTTPServerIR,
  HeaderOpsIR,
  L4BackendIR,
  L4ServerIR,
  EgressGuardIR,
  MirrorIR,
  PathModifierIR,
  RedirectIR,
  RewriteIR,
  TracingIR,
} from "../ir";
import { DEFAULT_PROXY_FLAVOR, ProxyCapabilities, capabilitiesOf } from "../flavor/proxy-flavor";
import type { RefusableObject } from "../ir";
import { MAX_L4_WEIGHT_RATIO } from "../validation/l4route";
import { listenerFiltersRoute } from "./listener-filters";
import { tracingRoute } from "./tracing";
import { escapePlaceholders, unescapePlaceholders } from "./placeholders";
import { quoteRE2 } from "../validation/regex";
import { requestDeadline } from "./deadline";
import { DEFAULT_LIMITS } from "../validation/limits";
import { sessionPolicy } from "./session";
import {
  CaddyConfig,
  CaddyEgressGuard,
  CaddyHTTPServer,
  CaddyHandler,
  CaddyHeaderOps,
  CaddyL4Handler,
  CaddyL4Server,
  CaddyL4Upstream,
  CaddyMatcherSet,
  CaddyRoute,
  CaddySNIMatch,
  CaddySelectionPolicy,
  CaddyTLSConnectionPolicy,
  JsonObject,
  DEFAULT_ADMIN_LISTEN,
  MANAGEMENT_SERVER_NAME,
  ManagementServerConfig,
} from "./types";
import {
  ROUTE_TABLE_HANDLER,
  contentDispatchId,
  countTable,
  routeTableDelta,
  routeTableRoute,
  tableId,
} from "./route-table";
import {
  DispatchUse,
  EntryFragment,
  TableMemo,
  derivedOf,
  fragmentOf,
  fragmentOfRoute,
  groupedRoute,
  keepFragment,
  tableMemo,
} from "./render-memo";
import { MergeRules, listenerState } from "./listener-memo";

export interface CaddyOptions {
  /** The management server fragment and admin address (proxy fleet, docs/operations.md §7). */
  readonly management?: ManagementServerConfig;
  /** Host part of every listener address; default: all interfaces. */
  readonly bindHost?: string;
  /** Added to every listener port (tests run unprivileged on high ports). */
  readonly portOffset?: number;
  /**
   * Loopback address of the internal server that answers 500 for the traffic share of
   * backendRefs that do not resolve (only emitted when a rule mixes valid and invalid
   * backends); default `127.0.0.1:10500`.
   */
  readonly errorResponderListen?: string;
  /**
   * How a matched route reaches its backends. "shared" (default): matching routes only set
   * the variable `kengine_backend` (and run their filters); one reverse_proxy per distinct
   * backend set and server, selected by that variable, does the proxying, so Caddy provisions
   * each backend once instead of once per rule match. "per-route": every route carries its
   * own reverse_proxy (the naive layout; benchmarks compare the two).
   */
  readonly dispatch?: "shared" | "per-route";
  /**
   * Route tables (route-table.ts) where the flavour has them (default); false: the linear
   * shape on every flavour (tests and benchmarks compare the two).
   */
  readonly routeTable?: boolean;
  /**
   * Keep rendered pieces from build to build and reuse them (render-memo.ts; default true).
   * The bytes are the same either way; false renders from scratch (tests compare the two).
   */
  readonly memo?: boolean;
}

export const ERROR_SERVER_NAME = "kengine-internal-500";
const DEFAULT_ERROR_LISTEN = "127.0.0.1:10500";
const REGEX_NAME = "kengine_path";

/** Builds the Caddy config for the Gateways a proxy serves (usually one). */
export function toCaddyConfig(
  irs: GatewayIR | readonly GatewayIR[],
  opts: CaddyOptions = {},
): CaddyConfig {
  return render(irs, opts, undefined);
}

/** The object (route, ListenerSet, Gateway listener) that produced a part of the config. */
export type SourceObject = Omit<RefusableObject, "fingerprint">;

/**
 * Which objects produced each part of a config that Caddy names in its provisioning errors,
 * by location (a JSON pointer without the leading `/apps`, e.g.
 * `/http/servers/http-80/routes/0/handle/0/routes/2`): HTTP server routes and the routes of
 * their subroutes, TLS connection policies, `load_pem` entries, layer-4 routes. A location
 * inside an owned part belongs to the nearest owned part above it (reconcile/error-path.ts).
 * Several objects own a part they share (routes merged by hostname, a shared backend).
 */
export type CaddySourceMap = ReadonlyMap<string, readonly SourceObject[]>;

/**
 * The source map of `toCaddyConfig(irs, opts)`: the same rendering, recording who made what
 * (recomputed from the same IR and options, so the config itself carries nothing extra).
 */
export function caddySourceMap(
  irs: GatewayIR | readonly GatewayIR[],
  opts: CaddyOptions = {},
): CaddySourceMap {
  const owners: Owners = new WeakMap();
  const config = render(irs, opts, owners);
  const out = new Map<string, readonly SourceObject[]>();
  const note = (at: string, o: object): void => {
    const by = owners.get(o);
    if (by && by.length > 0) out.set(at, by);
  };
  const walkRoutes = (at: string, routes: readonly CaddyRoute[] | undefined): void =>
    routes?.forEach((r, i) => {
      note(`${at}/${i}`, r);
      r.handle.forEach((h, p) => {
        if (h.handler === "subroute") walkRoutes(`${at}/${i}/handle/${p}/routes`, h.routes);
        if (h.handler === "kengine_route_table")
          for (const [key, list] of Object.entries(h.hosts)) {
            note(`${at}/${i}/handle/${p}/hosts/${key}`, list);
            walkRoutes(`${at}/${i}/handle/${p}/hosts/${key}`, list);
          }
      });
    });
  const apps = config.apps as {
    http?: { servers: Record<string, Partial<CaddyHTTPServer>> };
    tls?: { certificates: { load_pem?: readonly object[] } };
    layer4?: { servers: Record<string, CaddyL4Server> };
  };
  for (const [name, server] of Object.entries(apps.http?.servers ?? {})) {
    walkRoutes(`/http/servers/${name}/routes`, server.routes);
    server.tls_connection_policies?.forEach((p, i) =>
      note(`/http/servers/${name}/tls_connection_policies/${i}`, p),
    );
  }
  apps.tls?.certificates.load_pem?.forEach((p, i) => note(`/tls/certificates/load_pem/${i}`, p));
  for (const [name, server] of Object.entries(apps.layer4?.servers ?? {}))
    server.routes.forEach((r, i) => note(`/layer4/servers/${name}/routes/${i}`, r));
  return out;
}

type Owners = WeakMap<object, readonly SourceObject[]>;

/** `o`, recorded as made by `by` (when a source map is being built). */
function own<T extends object>(ctx: Ctx, o: T, by: readonly SourceObject[]): T {
  ctx.owners?.set(o, by);
  return o;
}

const ownersOf = (ctx: Ctx, o: object): readonly SourceObject[] => ctx.owners?.get(o) ?? [];

/** Adds `more` to `owners`, each object once. */
function addOwners(owners: SourceObject[], more: readonly SourceObject[]): void {
  for (const m of more)
    if (
      !owners.some(
        o =>
          o.kind === m.kind &&
          o.namespace === m.namespace &&
          o.name === m.name &&
          o.listener === m.listener,
      )
    )
      owners.push(m);
}

/** The object a listener id (translate/listeners.ts) names: a ListenerSet or a Gateway listener. */
export function listenerSource(id: string): SourceObject {
  const set = id.startsWith("ListenerSet:");
  const [namespace = "", name = "", listener = ""] = (set ? id.slice(12) : id).split("/");
  return set
    ? { kind: "ListenerSet", namespace, name }
    : { kind: "Listener", namespace, name, listener };
}

function render(
  irs: GatewayIR | readonly GatewayIR[],
  opts: CaddyOptions,
  owners: Owners | undefined,
): CaddyConfig {
  const list = (Array.isArray(irs) ? irs : [irs]) as readonly GatewayIR[];
  const ctx: Ctx = {
    opts,
    needsErrorServer: false,
    caps: capabilitiesOf(DEFAULT_PROXY_FLAVOR),
    ...(owners && { owners }),
  };
  const servers: Record<string, CaddyHTTPServer | JsonObject> = {};
  const l4: Record<string, CaddyL4Server> = {};
  const pems: { certificate: string; key: string; tags: string[] }[] = [];
  const seenCert = new Set<string>();
  // A certificate's entry belongs to the HTTPS listeners that serve it.
  const certUsers = new Map<string, Map<string, SourceObject>>();
  for (const ir of owners ? list : [])
    for (const s of ir.httpServers)
      for (const l of s.listeners)
        for (const id of l.certificateIds) {
          const users = certUsers.get(id) ?? new Map<string, SourceObject>();
          users.set(l.id, listenerSource(l.id));
          certUsers.set(id, users);
        }
  for (const ir of list) {
    ctx.ir = ir;
    ctx.caps = capabilitiesOf(ir.flavor ?? DEFAULT_PROXY_FLAVOR);
    ctx.clientCertificate = ir.backendClientCertificate;
    ctx.tracing = ir.tracing;
    for (const s of ir.httpServers) {
      const name = serverName(s.protocol, s.port, list.length > 1 ? ir : undefined);
      ctx.tableId = tableId(ir.namespace, ir.name, serverName(s.protocol, s.port));
      servers[name] = httpServer(ctx, s);
    }
    for (const s of ir.l4Servers)
      l4[serverName(s.protocol, s.port, list.length > 1 ? ir : undefined)] = l4Server(ctx, s);
    for (const c of ir.certificates) {
      if (seenCert.has(c.id)) continue;
      seenCert.add(c.id);
      pems.push(
        own(ctx, { certificate: c.certificatePem, key: c.keyPem, tags: [c.id] }, [
          ...(certUsers.get(c.id)?.values() ?? []),
        ]),
      );
    }
  }
  if (ctx.needsErrorServer) {
    servers[ERROR_SERVER_NAME] = {
      listen: [opts.errorResponderListen ?? DEFAULT_ERROR_LISTEN],
      routes: [{ handle: [{ handler: "static_response", status_code: 500 }] }],
      automatic_https: { disable: true },
      protocols: ["h1"],
    };
  }
  const mgmt = opts.management;
  if (mgmt?.server) servers[MANAGEMENT_SERVER_NAME] = mgmt.server;
  const loadPem = [...pems, ...(mgmt?.loadPem ?? [])];
  const loadFiles = [...(mgmt?.loadFiles ?? [])];
  return {
    admin: { listen: mgmt?.adminListen ?? DEFAULT_ADMIN_LISTEN, config: { persist: false } },
    apps: {
      ...(Object.keys(servers).length > 0 && { http: { servers } }),
      ...((loadPem.length > 0 || loadFiles.length > 0) && {
        tls: {
          certificates: {
            ...(loadPem.length > 0 && { load_pem: loadPem }),
            ...(loadFiles.length > 0 && { load_files: loadFiles }),
          },
        },
      }),
      ...(Object.keys(l4).length > 0 && { layer4: { servers: l4 } }),
    },
  };
}

interface Ctx {
  readonly opts: CaddyOptions;
  needsErrorServer: boolean;
  /** What the proxies of the Gateway being built can run (its flavour). */
  caps: ProxyCapabilities;
  /** The client certificate the Gateway being built presents to TLS backends. */
  clientCertificate?: CertificateIR;
  /** Shared dispatch of the server being built: reverse_proxy JSON → its route. */
  dispatch?: Map<string, DispatchEntry>;
  /** Building a source map (caddySourceMap): who made each part. */
  readonly owners?: Owners;
  /** The route whose entry is being built (owns the dispatch route it uses). */
  entryOwner?: SourceObject;
  /** The route table id of the HTTP server being built (proxies with `routeTable`). */
  tableId?: string;
  /** The Gateway being built. */
  ir?: GatewayIR;
  /** The route table being built keeps its pieces across builds (not for source maps). */
  memo?: TableMemo;
  /** Rendering one entry for its fragment: the backend sets it names. */
  uses?: DispatchUse[];
  /** XTelemetryPolicy tracing of the Gateway being built. */
  tracing?: TracingIR;
}

const tablesOn = (ctx: Ctx): boolean => ctx.caps.routeTable && ctx.opts.routeTable !== false;

interface DispatchEntry {
  readonly id: string;
  readonly handler: CaddyHandler;
  /** The routes that use it. */
  readonly owners: SourceObject[];
}

/** The variable a matched route sets to name its backend set (shared dispatch). */
export const BACKEND_VAR = "kengine_backend";
const LISTENERS_GROUP = "listeners";

function serverName(protocol: string, port: number, ir?: GatewayIR): string {
  const base = `${protocol.toLowerCase()}-${port}`;
  return ir ? `${ir.namespace}/${ir.name}/${base}` : base;
}

const listenAddress = (ctx: Ctx, port: number, network = ""): string =>
  `${network}${ctx.opts.bindHost ?? ""}:${port + (ctx.opts.portOffset ?? 0)}`;

/**
 * Networks of our listener module (proxy/listener): one socket per address kept across
 * config reloads, so a reload drops no connection. `kengine-http` also hands a connection an
 * old config's HTTP server dropped unanswered to the new one; `kengine-tcp` is for caddy-l4.
 */
export const PERSISTENT_HTTP_NETWORK = "kengine-http";
export const PERSISTENT_TCP_NETWORK = "kengine-tcp";

/* ------------------------------------------------------------------ HTTP */

function httpServer(ctx: Ctx, s: HTTPServerIR): CaddyHTTPServer {
  ctx.dispatch = ctx.opts.dispatch === "per-route" ? undefined : new Map();
  const table = tablesOn(ctx) && ctx.tableId !== undefined;
  ctx.memo =
    table && !ctx.owners && ctx.ir && ctx.opts.memo !== false
      ? tableMemo(ctx.ir, ctx.tableId!)
      : undefined;
  const routes: CaddyRoute[] = table
    ? [tableRoute(ctx, s, ctx.tableId!)]
    : s.listeners.map((l, i) => listenerRoute(ctx, s, l, i));
  if (table) {
    // Only the backends the table names: a route whose hostname an earlier listener of the
    // port takes has no key (route-table.ts), and its backends would be proxies nobody reaches.
    if (ctx.dispatch)
      routes.push(...dispatchRoutes(ctx, ctx.dispatch, tableBackendIds(ctx, routes[0])));
    ctx.memo?.finish();
    ctx.memo = undefined;
  } else if (!s.listeners.some(l => l.hostname === undefined)) routes.push(notFound());
  if (ctx.dispatch && !table) {
    // Listeners (and the final 404) form one group: the first match wins and the request
    // then falls through to the dispatch routes, unless a route already answered.
    const grouped = routes.map(r => own(ctx, inGroup(r, LISTENERS_GROUP), ownersOf(ctx, r)));
    routes.splice(0, routes.length, ...grouped, ...dispatchRoutes(ctx, ctx.dispatch));
  }
  // Tracing first: its handler wraps every route after it (telemetry.ts).
  if (ctx.tracing) routes.unshift(tracingRoute(ctx.tracing));
  const tls = s.protocol === "HTTPS";
  return {
    listen: [
      listenAddress(ctx, s.port, ctx.caps.persistentListeners ? `${PERSISTENT_HTTP_NETWORK}/` : ""),
    ],
    routes,
    automatic_https: { disable: true },
    ...serverTimeouts(ctx),
    protocols: tls ? ["h1", "h2"] : ["h1", "h2c"],
    ...(tls && { tls_connection_policies: connectionPolicies(ctx, s) }),
    // Caddy turns strict_sni_host on by itself once a policy checks client certificates (so
    // that a Host outside the policy that authenticated cannot be reached). Every policy of
    // this server checks them alike (per port), so it would only refuse requests the
    // listeners serve without client validation (a Host other than the SNI under a wildcard
    // or hostname-less listener; misdirected ones get 421 from the listener routes).
    ...(tls && s.clientValidation && { strict_sni_host: false }),
  };
}

/**
 * The class's request limits (KengineParameters spec.limits, validation/limits.ts) on a listener
 * server: headers within requestHeaderTimeout, idle keep-alive connections closed after
 * idleTimeout, and, where the proxy has `read_idle_timeout`, a body read that stalls longer
 * than requestBodyTimeout aborted. Caddy's `read_timeout` is left unset on every flavour: it is
 * one deadline on the whole request read, so it would cut every upload and client stream (gRPC,
 * WebSockets over HTTP/2) that lasts longer, however fast it moves.
 */
function serverTimeouts(
  ctx: Ctx,
): Pick<CaddyHTTPServer, "read_header_timeout" | "read_idle_timeout" | "idle_timeout"> {
  const l = ctx.ir?.limits ?? DEFAULT_LIMITS;
  return {
    read_header_timeout: l.requestHeaderTimeout,
    ...(ctx.caps.readIdleTimeout && { read_idle_timeout: l.requestBodyTimeout }),
    idle_timeout: l.idleTimeout,
  };
}

function connectionPolicies(ctx: Ctx, s: HTTPServerIR): CaddyTLSConnectionPolicy[] {
  const v = s.clientValidation;
  return s.listeners.map(l => policy(ctx, l, v));
}

function policy(
  ctx: Ctx,
  l: HTTPListenerIR,
  v: HTTPServerIR["clientValidation"],
): CaddyTLSConnectionPolicy {
  return own(
    ctx,
    {
      ...(l.hostname !== undefined && { match: sniMatch(ctx, l.hostname) }),
      certificate_selection: { any_tag: [...l.certificateIds] },
      // Gateway spec.tls.frontend: AllowValidOnly requires a certificate that verifies;
      // AllowInsecureFallback asks for one and takes the connection whatever is sent.
      ...(v && {
        client_authentication: {
          ca: { provider: "inline" as const, trusted_ca_certs: [...v.caCertificates] },
          mode:
            v.mode === "AllowInsecureFallback"
              ? ("request" as const)
              : ("require_and_verify" as const),
        },
      }),
    },
    [listenerSource(l.id)],
  );
}

/** The exact hostnames a route is limited to, when its only matcher is `host`. */
function onlyHosts(r: CaddyRoute): readonly string[] | undefined {
  if (r.match?.length !== 1) return undefined;
  const set = r.match[0];
  // (its only own key is `host`: counted without making the key list)
  let keys = 0;
  for (const k in set) {
    if (!Object.hasOwn(set, k)) continue;
    if (k !== "host" || ++keys > 1) return undefined;
  }
  return keys === 1 ? set.host : undefined;
}

/**
 * Grouped matching: a route whose only condition is one exact hostname ("everything under
 * this host", the commonest HTTPRoute) and which is the last route naming that hostname is
 * merged with the others that do the same thing (same handlers) into one route matching all
 * their hostnames (Caddy looks large host lists up by binary search). The merged routes go
 * where the exact-hostname routes end (the translator orders exact hostnames before wildcards
 * and no hostname): exact hostnames exclude each other, so no route they jump over could
 * have answered the request first.
 */
function mergeHostCatchAlls(ctx: Ctx, routes: readonly CaddyRoute[]): CaddyRoute[] {
  let end = routes.findIndex(r => !r.match?.length || !r.match.every(m => m.host !== undefined));
  if (end < 0) end = routes.length;
  const later = new Set<string>();
  const movable = new Set<number>();
  for (let i = routes.length - 1; i >= 0; i--) {
    const hosts = onlyHosts(routes[i]);
    if (i < end && hosts?.length === 1 && !later.has(hosts[0])) movable.add(i);
    for (const m of routes[i].match ?? []) for (const h of m.host ?? []) later.add(h);
  }
  if (movable.size < 2) return [...routes];
  const merged = new Map<string, { hosts: string[]; route: CaddyRoute; by: SourceObject[] }>();
  const out: CaddyRoute[] = [];
  for (let i = 0; i < end; i++) {
    const r = routes[i];
    if (!movable.has(i)) {
      out.push(r);
      continue;
    }
    const key = ctx.memo ? derivedOf(r, "mergeKey", mergeKey) : mergeKey(r);
    const group = merged.get(key);
    if (group) {
      group.hosts.push(...onlyHosts(r)!);
      addOwners(group.by, ownersOf(ctx, r));
    } else merged.set(key, { hosts: [...onlyHosts(r)!], route: r, by: [...ownersOf(ctx, r)] });
  }
  const memo = ctx.memo;
  for (const [key, { hosts, route, by }] of merged)
    out.push(
      memo
        ? // equal key and hosts: equal JSON (the route is its match, handle and terminal)
          memo.intern(`m\0${key}\0${hosts.join("\0")}`, () => ({
            ...route,
            match: [{ host: hosts }],
          }))
        : own(ctx, { ...route, match: [{ host: hosts }] }, by),
    );
  return [...out, ...routes.slice(end)];
}

const mergeKey = (r: CaddyRoute): string =>
  JSON.stringify({ handle: r.handle, terminal: r.terminal });

/**
 * The route as a member of `group`. A route through which the request must reach the dispatch
 * routes (it only names a backend, or holds such routes) must not be terminal.
 */
function inGroup(r: CaddyRoute, group: string): CaddyRoute {
  const { terminal, ...rest } = r;
  const answers = !r.handle.some(h => h.handler === "vars" || h.handler === "subroute");
  return { ...rest, group, ...(answers && terminal !== undefined && { terminal }) };
}

/** One route per distinct backend set: matched by the variable, proxies, ends the request. */
function dispatchRoutes(
  ctx: Ctx,
  table: ReadonlyMap<string, DispatchEntry>,
  only?: { has(id: string): boolean },
): CaddyRoute[] {
  const entries = [...table.values()].filter(e => !only || only.has(e.id));
  // Content-named ids (route table): in id order, so the server's routes outside the table
  // change only when the set of backends does (vars matchers exclude each other).
  if (tablesOn(ctx)) entries.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const route = (id: string, handler: CaddyHandler): CaddyRoute => ({
    match: [{ vars: { [BACKEND_VAR]: [id] } }],
    handle: [handler],
    terminal: true,
  });
  const memo = ctx.memo;
  // (a content-named id names its handler's JSON)
  if (memo)
    return entries.map(({ id, handler }) => memo.intern(`d\0${id}`, () => route(id, handler)));
  return entries.map(({ id, handler, owners }) => own(ctx, route(id, handler), owners));
}

/**
 * The backend ids a table's lists name (with a memo: per list object, and counted from the
 * previous render's by the lists that changed).
 */
function tableBackendIds(ctx: Ctx, route: CaddyRoute): { has(id: string): boolean } {
  const h = route.handle[0];
  if (!ctx.memo || h?.handler !== "kengine_route_table") return backendIdsIn(route);
  return ctx.memo.backendIds(h.hosts, list => derivedOf(list, "backendIds", l => backendIdsIn(l)));
}

/** The backend ids the `vars` handlers under `v` set (the backends a listener's routes use). */
function backendIdsIn(v: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(v)) for (const x of v) backendIdsIn(x, out);
  else if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    if (o.handler === "vars" && typeof o[BACKEND_VAR] === "string") out.add(o[BACKEND_VAR]);
    for (const x of Object.values(o)) if (x && typeof x === "object") backendIdsIn(x, out);
  }
  return out;
}

const notFound = (): CaddyRoute => ({
  handle: [{ handler: "static_response", status_code: 404 }],
  terminal: true,
});

/** The listeners of a server as one route table (route-table.ts), owned by its listeners. */
function tableRoute(ctx: Ctx, s: HTTPServerIR, id: string): CaddyRoute {
  const listeners = s.listeners.map((l, i) => {
    // Unmerged: the table already finds a host's routes by its key, and a merged route would be
    // written whole into the list of every host it names (O(hosts²) bytes: 64 MB for 3,000
    // routes of the cluster bench, and every new host changing hundreds of keys' lists).
    const routes = listenerRoutes(ctx, s, l, i, false);
    // The Host patterns of the listener's wildcard route hostnames, back to the hostname (none
    // when the listener's state counts none).
    const wildcards = new Map<string, string>();
    if (ctx.memo?.listener(i)?.wildcards !== 0)
      for (const e of l.routes)
        if (e.match.hostname?.startsWith("*."))
          wildcards.set(hostPattern(e.match.hostname), e.match.hostname);
    return {
      hostname: l.hostname,
      routes,
      hostsOf: (r: CaddyRoute) => routeHosts(r, wildcards),
      wildcard: wildcards.size > 0,
    };
  });
  const memo = ctx.memo;
  if (memo) {
    // From the last render's table by the routes that changed, where it can be (one listener,
    // no wildcard route hostname); else whole.
    const reuse = (key: string, list: readonly CaddyRoute[]) => memo.list(key, list);
    const before = memo.before();
    const wildcard = listeners.some(l => l.wildcard);
    const delta = before && routeTableDelta(listeners, wildcard, before, reuse, memo.finalDiff(0));
    const hosts =
      delta ?? routeTableRoute(id, listeners, () => memo.intern("404", notFound), reuse).hosts;
    countTable(delta !== undefined);
    memo.keep({
      listeners: listeners.map(l => ({ hostname: l.hostname, routes: l.routes })),
      hosts,
    });
    const handler: CaddyHandler = { handler: ROUTE_TABLE_HANDLER, id, hosts };
    return { handle: [handler] };
  }
  const { route, hosts, from } = routeTableRoute(id, listeners, notFound);
  for (const [key, i] of from) own(ctx, hosts[key], [listenerSource(s.listeners[i].id)]);
  return route;
}

/**
 * The hostnames a route of a listener's list is limited to (its `host` matcher, or the Host
 * pattern of a wildcard route hostname); undefined when one of its matcher sets takes any host.
 */
function routeHosts(
  r: CaddyRoute,
  wildcards: ReadonlyMap<string, string>,
): readonly string[] | undefined {
  if (!r.match?.length) return undefined;
  const out: string[] = [];
  for (const set of r.match) {
    const pattern = set.header_regexp?.Host?.pattern;
    const wildcard = pattern === undefined ? undefined : wildcards.get(pattern);
    if (set.host) out.push(...set.host.map(unescapePlaceholders));
    else if (wildcard !== undefined) out.push(wildcard);
    else return undefined;
  }
  return out;
}

function listenerRoute(ctx: Ctx, s: HTTPServerIR, l: HTTPListenerIR, index: number): CaddyRoute {
  return own(
    ctx,
    {
      ...(l.hostname !== undefined && { match: [hostMatcher(l.hostname)] }),
      handle: [{ handler: "subroute", routes: listenerRoutes(ctx, s, l, index, true) }],
      terminal: true,
    },
    [listenerSource(l.id)],
  );
}

/**
 * The routes of a listener's subroute (or of its keys in a route table). `merge`: host
 * catch-alls merged (mergeHostCatchAlls), for a subroute Caddy walks in a line; never for a
 * route table, whose keys already pick the host.
 */
function listenerRoutes(
  ctx: Ctx,
  s: HTTPServerIR,
  l: HTTPListenerIR,
  index: number,
  merge: boolean,
): CaddyRoute[] {
  const memo = ctx.memo;
  let routes: CaddyRoute[];
  if (memo) {
    // From the last render's list by the entries that changed (listener-memo.ts).
    const context = entryContext(ctx, l);
    const state = listenerState(
      memo.listenerBefore(index),
      l.routes,
      context,
      e => entryFragment(ctx, s, l, e, context),
      fragmentOfRoute,
      merge && ctx.dispatch ? mergeRules(memo) : undefined,
    );
    memo.keepListener(index, state);
    if (state.errorServer > 0) ctx.needsErrorServer = true;
    if (ctx.dispatch)
      for (const [key, { use }] of state.uses)
        if (!ctx.dispatch.has(key))
          ctx.dispatch.set(key, { id: use.id, handler: use.handler, owners: [] });
    routes = state.merged.slice();
  } else {
    routes = l.routes.map(e => {
      const { kind, namespace, name } = e.route;
      ctx.entryOwner = { kind, namespace, name };
      return own(ctx, entryRoute(ctx, s, l, e), [ctx.entryOwner]);
    });
    ctx.entryOwner = undefined;
    if (merge && ctx.dispatch) routes = mergeHostCatchAlls(ctx, routes);
  }
  routes.push(memo ? memo.intern("404", notFound) : notFound());
  let misdirected = s.protocol === "HTTPS" ? misdirectedRoute(ctx, s, index) : undefined;
  if (misdirected && memo) misdirected = memo.internJSON(misdirected);
  if (misdirected) routes.unshift(misdirected);
  // Shared dispatch: the listener's routes (and its 404) are one group, so only the first
  // match runs; a forwarding route only names its backends and the request leaves the
  // subroute for the server's dispatch routes.
  // (Group names are per request and short: they are repeated on every route.)
  const group = `l${index}`;
  if (ctx.dispatch)
    routes = memo
      ? routes.map(r => groupedRoute(r, group, g => inGroup(g, group)))
      : routes.map(r => own(ctx, inGroup(r, group), ownersOf(ctx, r)));
  // Pre-routing filters: before every route of the listener, outside its group.
  let filters = listenerFiltersRoute(l, dial);
  if (filters && memo) filters = memo.internJSON(filters);
  if (filters) routes.splice(misdirected ? 1 : 0, 0, own(ctx, filters, [listenerSource(l.id)]));
  memo?.keepFinal(index, routes);
  return routes;
}

/**
 * What an entry's route depends on besides the entry (see `entryRoute`, `action`, `forward`):
 * the flavour's capabilities, the listener's hostname, the options, the client certificate.
 */
function entryContext(ctx: Ctx, l: HTTPListenerIR): string {
  const c = ctx.clientCertificate;
  return [
    ctx.ir?.flavor ?? DEFAULT_PROXY_FLAVOR,
    l.hostname === undefined ? "\u0001" : l.hostname,
    ctx.opts.dispatch ?? "",
    ctx.opts.errorResponderListen ?? "",
    String(ctx.opts.routeTable),
    c ? `${c.id}\0${c.certificatePem}\0${c.keyPem}` : "",
  ].join("\0");
}

/** The entry's fragment, rendered once per entry object and context (render-memo.ts). */
function entryFragment(
  ctx: Ctx,
  s: HTTPServerIR,
  l: HTTPListenerIR,
  e: HTTPRouteEntryIR,
  context: string,
): EntryFragment {
  const kept = fragmentOf(e, context);
  if (kept) return kept;
  const needed = ctx.needsErrorServer;
  const uses: DispatchUse[] = [];
  ctx.needsErrorServer = false;
  ctx.uses = uses;
  const route = entryRoute(ctx, s, l, e);
  const f: EntryFragment = { context, route, uses, needsErrorServer: ctx.needsErrorServer };
  keepFragment(e, f);
  ctx.uses = undefined;
  ctx.needsErrorServer ||= needed;
  return f;
}

/** mergeHostCatchAlls' rules for a listener list patched by listener-memo.ts. */
const mergeRules = (memo: TableMemo): MergeRules => ({
  onlyHosts,
  mergeKey: r => derivedOf(r, "mergeKey", mergeKey),
  // (as mergeHostCatchAlls interns them)
  merged: (key, hosts, first) =>
    memo.intern(`m\0${key}\0${hosts.join("\0")}`, () => ({ ...first, match: [{ host: hosts }] })),
});

const SNI = "http.request.tls.server_name";

/**
 * HTTPS listeners sharing a port: the Host header picks the listener (the first in
 * specificity order that matches, as the routes are ordered), the TLS server name picked the
 * certificate the same way. When the server name would have picked another listener, the
 * request is misdirected: 421 (spec: GatewayHTTPSListenerDetectMisdirectedRequests). Caddy's
 * `strict_sni_host` is stricter (Host must equal the server name) and would refuse requests a
 * wildcard or catch-all listener serves.
 */
function misdirectedRoute(ctx: Ctx, s: HTTPServerIR, index: number): CaddyRoute | undefined {
  if (s.listeners.length < 2) return undefined;
  const l = s.listeners[index];
  const sets: CaddyMatcherSet[] = [];
  // The server name is the client's: matched in CEL, where the placeholder function returns it
  // as sent (Caddy 2.8's vars_regexp would expand a server name like `{http.request.host}`).
  const sni = (pattern: string): string =>
    `${celPlaceholder(ctx.caps, SNI)}.matches(${celString(pattern)})`;
  // The server name does not match this listener's hostname (no server name: only a
  // listener without hostname matches).
  if (l.hostname !== undefined) sets.push({ expression: `!${sni(sniPattern([l.hostname]))}` });
  // ... or a more specific listener on the port matches it first.
  const before = s.listeners.slice(0, index).map(o => o.hostname);
  if (before.some(h => h === undefined)) return undefined; // cannot happen: catch-all sorts last
  if (before.length > 0) sets.push({ expression: sni(sniPattern(before as string[])) });
  if (sets.length === 0) return undefined;
  return {
    match: sets,
    handle: [{ handler: "static_response", status_code: 421 }],
    terminal: true,
  };
}

/** A server name matching any of the hostnames (exact, or `*.` any number of labels). */
function sniPattern(hostnames: readonly string[]): string {
  const alt = hostnames.map(h =>
    h.startsWith("*.") ? `[^.]+(?:\\.[^.]+)*${quoteRE2(h.slice(1))}` : quoteRE2(h),
  );
  return `(?i)^(?:${alt.join("|")})$`;
}

function hostMatcher(hostname: string): CaddyMatcherSet {
  if (!hostname.startsWith("*.")) return { host: [escapePlaceholders(hostname)] };
  return { header_regexp: { Host: { pattern: hostPattern(hostname) } } };
}

/**
 * How many labels a wildcard listener hostname matches in the TLS handshake on a proxy
 * without `sni_regexp` (Kengine, Caddy 2.8): `*.example.com` becomes `*.example.com`,
 * `*.*.example.com`, … with up to this many `*` labels (Caddy's `sni` wildcard covers exactly
 * one label, and it compares each prefix of the name turned into `*` labels).
 */
export const WILDCARD_SNI_DEPTH = 8;

/**
 * A TLS handshake matcher for one server name. Caddy's `sni` wildcard covers exactly one label,
 * the Gateway API's any number of them, so wildcards become `sni_regexp` where the proxy has
 * it, else the `sni` patterns for 1 to WILDCARD_SNI_DEPTH labels.
 */
function sniMatch(ctx: Ctx, name: string): CaddySNIMatch {
  // Caddy expands placeholders in both matchers' text (names and pattern).
  if (!name.startsWith("*.")) return { sni: [escapePlaceholders(name)] };
  if (!ctx.caps.sniRegexp)
    return {
      sni: Array.from({ length: WILDCARD_SNI_DEPTH }, (_, i) =>
        escapePlaceholders("*.".repeat(i) + name),
      ),
    };
  return {
    sni_regexp: {
      pattern: escapePlaceholders(`(?i)^[^.]+(?:\\.[^.]+)*${quoteRE2(name.slice(1))}$`),
    },
  };
}

/** `*.example.com` matches any number of labels left of `example.com` (spec), with an optional port. */
const hostPattern = (wildcard: string): string =>
  `(?i)^[^.:]+(?:\\.[^.:]+)*${quoteRE2(wildcard.slice(1))}(?::[0-9]+)?$`;

function entryRoute(ctx: Ctx, s: HTTPServerIR, l: HTTPListenerIR, e: HTTPRouteEntryIR): CaddyRoute {
  const m = e.match;
  const set: Record<string, unknown> = {};
  const headerRe: Record<string, { pattern: string }> = {};
  if (m.hostname !== undefined && m.hostname !== l.hostname) {
    if (m.hostname.startsWith("*.")) headerRe.Host = { pattern: hostPattern(m.hostname) };
    else set.host = [escapePlaceholders(m.hostname)];
  }
  const prefixModifier = modifiesPrefix(e);
  const path = pathPattern(m.path, prefixModifier);
  // Named only when a rewrite or redirect reads the capture (the name costs bytes per route).
  if (path)
    set.path_regexp = prefixModifier ? { name: REGEX_NAME, pattern: path } : { pattern: path };
  if (m.method) set.method = [m.method];
  for (const h of m.headers)
    headerRe[h.name] = {
      pattern: h.type === "Exact" ? `^${quoteRE2(h.value)}$` : `^(?:${h.value})$`,
    };
  if (m.grpc) headerRe["Content-Type"] = { pattern: "^application/grpc(?:[+;].*)?$" };
  if (Object.keys(headerRe).length > 0) set.header_regexp = headerRe;
  const exactQuery: Record<string, string[]> = {};
  const regexQuery: { name: string; pattern: string }[] = [];
  for (const q of m.queryParams) {
    if (q.type === "Exact" && q.value !== "*")
      exactQuery[escapePlaceholders(q.name)] = [escapePlaceholders(q.value)];
    else
      regexQuery.push({
        name: q.name,
        pattern: q.type === "Exact" ? `^${quoteRE2(q.value)}$` : `^(?:${q.value})$`,
      });
  }
  if (Object.keys(exactQuery).length > 0) set.query = exactQuery;
  // One CEL expression for every regular-expression query match (vars_regexp ORs its keys, and
  // Caddy 2.8 expands placeholders in the request's value before matching it).
  if (regexQuery.length > 0)
    set.expression = regexQuery
      .map(
        q =>
          `${celPlaceholder(ctx.caps, `http.request.uri.query.${q.name}`)}.matches(${celString(q.pattern)})`,
      )
      .join(" && ");
  const handle: CaddyHandler[] = [];
  if (e.cors) handle.push(cors(e.cors));
  handle.push(...headerHandlers(e.requestHeaders, e.responseHeaders));
  handle.push(...rewriteHandlers(e.rewrite, prefixModifier));
  // Mirrors see the request as the backend will (after the filters above), before proxying.
  if (e.mirrors && e.mirrors.length > 0) handle.push(mirror(e.mirrors));
  handle.push(...action(ctx, s, e));
  const matchSet = set as CaddyMatcherSet;
  return { ...(Object.keys(set).length > 0 && { match: [matchSet] }), handle, terminal: true };
}

/** URLRewrite (of a rule or of a backendRef): the Host header, then the path. */
function rewriteHandlers(r: RewriteIR | undefined, prefix: PrefixMode | undefined): CaddyHandler[] {
  const out: CaddyHandler[] = [];
  if (r?.hostname)
    out.push({ handler: "headers", request: { set: { Host: [escapePlaceholders(r.hostname)] } } });
  if (r?.path) out.push({ handler: "rewrite", uri: rewrittenPath(r.path, prefix) });
  return out;
}

/**
 * How the entry's ReplacePrefixMatch modifiers read the rest of the path (rewrite or redirect
 * of the rule, URLRewrite of its backendRefs): `keep` after a new prefix, `root` after `/`;
 * `both` when its backendRefs need each (the path capture then serves both).
 */
type PrefixMode = "keep" | "root" | "both";

function modifiesPrefix(e: HTTPRouteEntryIR): PrefixMode | undefined {
  const rule: PathModifierIR | undefined =
    e.rewrite?.path ?? (e.action.type === "redirect" ? e.action.redirect.path : undefined);
  const backends = e.action.type === "forward" ? e.action.backends : [];
  const modes = new Set<PrefixMode>();
  for (const p of [
    rule,
    ...backends.map(b => (b.type === "service" ? b.rewrite?.path : undefined)),
  ])
    if (p?.type === "ReplacePrefixMatch") modes.add(trimSlash(p.value) === "" ? "root" : "keep");
  if (modes.size === 0) return undefined;
  return modes.size > 1 ? "both" : [...modes][0];
}

const trimSlash = (v: string): string => v.replace(/\/+$/, "");

/**
 * Path regular expression (RE2, case-sensitive, matched against Caddy's cleaned path).
 * PathPrefix has segment semantics: `/foo` matches `/foo` and `/foo/…`, not `/foobar`.
 * With a prefix modifier, capture group 1 holds the rest of the path (`root`: without its
 * leading slash; `keep`: with it; `both`: group 1 with it, group 2 without).
 */
function pathPattern(
  p: HTTPRouteEntryIR["match"]["path"],
  prefix: PrefixMode | undefined,
): string | undefined {
  switch (p.type) {
    case "Exact":
      return `^${quoteRE2(p.value)}$`;
    case "RegularExpression":
      return `^(?:${p.value})$`;
    case "PathPrefix": {
      const base = quoteRE2(trimSlash(p.value));
      if (prefix === "root") return `^${base}(?:/(.*))?$`;
      if (prefix === "keep") return `^${base}(/.*)?$`;
      if (prefix === "both") return `^${base}(/(.*))?$`;
      return base === "" ? undefined : `^${base}(?:/.*)?$`;
    }
  }
}

const rest = `{http.regexp.${REGEX_NAME}.1}`;

function rewrittenPath(p: PathModifierIR, prefix: PrefixMode | undefined): string {
  if (p.type === "ReplaceFullPath") return escapePlaceholders(p.value);
  const root = trimSlash(p.value) === "";
  if (prefix === "both")
    return root
      ? `/{http.regexp.${REGEX_NAME}.2}`
      : `${escapePlaceholders(trimSlash(p.value))}${rest}`;
  return prefix === "root" ? `/${rest}` : `${escapePlaceholders(trimSlash(p.value))}${rest}`;
}

/**
 * The `headers` handlers of a request and a response header modifier; none for a modifier
 * without operations. Caddy 2.8 provisions a `response` through a pointer it never checks: one
 * holding only `deferred` (an empty ResponseHeaderModifier) crashed the whole proxy process
 * (hunt case empty-response-header-modifier, docs/operations.md "Hardening").
 */
function headerHandlers(request?: HeaderOpsIR, response?: HeaderOpsIR): CaddyHandler[] {
  const out: CaddyHandler[] = [];
  const req = request && headerOps(request);
  if (req && Object.keys(req).length > 0) out.push({ handler: "headers", request: req });
  const res = response && headerOps(response);
  if (res && Object.keys(res).length > 0)
    out.push({ handler: "headers", response: { ...res, deferred: true } });
  return out;
}

function headerOps(o: HeaderOpsIR): CaddyHeaderOps {
  // Header names are the user's: maps without a prototype, so `constructor` or `__proto__` is
  // a header like any other (hostile-regressions "header-names-prototype-keys").
  const set = Object.create(null) as Record<string, string[]>;
  const add = Object.create(null) as Record<string, string[]>;
  for (const h of o.set) set[escapePlaceholders(h.name)] = [escapePlaceholders(h.value)];
  for (const h of o.add) (add[escapePlaceholders(h.name)] ??= []).push(escapePlaceholders(h.value));
  return {
    ...(Object.keys(set).length > 0 && { set }),
    ...(Object.keys(add).length > 0 && { add }),
    ...(o.remove.length > 0 && { delete: o.remove.map(escapePlaceholders) }),
  };
}

export { escapePlaceholders } from "./placeholders";

/**
 * `s` as a CEL string literal that Caddy passes to CEL unchanged. Caddy rewrites every
 * `{name}` in an expression's text into a placeholder call before CEL parses it, string
 * literals included (caddyhttp/celmatcher.go, placeholderRegexp), so a brace in a user's
 * regular expression (`x{ab}`) would break the expression and the whole config. JSON string
 * escapes are CEL escapes; braces become `\u007b` / `\u007d`, which CEL decodes back.
 */
export const celString = (s: string): string =>
  JSON.stringify(s).replace(/[{}]/g, c => (c === "{" ? "\\u007b" : "\\u007d"));

/**
 * A CEL call reading the placeholder `name`, whatever characters it holds (a query parameter
 * may be named with any token character, e.g. `a!b`, which the `{name}` sugar would leave as
 * broken CEL text). The function is `ph(req, …)` from Caddy 2.10 on, `caddyPlaceholder(request, …)`
 * on Caddy 2.8.
 */
export const celPlaceholder = (caps: ProxyCapabilities, name: string): string =>
  caps.celPh ? `ph(req, ${celString(name)})` : `caddyPlaceholder(request, ${celString(name)})`;

function action(ctx: Ctx, s: HTTPServerIR, e: HTTPRouteEntryIR): CaddyHandler[] {
  const a = e.action;
  switch (a.type) {
    case "respond":
      return [
        {
          handler: "static_response",
          status_code: a.status,
          ...(a.body && { body: escapePlaceholders(a.body) }),
        },
      ];
    case "redirect":
      return [redirect(a.redirect, modifiesPrefix(e))];
    case "forward": {
      const proxy = forward(ctx, a.backends, {
        timeouts: a.timeouts,
        retry: a.retry,
        host: e.rewrite?.hostname,
        prefix: modifiesPrefix(e),
        session: a.session,
      });
      // Retries under a request timeout: the deadline wraps the rest of the chain (the shared
      // dispatch route too, which runs after this route's handlers).
      const deadline = requestDeadline(ctx.caps, a.timeouts, a.retry);
      if (!ctx.dispatch || proxy.handler !== "reverse_proxy") return [...deadline, proxy];
      const key = JSON.stringify(proxy);
      let entry = ctx.dispatch.get(key);
      if (!entry) {
        const id = tablesOn(ctx) ? contentDispatchId(key) : `b${ctx.dispatch.size}`;
        entry = { id, handler: proxy, owners: [] };
        ctx.dispatch.set(key, entry);
      }
      if (ctx.entryOwner) addOwners(entry.owners, [ctx.entryOwner]);
      ctx.uses?.push({ key, id: entry.id, handler: entry.handler });
      return [...deadline, { handler: "vars", [BACKEND_VAR]: entry.id }];
    }
  }
}

/**
 * RequestMirror: our `kengine_mirror` handler, one target per mirror backend; with the dial
 * guard when a target is a name a tenant wrote.
 */
function mirror(mirrors: readonly MirrorIR[]): CaddyHandler {
  const guarded = mirrors.filter(m => m.egressGuard);
  return {
    handler: "kengine_mirror",
    targets: mirrors.map(m => ({
      dial: m.endpoints.map(dial),
      ...(m.fraction && { numerator: m.fraction.numerator, denominator: m.fraction.denominator }),
    })),
    ...(guarded.length > 0 && { egress_guard: egressGuardOf(guarded) }),
  };
}

/**
 * `egress_guard` for upstreams that are names tenants wrote: every CIDR any of
 * them denies (one Gateway's are the same list); `{}` still switches the guard on.
 */
export function egressGuardOf(
  upstreams: readonly { readonly egressGuard?: EgressGuardIR }[],
): CaddyEgressGuard {
  const deny = [...new Set(upstreams.flatMap(u => u.egressGuard?.deny ?? []))];
  return deny.length > 0 ? { deny } : {};
}

/* ------------------------------------------------------------------ CORS */

const ORIGIN = "{http.request.header.Origin}";

/**
 * The CORS filter from stock handlers: a preflight (OPTIONS with Origin and
 * Access-Control-Request-Method) from an allowed origin is answered here (204) with the
 * allow-* headers; any other request from an allowed origin goes on and gets
 * Access-Control-Allow-Origin (the request's origin, echoed), credentials and expose headers
 * on its response. Requests from other origins pass untouched (no CORS headers: the browser
 * refuses them).
 */
function cors(c: CorsIR): CaddyHandler {
  const origin: CaddyMatcherSet = { header_regexp: { Origin: { pattern: originPattern(c) } } };
  const common: Record<string, string[]> = {
    "Access-Control-Allow-Origin": [ORIGIN],
    ...(c.allowCredentials && { "Access-Control-Allow-Credentials": ["true"] }),
  };
  const expose = c.exposeHeaders.includes("*")
    ? c.allowCredentials
      ? []
      : ["*"]
    : c.exposeHeaders;
  if (expose.length > 0)
    common["Access-Control-Expose-Headers"] = [expose.map(escapePlaceholders).join(", ")];
  const preflight: Record<string, string[]> = {
    ...common,
    "Access-Control-Max-Age": [String(c.maxAge)],
    Vary: ["Origin"],
  };
  if (c.allowMethods.includes("*"))
    preflight["Access-Control-Allow-Methods"] = [
      "{http.request.header.Access-Control-Request-Method}",
    ];
  else if (c.allowMethods.length > 0)
    preflight["Access-Control-Allow-Methods"] = [c.allowMethods.map(escapePlaceholders).join(", ")];
  const preflightRoutes: CaddyRoute[] = [];
  if (c.allowHeaders.includes("*")) {
    // Echo the requested headers, and only when the request names some.
    preflightRoutes.push({
      match: [{ ...origin, header: { "Access-Control-Request-Headers": ["*"] } }],
      handle: [
        responseHeaders({
          "Access-Control-Allow-Headers": ["{http.request.header.Access-Control-Request-Headers}"],
        }),
      ],
    });
  } else if (c.allowHeaders.length > 0) {
    preflight["Access-Control-Allow-Headers"] = [c.allowHeaders.map(escapePlaceholders).join(", ")];
  }
  preflightRoutes.unshift({ match: [origin], handle: [responseHeaders(preflight)] });
  // Every preflight is answered here: a disallowed origin gets 204 without CORS headers (the
  // browser then refuses the actual request); the backend never sees a preflight.
  preflightRoutes.push({ handle: [{ handler: "static_response", status_code: 204 }] });
  return {
    handler: "subroute",
    routes: [
      {
        match: [
          {
            method: ["OPTIONS"],
            header: { Origin: ["*"], "Access-Control-Request-Method": ["*"] },
          },
        ],
        handle: [{ handler: "subroute", routes: preflightRoutes }],
        terminal: true,
      },
      {
        match: [origin],
        handle: [
          {
            handler: "headers",
            response: { set: common, add: { Vary: ["Origin"] }, deferred: true },
          },
        ],
      },
    ],
  };
}

/** Headers set on the response at once (the handler that answers comes next). */
const responseHeaders = (set: Record<string, string[]>): CaddyHandler => ({
  handler: "headers",
  response: { set },
});

/**
 * The allowed origins as one RE2 pattern. `*` alone: any origin. A `*` in the host: any
 * number of labels (greedy to the left). No port: the scheme's default port, written or not.
 */
function originPattern(c: CorsIR): string {
  if (c.allowOrigins.includes("*")) return "^.+$";
  const alts = c.allowOrigins.map(o => {
    const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/]*?)(?::([0-9]+))?$/.exec(o);
    if (!m) return quoteRE2(o);
    const [, scheme, host, port] = m;
    const h = host.split("*").map(quoteRE2).join("[^/:]+");
    const def =
      scheme.toLowerCase() === "http" ? "80" : scheme.toLowerCase() === "https" ? "443" : undefined;
    const p = port !== undefined ? `:${port}` : def ? `(?::${def})?` : "";
    return `${quoteRE2(scheme)}://${h}${p}`;
  });
  return `(?i)^(?:${alts.join("|")})$`;
}

function redirect(r: RedirectIR, prefix: PrefixMode | undefined): CaddyHandler {
  const host = r.hostname ? escapePlaceholders(r.hostname) : "{http.request.host}";
  const origin = `${r.scheme}://${host}${r.port !== undefined ? `:${r.port}` : ""}`;
  const respond = (location: string): CaddyHandler => ({
    handler: "static_response",
    status_code: r.statusCode,
    headers: { Location: [location] },
  });
  if (!r.path) return respond(`${origin}{http.request.uri}`);
  const path = rewrittenPath(r.path, prefix);
  // Keep the query string, without a dangling "?" when there is none.
  return {
    handler: "subroute",
    routes: [
      { match: [{ query: {} }], handle: [respond(`${origin}${path}`)], terminal: true },
      { handle: [respond(`${origin}${path}?{http.request.uri.query}`)], terminal: true },
    ],
  };
}

/** An upstream address; Caddy expands placeholders in it (an XBackend's hostname is a tenant's). */
const dial = (e: EndpointIR): string =>
  escapePlaceholders(
    e.address.includes(":") ? `[${e.address}]:${e.port}` : `${e.address}:${e.port}`,
  );

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
const lcm = (a: number, b: number): number => (a / gcd(a, b)) * b;

/**
 * One reverse_proxy for a rule's backends. Each backendRef's weight is split evenly over its
 * endpoints (integer weights via the LCM of endpoint counts); unresolved backendRefs keep
 * their share, answered with 500 by the internal error server. No endpoints at all: 503.
 */
function forward(ctx: Ctx, given: readonly BackendIR[], policy: ForwardPolicy): CaddyHandler {
  // A name is never dialled without the guard (translation refuses it on such flavours too).
  const backends = ctx.caps.egressGuard
    ? given
    : given.map(b =>
        b.type === "service" && b.egressGuard
          ? { type: "invalid" as const, id: b.id, weight: b.weight }
          : b,
      );
  const live = backends.filter(b => b.type === "invalid" || b.endpoints.length > 0);
  // A guarded name (egressGuard) gets a reverse_proxy of its own: the guard refuses the
  // loopback error responder that an invalid share dials, and is for tenants' names only.
  const guarded = live.flatMap(b => (b.type === "service" && b.egressGuard ? [b] : []));
  if (
    live.some(b => b.type === "service" && (b.requestHeaders || b.responseHeaders || b.rewrite)) ||
    (guarded.length > 0 && guarded.length < live.length)
  )
    return split(ctx, live, policy);
  const guard = guarded.length > 0 ? egressGuardOf(guarded) : undefined;
  if (live.length === 0) {
    const allInvalid = backends.length > 0 && backends.every(b => b.type === "invalid");
    return { handler: "static_response", status_code: allInvalid ? 500 : 503 };
  }
  if (live.every(b => b.type === "invalid"))
    return { handler: "static_response", status_code: 500 };
  // One reverse_proxy has one transport: the first Service backend's TLS settings (from its
  // BackendTLSPolicy) apply; a backend in the same rule that needs other TLS settings gets the
  // invalid share (500) rather than a connection with the wrong verification.
  const first = live.find(b => b.type === "service");
  const tls = first?.type === "service" ? first.tls : undefined;
  const tlsKey = JSON.stringify(tls ?? null);
  const counts = live.map(b => (b.type === "service" ? b.endpoints.length : 1));
  const l = counts.reduce(lcm, 1);
  const upstreams: { dial: string; weight: number; h2c: boolean }[] = [];
  let errorShare = false;
  for (const b of live) {
    if (b.type === "invalid" || JSON.stringify(b.tls ?? null) !== tlsKey) {
      errorShare = true;
      ctx.needsErrorServer = true;
      upstreams.push({
        dial: ctx.opts.errorResponderListen ?? DEFAULT_ERROR_LISTEN,
        weight: b.weight * l,
        h2c: false,
      });
    } else {
      for (const e of b.endpoints)
        upstreams.push({
          dial: dial(e),
          weight: (b.weight * l) / b.endpoints.length,
          h2c: b.protocol === "h2c",
        });
    }
  }
  const g = upstreams.map(u => u.weight).reduce(gcd);
  const weights = upstreams.map(u => u.weight / g);
  const h2c = upstreams.some(u => u.h2c);
  const errorPort = (ctx.opts.errorResponderListen ?? DEFAULT_ERROR_LISTEN).split(":").pop()!;
  const headerTimeout = minDefined(policy.timeouts?.backendRequestMs, policy.timeouts?.requestMs);
  const retry = policy.retry;
  const match = retry && retryMatch(retry.codes, ctx.caps.retryOnTransportError);
  return {
    handler: "reverse_proxy",
    upstreams: upstreams.map(u => ({ dial: u.dial })),
    // A retried request must carry its whole body again: buffer bodies up to 1 MiB.
    ...(retry && { request_buffers: RETRY_BODY_BUFFER }),
    load_balancing: {
      selection_policy: withSession(
        ctx,
        policy,
        weights.every(w => w === weights[0])
          ? { policy: "round_robin" }
          : { policy: "weighted_round_robin", weights },
      ),
      ...(retry && {
        retries: retry.attempts,
        ...(match && { retry_match: [{ expression: match }] }),
        ...(retry.backoffMs !== undefined && { try_interval: `${retry.backoffMs}ms` }),
        // The request timeout bounds the whole exchange, retries included.
        ...(policy.timeouts?.requestMs !== undefined && {
          try_duration: `${policy.timeouts.requestMs}ms`,
          ...(retry.backoffMs === undefined && { try_interval: "1ms" }),
        }),
      }),
    },
    // Caddy ≥ 2.11 sends an HTTPS upstream its own address as Host unless told otherwise;
    // the backend must see the request's Host (or the URLRewrite hostname).
    ...(tls && {
      headers: {
        request: {
          set: {
            Host: [policy.host ? escapePlaceholders(policy.host) : "{http.request.hostport}"],
          },
        },
      },
    }),
    ...(tls
      ? {
          transport: {
            // subjectAltNames, a client certificate: our transport (proxy/santls), the
            // http one plus SAN checks and an inline client certificate.
            protocol:
              tls.subjectAltNames || ctx.clientCertificate || guard ? "kengine_http" : "http",
            ...(guard && { egress_guard: guard }),
            ...(ctx.clientCertificate && {
              client_certificate: {
                certificate: ctx.clientCertificate.certificatePem,
                key: ctx.clientCertificate.keyPem,
              },
            }),
            ...(tls.subjectAltNames && {
              subject_alt_names: {
                ...(tls.subjectAltNames.dns.length > 0 && { dns: [...tls.subjectAltNames.dns] }),
                ...(tls.subjectAltNames.uri.length > 0 && { uri: [...tls.subjectAltNames.uri] }),
              },
            }),
            ...(headerTimeout !== undefined && { response_header_timeout: `${headerTimeout}ms` }),
            tls: {
              server_name: escapePlaceholders(tls.serverName),
              ...(tls.caCertificates && {
                ca: { provider: "inline", trusted_ca_certs: [...tls.caCertificates] },
              }),
              // The internal 500 responder speaks plain HTTP.
              ...(errorShare && { except_ports: [errorPort] }),
            },
          },
        }
      : (h2c || headerTimeout !== undefined || guard) && {
          transport: {
            protocol: guard ? "kengine_http" : "http",
            ...(guard && { egress_guard: guard }),
            ...(h2c && { versions: ["h2c", "2"] }),
            ...(headerTimeout !== undefined && { response_header_timeout: `${headerTimeout}ms` }),
          },
        }),
  };
}

const RETRY_BODY_BUFFER = 1 << 20;

/**
 * The `retry_match` expression of a rule's retry: its status codes, and, where the proxy can
 * tell (`retryOnTransportError`), any attempt that failed after the connection was made
 * (reset or closed by the backend, backendRequest timeout), whatever the method. Caddy
 * retries a failed dial by itself; without a `retry_match` it retries other failures of GET
 * requests only. One expression: a transport failure has no status code (the placeholder is
 * null, `in` is false), a response is no transport failure (null `== true` is false).
 */
function retryMatch(codes: readonly number[], transportErrors: boolean): string | undefined {
  const parts = [
    ...(transportErrors ? ["{http.reverse_proxy.is_transport_error} == true"] : []),
    ...(codes.length > 0 ? [`{http.reverse_proxy.status_code} in [${codes.join(", ")}]`] : []),
  ];
  return parts.length > 0 ? parts.join(" || ") : undefined;
}

/** The selection policy, wrapped in the rule's session persistence when it has one. */
const withSession = (
  ctx: Ctx,
  policy: ForwardPolicy,
  choose: CaddySelectionPolicy,
): CaddySelectionPolicy =>
  policy.session ? sessionPolicy(ctx.caps, policy.session, choose) : choose;

type ForwardPolicy = Pick<
  Extract<ActionIR, { type: "forward" }>,
  "timeouts" | "retry" | "session"
> & {
  /** URLRewrite hostname of the entry, if any. */
  readonly host?: string;
  /** How the entry's path capture serves ReplacePrefixMatch (backendRef URLRewrite). */
  readonly prefix?: PrefixMode;
};

const minDefined = (a?: number, b?: number): number | undefined =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b);

/** Random per-request value Caddy generates once per request (UUID v4, lower-case hex). */
const REQUEST_UUID = "{http.request.uuid}";
/** Weighted choice resolution: the first three hex digits of the request UUID (4096 buckets). */
const BUCKETS = 4096;

/**
 * Backends with their own filters (backendRef-level header modifiers and URLRewrite): the
 * backend is chosen first, by weight, from the request's random UUID, then that backend's
 * header operations and rewrite run and its own reverse_proxy sends the request. Shares are
 * exact to 1/4096.
 */
function split(ctx: Ctx, live: readonly BackendIR[], policy: ForwardPolicy): CaddyHandler {
  const branch = (b: BackendIR): CaddyHandler[] => {
    if (b.type === "invalid") return [{ handler: "static_response", status_code: 500 }];
    const handle: CaddyHandler[] = [];
    handle.push(...headerHandlers(b.requestHeaders, b.responseHeaders));
    handle.push(...rewriteHandlers(b.rewrite, policy.prefix));
    const own = { ...b, requestHeaders: undefined, responseHeaders: undefined, rewrite: undefined };
    handle.push(forward(ctx, [own], { ...policy, host: b.rewrite?.hostname ?? policy.host }));
    return handle;
  };
  if (live.length === 1) return { handler: "subroute", routes: [{ handle: branch(live[0]) }] };
  const total = live.reduce((n, b) => n + b.weight, 0);
  const routes: CaddyRoute[] = [];
  let cumulative = 0;
  let lower = 0;
  live.forEach((b, i) => {
    cumulative += b.weight;
    const upper = i === live.length - 1 ? BUCKETS : Math.round((cumulative * BUCKETS) / total);
    if (upper <= lower) return; // a share below one bucket
    lower = upper;
    routes.push({
      ...(upper < BUCKETS && {
        match: [{ vars_regexp: { [REQUEST_UUID]: { pattern: hexBelow(upper) } } }],
      }),
      handle: branch(b),
      terminal: true,
    });
  });
  return { handler: "subroute", routes };
}

const HEX = "0123456789abcdef";

/** RE2 pattern: the string starts with three hex digits whose value is below `n` (1..4095). */
export function hexBelow(n: number): string {
  const d = n
    .toString(16)
    .padStart(3, "0")
    .split("")
    .map(c => HEX.indexOf(c));
  const below = (x: number): string => `[${HEX.slice(0, x)}]`;
  const alts: string[] = [];
  if (d[0] > 0) alts.push(`${below(d[0])}[0-9a-f]{2}`);
  if (d[1] > 0) alts.push(`${HEX[d[0]]}${below(d[1])}[0-9a-f]`);
  if (d[2] > 0) alts.push(`${HEX[d[0]]}${HEX[d[1]]}${below(d[2])}`);
  return `^(?:${alts.join("|")})`;
}

/* ------------------------------------------------------------------ layer 4 */

/**
 * Where connections go that no backend may take (unresolved backendRefs, no ready endpoints,
 * no backends at all): an abstract unix socket nobody listens on, so the proxy's dial fails at
 * once and the connection is closed. An empty handler list would not do: caddy-l4 then falls
 * through to the next (less specific) route.
 */
export const L4_REFUSE_DIAL = "unix/@kengine-gateway-no-backend";

function l4Server(ctx: Ctx, s: L4ServerIR): CaddyL4Server {
  const network = s.protocol === "UDP" ? "udp/" : "";
  const listenNetwork =
    s.protocol === "UDP"
      ? "udp/"
      : ctx.caps.persistentListeners
        ? `${PERSISTENT_TCP_NETWORK}/`
        : "";
  const routes = s.routes.map(r => {
    const live = r.backends.filter(b => b.weight > 0);
    const upstreams: CaddyL4Upstream[] = [];
    if (live.length > 0) {
      const g = live.map(b => b.weight).reduce(gcd);
      for (const b of live) {
        // caddy-l4 has no weighted policy: each endpoint is repeated by its backendRef's reduced
        // weight (capped; validation/l4route.ts refuses more) and split evenly over its
        // endpoints by round robin.
        const times = Math.min(b.weight / g, MAX_L4_WEIGHT_RATIO);
        const dials =
          b.endpoints.length > 0 ? b.endpoints.map(e => `${network}${dial(e)}`) : [L4_REFUSE_DIAL];
        // BackendTLSPolicy behind a Terminate listener: re-encrypt (caddy-l4 upstream TLS).
        const tls = b.tls && b.endpoints.length > 0 ? l4UpstreamTLS(b.tls) : undefined;
        for (const d of dials)
          for (let i = 0; i < times; i++) upstreams.push({ dial: [d], ...(tls && { tls }) });
      }
    }
    const refuseAll = upstreams.every(u => u.dial[0] === L4_REFUSE_DIAL);
    const proxy: CaddyL4Handler = refuseAll
      ? { handler: "proxy", upstreams: [{ dial: [L4_REFUSE_DIAL] }] }
      : { handler: "proxy", upstreams, load_balancing: { selection: { policy: "round_robin" } } };
    const handle: CaddyL4Handler[] = [];
    if (r.terminate)
      handle.push({
        handler: "tls",
        connection_policies: [
          { certificate_selection: { any_tag: [...r.terminate.certificateIds] } },
        ],
      });
    handle.push(proxy);
    // One matcher set per name: caddy-l4 matches a route when any of its sets matches.
    const { kind, namespace, name } = r.route;
    return own(
      ctx,
      {
        ...(r.serverNames && { match: r.serverNames.map(n => ({ tls: sniMatch(ctx, n) })) }),
        handle,
      },
      [{ kind, namespace, name }],
    );
  });
  return { listen: [listenAddress(ctx, s.port, listenNetwork)], routes };
}

function l4UpstreamTLS(tls: NonNullable<L4BackendIR["tls"]>): CaddyL4Upstream["tls"] {
  return {
    server_name: escapePlaceholders(tls.serverName),
    ...(tls.caCertificates && {
      ca: { provider: "inline", trusted_ca_certs: [...tls.caCertificates] },
    }),
  };
}

/** The config as deterministic JSON text: object keys sorted, two-space indent. */
export function renderCaddyJSON(config: CaddyConfig | object): string {
  return JSON.stringify(sortKeys(config), null, 2) + "\n";
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) {
      const x = (v as Record<string, unknown>)[k];
      if (x !== undefined) out[k] = sortKeys(x);
    }
    return out;
  }
  return v;
}
