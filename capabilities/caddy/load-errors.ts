/**
 * Where a Caddy provisioning error happened, and which object made that part of the config.
 *
 * Caddy refuses a config with one error that names its way down the JSON (caddyhttp app.go,
 * routes.go, caddy context.go, caddytls connpolicy.go and pemloader.go, caddy-l4 app.go and
 * routes.go; the same words in Caddy 2.8.4 and 2.11.9), e.g.
 *
 *   loading http app module: provision http: server http-80: setting up route handlers:
 *   route 0: loading handler modules: position 0: loading module 'subroute': provision
 *   http.handlers.subroute: setting up subroutes: route 1: loading handler modules: …
 *
 * `errorLocation` turns that into a location of the source map (config.ts
 * caddySourceMap): `/http/servers/http-80/routes/0/handle/0/routes/1`; `sourcesAt` finds the
 * objects that made the nearest owned part at or above it. Pure.
 */
import type { CaddySourceMap, SourceObject } from ".";

/** The steps of a subroute handler's error, between a route and its subroute's route. */
const SUBROUTE =
  /^loading handler modules: position (\d+): loading module 'subroute': provision http\.handlers\.subroute: setting up subroutes: /;

/**
 * The steps of a route table's error (proxy/routetable), between a route and the route list of
 * one of its hosts: `host "<key>": ` then that list's `route N: …`.
 */
const ROUTE_TABLE =
  /^loading handler modules: position (\d+): loading module 'kengine_route_table': provision http\.handlers\.kengine_route_table: host "([^"]+)": /;

/** A route table's backend (shared dispatch): `backend "<id>": ` then the backend's handler. */
const TABLE_BACKEND =
  /^loading handler modules: position (\d+): loading module 'kengine_route_table': provision http\.handlers\.kengine_route_table: backend "([^"]+)": /;

/** The config location a Caddy error names; undefined when it names none we render. */
export function errorLocation(message: string): string | undefined {
  const http = /loading http app module: provision http: server (\S+?): (.*)$/s.exec(message);
  if (http) {
    const [, server, rest] = http;
    const policy = /^setting up TLS connection policies: connection policy (\d+): /.exec(rest);
    if (policy) return `/http/servers/${server}/tls_connection_policies/${policy[1]}`;
    const handlers = "setting up route handlers: ";
    if (!rest.startsWith(handlers)) return undefined;
    return routeChain(`/http/servers/${server}/routes`, rest.slice(handlers.length));
  }
  const pem = /loading tls app module: provision tls: loading certificates: PEM pair (\d+): /.exec(
    message,
  );
  if (pem) return `/tls/certificates/load_pem/${pem[1]}`;
  const l4 = /loading layer4 app module: provision layer4: server '([^']+)': route (\d+): /.exec(
    message,
  );
  if (l4) return `/layer4/servers/${l4[1]}/routes/${l4[2]}`;
  return undefined;
}

/** `route N: …` steps, through subroutes, from a route list at `at`. */
function routeChain(at: string, rest: string): string | undefined {
  let location: string | undefined;
  for (;;) {
    const route = /^route (\d+): /.exec(rest);
    if (!route) return location;
    location = `${at}/${route[1]}`;
    rest = rest.slice(route[0].length);
    const sub = SUBROUTE.exec(rest);
    const table = sub ? undefined : ROUTE_TABLE.exec(rest);
    const backend = sub || table ? undefined : TABLE_BACKEND.exec(rest);
    if (backend) return `${location}/handle/${backend[1]}/backends/${backend[2]}`;
    if (sub) at = `${location}/handle/${sub[1]}/routes`;
    else if (table) at = `${location}/handle/${table[1]}/hosts/${table[2]}`;
    else return location;
    rest = rest.slice((sub ?? table)![0].length);
  }
}

/**
 * The location a route table delta's error names (the admin API's 400 for
 * `POST /kengine/route-tables/<id>`: `host "<key>": route N: …`), inside the table at
 * `table` (the handler's location, e.g. `/http/servers/http-80/routes/0/handle/0`).
 */
export function deltaErrorLocation(table: string, message: string): string | undefined {
  const host = /host "([^"]+)": (.*)$/s.exec(message);
  if (!host) return undefined;
  const at = `${table}/hosts/${host[1]}`;
  return routeChain(at, host[2]) ?? at;
}

/** The objects that made the part at `location`, or the nearest owned part above it. */
export function sourcesAt(map: CaddySourceMap, location: string): readonly SourceObject[] {
  for (let at = location; at.length > 0; at = at.slice(0, at.lastIndexOf("/"))) {
    const found = map.get(at);
    if (found) return found;
  }
  return [];
}

/** The objects a Caddy error is traced to through `map`: none when it names no owned part. */
export function sourcesOfError(map: CaddySourceMap, message: string): readonly SourceObject[] {
  const location = errorLocation(message);
  return location === undefined ? [] : sourcesAt(map, location);
}
