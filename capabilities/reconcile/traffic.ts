/**
 * The proxies' own traffic metrics, summed per Gateway and route: pure functions, and a
 * module-level memo of every Gateway's routes per snapshot route maps (byGatewayCache).
 *
 * Each proxy's Caddy counts requests since its config was last loaded: every /load (ours) and
 * every restart starts its counters from zero. So a proxy's counters are read as deltas from its
 * previous reading: a counter that went down, or a change of
 * `caddy_config_last_reload_success_timestamp_seconds`, means the proxy started counting anew
 * and its whole value is new traffic. Reading the same proxy twice adds nothing (several
 * scrapes of the controller do not double count); a proxy seen for the first time contributes
 * what it counted since its last load. The totals only grow.
 *
 * Caddy labels requests by server (our listener's server), handler, code, method and, where
 * sealing turned it on, host; every request passes the first handler of its server, so the
 * largest count across handlers is the request count. The host is attributed to the Gateway's
 * route that serves it (the only route whose hostnames match it; "" when none or several do,
 * e.g. Caddy's "_other", and when the proxy has no host label: an HTTPS Gateway, Kengine; see
 * caddy/seal.ts TrafficMetricsMode).
 *
 * Bounded labels: the controller's series are (gateway, route, server, code) with routes that
 * exist (or ""), our servers, and three-digit status codes; what a proxy reports is bounded by its
 * configuration (sealing) and by the size cap on /metrics (proxies/admin-client.ts).
 */
import type { Sample } from "../proxies/prom-text";
import type { KubeObject, Snapshot } from "../snapshot";

export const REQUESTS_SAMPLE = "caddy_http_request_duration_seconds_count";
export const RELOAD_SAMPLE = "caddy_config_last_reload_success_timestamp_seconds";
/** Servers of ours, not traffic. */
const INTERNAL_SERVERS = new Set(["kengine-management", "kengine-readiness"]);
/** Caddy's code label is a status code; anything else is folded into "". */
const STATUS_CODE = /^[1-9][0-9]{2}$/;

export interface TrafficLabels {
  readonly gateway: string;
  readonly route: string;
  readonly server: string;
  readonly code: string;
}

export interface RouteHosts {
  /** "namespace/name" of the route. */
  readonly route: string;
  /** Its hostnames (empty: every hostname of the listener). */
  readonly hostnames: readonly string[];
}

const hostMatches = (pattern: string, host: string): boolean =>
  pattern.startsWith("*.")
    ? host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1
    : pattern === host;

/** The one route serving `host`, or "" (none, several, or an unknown host). */
export function routeForHost(routes: readonly RouteHosts[], host: string | undefined): string {
  if (host === undefined || host === "_other") {
    const any = routes.filter(r => r.hostnames.length === 0);
    return routes.length === 1 && any.length === 1 ? any[0]!.route : "";
  }
  const h = host.toLowerCase().replace(/:\d+$/, "");
  const exact = routes.filter(r => r.hostnames.some(p => hostMatches(p.toLowerCase(), h)));
  if (exact.length === 1) return exact[0]!.route;
  if (exact.length > 1) return "";
  const any = routes.filter(r => r.hostnames.length === 0);
  return any.length === 1 ? any[0]!.route : "";
}

interface RouteLike extends KubeObject {
  readonly spec?: {
    readonly hostnames?: readonly string[];
    readonly parentRefs?: readonly {
      readonly group?: string;
      readonly kind?: string;
      readonly name: string;
      readonly namespace?: string;
    }[];
  };
}

/**
 * Every Gateway's HTTP and gRPC routes, made in one pass over the routes and kept while the
 * snapshot's route maps are the same objects (each build asks for every Gateway).
 */
const byGatewayCache = new WeakMap<
  object,
  { readonly grpc: object; readonly byGateway: ReadonlyMap<string, readonly RouteHosts[]> }
>();

function routesByGateway(snapshot: Snapshot): ReadonlyMap<string, readonly RouteHosts[]> {
  const http = snapshot.objects.HTTPRoute;
  const grpc = snapshot.objects.GRPCRoute;
  const hit = byGatewayCache.get(http);
  if (hit && hit.grpc === grpc) return hit.byGateway;
  const byGateway = new Map<string, RouteHosts[]>();
  for (const routes of [http, grpc])
    for (const o of routes.values()) {
      const r = o as RouteLike;
      const ns = r.metadata.namespace ?? "";
      const parents = new Set<string>();
      for (const p of r.spec?.parentRefs ?? [])
        if (
          (p.group ?? "gateway.networking.k8s.io") === "gateway.networking.k8s.io" &&
          (p.kind ?? "Gateway") === "Gateway"
        )
          parents.add(`${p.namespace ?? ns}/${p.name}`);
      for (const gw of parents) {
        let list = byGateway.get(gw);
        if (!list) byGateway.set(gw, (list = []));
        list.push({ route: `${ns}/${r.metadata.name}`, hostnames: r.spec?.hostnames ?? [] });
      }
    }
  // code-point order: cheaper than localeCompare, and the same whatever the locale
  for (const list of byGateway.values())
    list.sort((a, b) => (a.route < b.route ? -1 : a.route > b.route ? 1 : 0));
  byGatewayCache.set(http, { grpc, byGateway });
  return byGateway;
}

/** The HTTP and gRPC routes attached to a Gateway (by parentRef), with their hostnames. */
export function gatewayRoutes(
  snapshot: Snapshot,
  namespace: string,
  name: string,
): readonly RouteHosts[] {
  return routesByGateway(snapshot).get(`${namespace}/${name}`) ?? [];
}

interface ProxyReading {
  readonly reloadedAt: number | undefined;
  readonly counts: ReadonlyMap<string, number>;
}

const keyOf = (l: TrafficLabels) => JSON.stringify([l.gateway, l.route, l.server, l.code]);

export class TrafficTotals {
  readonly #last = new Map<string, ProxyReading>();
  readonly #totals = new Map<string, { labels: TrafficLabels; value: number }>();

  /**
   * One reading of a proxy's metrics. Returns the increments it added (for a Prometheus counter).
   */
  observe(
    proxy: string,
    gateway: string,
    samples: readonly Sample[],
    routeOf: (host: string | undefined) => string,
  ): { labels: TrafficLabels; delta: number }[] {
    const reloadedAt = samples.find(s => s.name === RELOAD_SAMPLE)?.value;
    // requests per (server, host, code): the largest count across handlers
    const counts = new Map<string, number>();
    const labelsOf = new Map<string, { server: string; host?: string; code: string }>();
    for (const s of samples) {
      if (s.name !== REQUESTS_SAMPLE) continue;
      const server = s.labels.server ?? "";
      if (INTERNAL_SERVERS.has(server)) continue;
      const code = STATUS_CODE.test(s.labels.code ?? "") ? s.labels.code! : "";
      const key = JSON.stringify([server, s.labels.host, code, s.labels.method]);
      counts.set(key, Math.max(counts.get(key) ?? 0, s.value));
      labelsOf.set(key, { server, host: s.labels.host, code });
    }
    const before = this.#last.get(proxy);
    let reset = before !== undefined && before.reloadedAt !== reloadedAt;
    if (before && !reset)
      for (const [k, v] of counts) if (v < (before.counts.get(k) ?? 0)) reset = true;
    this.#last.set(proxy, { reloadedAt, counts });
    const added: { labels: TrafficLabels; delta: number }[] = [];
    for (const [k, v] of counts) {
      const delta = !before || reset ? v : v - (before.counts.get(k) ?? 0);
      if (!(delta > 0)) continue;
      const l = labelsOf.get(k)!;
      const labels: TrafficLabels = {
        gateway,
        route: routeOf(l.host),
        server: l.server,
        code: l.code,
      };
      const tk = keyOf(labels);
      const t = this.#totals.get(tk);
      if (t) t.value += delta;
      else this.#totals.set(tk, { labels, value: delta });
      added.push({ labels, delta });
    }
    return added;
  }

  /** Drops the readings of proxies that are gone (their counts stay in the totals). */
  retain(proxies: ReadonlySet<string>): void {
    for (const p of [...this.#last.keys()]) if (!proxies.has(p)) this.#last.delete(p);
  }

  totals(): readonly { labels: TrafficLabels; value: number }[] {
    return [...this.#totals.values()];
  }
}
