/**
 * An HTTP server's routes: one per listener (or one route table holding them), each holding its
 * entries' routes in precedence order (matchers: hosts, SNI, path, headers), and the shared
 * dispatch routes that name a backend set once.
 */
import { HTTPListenerIR, HTTPRouteEntryIR, HTTPServerIR, SourceRangesIR } from "../ir";
import { DEFAULT_PROXY_FLAVOR } from "../flavor/proxy-flavor";
import { listenerFiltersRoute } from "./listener-filters";
import { escapePlaceholders, unescapePlaceholders } from "./placeholders";
import { quoteRE2 } from "../validation/regex";
import { requestDeadline } from "./deadline";
import { CaddyHandler, CaddyMatcherSet, CaddyRoute, CaddySNIMatch } from "./types";
import {
  contentDispatchId,
  countTable,
  ROUTE_TABLE_HANDLER,
  routeTableDelta,
  routeTableRoute,
} from "./route-table";
import {
  derivedOf,
  DispatchUse,
  EntryFragment,
  fragmentOf,
  fragmentOfRoute,
  groupedRoute,
  keepFragment,
  TableMemo,
} from "./render-memo";
import { listenerState, MergeRules } from "./listener-memo";
import {
  addOwners,
  BACKEND_VAR,
  Ctx,
  DispatchEntry,
  listenerSource,
  own,
  ownersOf,
  SourceObject,
  tablesOn,
} from "./render-context";
import {
  celPlaceholder,
  celString,
  cors,
  dial,
  mirror,
  modifiesPrefix,
  pathPattern,
  redirect,
  REGEX_NAME,
  headerHandlers,
  rewriteHandlers,
} from "./handlers";
import { forward } from "./forward";

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
export function inGroup(r: CaddyRoute, group: string): CaddyRoute {
  const { terminal, ...rest } = r;
  const answers = !r.handle.some(h => h.handler === "vars" || h.handler === "subroute");
  return { ...rest, group, ...(answers && terminal !== undefined && { terminal }) };
}

/** One route per distinct backend set: matched by the variable, proxies, ends the request. */
export function dispatchRoutes(
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
 * The route table route with its server's backends inside (shared dispatch): the proxy runs
 * the backend a host's list names by one lookup, in the table's route, which Caddy's traffic
 * metrics time once (docs/bench.md "The request path on loopback"). In id order.
 */
export function withTableBackends(
  ctx: Ctx,
  tableRoute: CaddyRoute,
  table: ReadonlyMap<string, DispatchEntry>,
  only: { has(id: string): boolean },
): CaddyRoute {
  const entries = [...table.values()].filter(e => only.has(e.id));
  const h = tableRoute.handle[0];
  if (entries.length === 0 || h?.handler !== ROUTE_TABLE_HANDLER) return tableRoute;
  entries.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const backends: Record<string, CaddyHandler> = {};
  for (const { id, handler, owners } of entries) backends[id] = own(ctx, handler, owners);
  const route = { ...tableRoute, handle: [{ ...h, backends }, ...tableRoute.handle.slice(1)] };
  return own(ctx, route, ownersOf(ctx, tableRoute));
}

/**
 * The backend ids a table's lists name (with a memo: per list object, and counted from the
 * previous render's by the lists that changed).
 */
export function tableBackendIds(ctx: Ctx, route: CaddyRoute): { has(id: string): boolean } {
  const h = route.handle[0];
  if (!ctx.memo || h?.handler !== ROUTE_TABLE_HANDLER) return backendIdsIn(route);
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

export const notFound = (): CaddyRoute => ({
  handle: [{ handler: "static_response", status_code: 404 }],
  terminal: true,
});

/** The listeners of a server as one route table (route-table.ts), owned by its listeners. */
export function tableRoute(ctx: Ctx, s: HTTPServerIR, id: string): CaddyRoute {
  const listeners = s.listeners.map((l, i) => {
    // Unmerged: the table already finds a host's routes by its key, and a merged route would be
    // written whole into the list of every host it names (O(hosts²) bytes, and every new host
    // changing hundreds of keys' lists).
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

export function listenerRoute(
  ctx: Ctx,
  s: HTTPServerIR,
  l: HTTPListenerIR,
  index: number,
): CaddyRoute {
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
export function sniMatch(ctx: Ctx, name: string): CaddySNIMatch {
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
  // Client ranges first: a refused client gets 403 and nothing else runs.
  if (e.sourceRanges) handle.push(sourceRangeGuard(e.sourceRanges));
  // Before anything reads the body: Caddy answers 413 past the limit.
  if (e.maxRequestBodyBytes !== undefined)
    handle.push({ handler: "request_body", max_size: e.maxRequestBodyBytes });
  // Then the authorization Service (ingress-nginx auth-url), before anything else of the route.
  if (e.auth)
    handle.push({
      handler: "kengine_ext_auth",
      mode: "ingress-nginx",
      dial: e.auth.endpoints.map(dial),
      path: e.auth.path,
      ...(e.auth.host && { host: e.auth.host }),
      ...(e.auth.responseHeaders.length > 0 && {
        allowed_response_headers: [...e.auth.responseHeaders],
      }),
    });
  if (e.cors) handle.push(cors(e.cors));
  handle.push(...headerHandlers(e.requestHeaders, e.responseHeaders));
  handle.push(...rewriteHandlers(e.rewrite, prefixModifier));
  // Mirrors see the request as the backend will (after the filters above), before proxying.
  if (e.mirrors && e.mirrors.length > 0) handle.push(mirror(e.mirrors));
  handle.push(...action(ctx, s, e));
  const matchSet = set as CaddyMatcherSet;
  return { ...(Object.keys(set).length > 0 && { match: [matchSet] }), handle, terminal: true };
}

/**
 * A subroute answering 403 to a client (the TCP peer) inside a denied range or outside the
 * allowed ones; any other request goes on to the rest of the route.
 */
function sourceRangeGuard(r: SourceRangesIR): CaddyHandler {
  const refuse = [{ handler: "static_response" as const, status_code: 403 }];
  return {
    handler: "subroute",
    routes: [
      ...(r.deny ? [{ match: [{ remote_ip: { ranges: r.deny } }], handle: refuse }] : []),
      ...(r.allow
        ? [{ match: [{ not: [{ remote_ip: { ranges: r.allow } }] }], handle: refuse }]
        : []),
    ],
  };
}

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
