/**
 * GatewayIR → Caddy JSON. One Caddy HTTP server per HTTP(S) port: a route per listener
 * (most specific hostname first, each ending in 404 so listeners stay isolated), holding the
 * listener's entries in precedence order. Layer-4 servers (caddy-l4) for TLS passthrough,
 * TCP and UDP. The admin endpoint is a unix socket and never persists config, and the
 * management server is kept.
 */
import { GatewayIR, HTTPListenerIR, HTTPServerIR } from "../ir";
import { capabilitiesOf, DEFAULT_PROXY_FLAVOR } from "../flavor/proxy-flavor";
import { tracingRoute } from "./tracing";
import { DEFAULT_LIMITS } from "../validation/limits";
import {
  CaddyConfig,
  CaddyHTTPServer,
  CaddyL4Server,
  CaddyRoute,
  CaddyTLSConnectionPolicy,
  DEFAULT_ADMIN_LISTEN,
  JsonObject,
  MANAGEMENT_SERVER_NAME,
} from "./types";
import { ROUTE_TABLE_HANDLER, tableId } from "./route-table";
import { tableMemo } from "./render-memo";
import {
  CaddyOptions,
  CaddySourceMap,
  Ctx,
  DEFAULT_ERROR_LISTEN,
  listenAddress,
  LISTENERS_GROUP,
  listenerSource,
  own,
  Owners,
  ownersOf,
  PERSISTENT_HTTP_NETWORK,
  SourceObject,
  tablesOn,
} from "./render-context";
import {
  dispatchRoutes,
  inGroup,
  listenerRoute,
  notFound,
  sniMatch,
  tableBackendIds,
  tableRoute,
  withTableBackends,
} from "./listener-routes";
import { l4Server } from "./l4";

// The renderer's parts (render-context.ts, listener-routes.ts, handlers.ts, forward.ts, l4.ts),
// re-exported where their users have always found them.
export {
  BACKEND_VAR,
  listenerSource,
  PERSISTENT_HTTP_NETWORK,
  PERSISTENT_TCP_NETWORK,
} from "./render-context";
export type { CaddyOptions, CaddySourceMap, SourceObject } from "./render-context";
export { WILDCARD_SNI_DEPTH } from "./listener-routes";
export { celPlaceholder, celString, egressGuardOf, escapePlaceholders } from "./handlers";
export { hexBelow } from "./forward";
export { L4_REFUSE_DIAL } from "./l4";

export const ERROR_SERVER_NAME = "kengine-internal-500";

/** Builds the Caddy config for the Gateways a proxy serves (usually one). */
export function toCaddyConfig(
  irs: GatewayIR | readonly GatewayIR[],
  opts: CaddyOptions = {},
): CaddyConfig {
  return render(irs, opts, undefined);
}

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
        if (h.handler === ROUTE_TABLE_HANDLER) {
          for (const [key, list] of Object.entries(h.hosts)) {
            note(`${at}/${i}/handle/${p}/hosts/${key}`, list);
            walkRoutes(`${at}/${i}/handle/${p}/hosts/${key}`, list);
          }
          for (const [id, b] of Object.entries(h.backends ?? {}))
            note(`${at}/${i}/handle/${p}/backends/${id}`, b);
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

function serverName(protocol: string, port: number, ir?: GatewayIR): string {
  const base = `${protocol.toLowerCase()}-${port}`;
  return ir ? `${ir.namespace}/${ir.name}/${base}` : base;
}

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
      routes[0] = withTableBackends(
        ctx,
        routes[0]!,
        ctx.dispatch,
        tableBackendIds(ctx, routes[0]!),
      );
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
