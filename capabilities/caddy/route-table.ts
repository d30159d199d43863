/**
 * The Bundled proxy's host-indexed route table (proxy/routetable, handler
 * `kengine_route_table`): on a proxy with the `routeTable` capability, an HTTP server's
 * listener routes become one table whose `hosts` map holds, per listener hostname (`*` for a
 * listener without one), exactly the route list the listener's subroute holds on the other
 * flavours. The proxy picks one list per request (exact host, longest wildcard, `*`) as the
 * listener routes of the linear shape do (most specific listener first), so behaviour is the
 * same (proxy/routetable/golden_test.go checks it on every golden). A route change then
 * changes only the lists of the hosts it is attached to, which the controller sends as a
 * per-host delta instead of a `/load` (proxies/route-tables.ts). Pure.
 */
import { createHash } from "node:crypto";
import { CaddyHandler, CaddyRoute } from "./types";

export const ROUTE_TABLE_HANDLER = "kengine_route_table" as const;

/** The table's key for a listener hostname (the proxy lower-cases keys; `*`: no hostname). */
export const tableKey = (hostname: string | undefined): string =>
  hostname === undefined ? "*" : hostname.toLowerCase();

/** A table id, unique per config and stable across builds: `<namespace>/<gateway>/<server>`. */
export const tableId = (namespace: string, gateway: string, server: string): string =>
  `${namespace}/${gateway}/${server}`;

/** One listener of a server: its key and the route list its subroute would hold. */
export interface TableListener {
  readonly hostname: string | undefined;
  readonly routes: readonly CaddyRoute[];
}

/**
 * The server route holding the table. Not terminal: a list that only names a backend (shared
 * dispatch) lets the request go on to the server's dispatch routes, as the listener subroute
 * does. Hosts no listener takes get the linear shape's final 404 (key `*`), unless a listener
 * without hostname is there. The first listener of a key wins, as in the linear group.
 */
export function routeTableRoute(
  id: string,
  listeners: readonly TableListener[],
  notFound: () => CaddyRoute,
): { readonly route: CaddyRoute; readonly hosts: Readonly<Record<string, readonly CaddyRoute[]>> } {
  const hosts: Record<string, readonly CaddyRoute[]> = {};
  for (const l of listeners) {
    const key = tableKey(l.hostname);
    if (!(key in hosts)) hosts[key] = l.routes;
  }
  if (!("*" in hosts)) hosts["*"] = [notFound()];
  const handler: CaddyHandler = { handler: ROUTE_TABLE_HANDLER, id, hosts };
  return { route: { handle: [handler] }, hosts };
}

/**
 * A shared-dispatch id named by its content, so that a route change does not rename the
 * backend sets of other routes (positional ids would change the lists of unrelated hosts).
 */
export const contentDispatchId = (key: string): string =>
  `b${createHash("sha256").update(key).digest("hex").slice(0, 12)}`;
