/**
 * `kubectl kengine top [routes|gateways]`: requests per second and 5xx share per route (or per
 * Gateway) over a window, from two scrapes of the leading controller's /metrics. The controller
 * already sums every proxy of a Gateway into `kengine_gateway_proxy_http_requests_total`
 * (reconcile/traffic-stage.ts: each proxy read once, counter resets handled), so the numbers
 * are the fleet's, counted once. Latency percentiles are not shown: the controller does not
 * export the proxies' duration histograms per route. Pure.
 */
import { parsePrometheusText } from "../capabilities/proxies/prom-text";
import type { Sample } from "../capabilities/proxies/prom-text";
import { CellInput, cell, formatTable } from "./table";

export const REQUESTS_METRIC = "kengine_gateway_proxy_http_requests_total";

export interface TopRow {
  readonly gateway: string;
  /** `namespace/name`, or `<no single route>` for hosts no single route owns; absent by Gateway. */
  readonly route?: string;
  readonly requests: number;
  readonly perSecond: number;
  readonly errors5xx: number;
  readonly errorShare: number;
}

export interface TopReport {
  readonly by: "routes" | "gateways";
  readonly windowSeconds: number;
  readonly rows: readonly TopRow[];
}

export const requestSamples = (text: string): Sample[] =>
  parsePrometheusText(text, n => n === REQUESTS_METRIC);

/** Increase of every series between the two scrapes (a series that went down restarted: its new value). */
export function topReport(
  before: readonly Sample[],
  after: readonly Sample[],
  windowSeconds: number,
  by: TopReport["by"] = "routes",
): TopReport {
  const id = (s: Sample) => JSON.stringify(Object.entries(s.labels).sort());
  const earlier = new Map(before.map(s => [id(s), s.value]));
  const groups = new Map<
    string,
    { gateway: string; route?: string; requests: number; errors: number }
  >();
  for (const s of after) {
    const was = earlier.get(id(s)) ?? 0;
    const delta = s.value >= was ? s.value - was : s.value;
    const gateway = s.labels["gateway"] ?? "";
    const route = by === "routes" ? s.labels["route"] || "<no single route>" : undefined;
    const key = `${gateway} ${route ?? ""}`;
    const g = groups.get(key) ?? {
      gateway,
      ...(route !== undefined && { route }),
      requests: 0,
      errors: 0,
    };
    g.requests += delta;
    if ((s.labels["code"] ?? "").startsWith("5")) g.errors += delta;
    groups.set(key, g);
  }
  const rows = [...groups.values()]
    .map(g => ({
      gateway: g.gateway,
      ...(g.route !== undefined && { route: g.route }),
      requests: g.requests,
      perSecond: windowSeconds > 0 ? g.requests / windowSeconds : 0,
      errors5xx: g.errors,
      errorShare: g.requests > 0 ? g.errors / g.requests : 0,
    }))
    .sort(
      (a, b) =>
        b.requests - a.requests ||
        `${a.gateway} ${a.route}`.localeCompare(`${b.gateway} ${b.route}`),
    );
  return { by, windowSeconds, rows };
}

export function formatTop(r: TopReport, colour: boolean): string {
  const headers = [
    "gateway",
    ...(r.by === "routes" ? ["route"] : []),
    "req/s",
    "requests",
    "5xx",
    "5xx%",
  ];
  const rows: CellInput[][] = r.rows.map(x => [
    x.gateway,
    ...(r.by === "routes" ? [x.route] : []),
    x.perSecond.toFixed(1),
    String(x.requests),
    String(x.errors5xx),
    cell(`${(x.errorShare * 100).toFixed(1)}%`, x.errorShare > 0.01 ? "bad" : undefined),
  ]);
  const table = rows.length > 0 ? formatTable(headers, rows, colour) : "No requests counted.";
  return `${table}\n\nOver ${r.windowSeconds} s, every proxy of each Gateway summed by the controller (latency per route is not exported).`;
}
