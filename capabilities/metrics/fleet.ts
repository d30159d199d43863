/**
 * The proxy fleet's metrics (capabilities/proxies, reconcile/): pushes by result and proxy, push
 * duration, config size, translation duration, proxies by state, and the proxies' own traffic
 * summed per Gateway and route (reconcile/traffic.ts reads Caddy's /metrics over the admin
 * channel and hands over increments).
 */
import { Counter, Gauge, Histogram } from "prom-client";
import { METRIC_PREFIX, registry } from "./index";

/** Outcome of one push (POST /load): success, or the failure kind of the admin channel. */
export type PushResult = "success" | "rejected" | "connect" | "timeout" | "oversized";
const PUSH_RESULTS: readonly PushResult[] = [
  "success",
  "rejected",
  "connect",
  "timeout",
  "oversized",
];
export type ProxyPhase = "Programmed" | "Pending" | "Failed";
const PHASES: readonly ProxyPhase[] = ["Programmed", "Pending", "Failed"];

const pushes = new Counter({
  name: `${METRIC_PREFIX}proxy_pushes_total`,
  help: "Config pushes and restart checks to proxies, by Gateway, proxy pod and result (success, rejected, connect, timeout, oversized: the answer passed the size cap).",
  labelNames: ["gateway", "proxy", "result"],
  registers: [registry],
});
const pushKinds = new Counter({
  name: `${METRIC_PREFIX}proxy_pushes_by_kind_total`,
  help: "Configs proxies took, by Gateway and kind: load (POST /load, the whole config) or delta (route-table deltas of the Bundled proxy, no reload).",
  labelNames: ["gateway", "kind"],
  registers: [registry],
});
const pushDuration = new Histogram({
  name: `${METRIC_PREFIX}proxy_push_duration_seconds`,
  help: "Time from sending a config to a proxy until it answered that the config is loaded, by Gateway.",
  labelNames: ["gateway"],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});
const configSize = new Gauge({
  name: `${METRIC_PREFIX}proxy_config_bytes`,
  help: "Size of the sealed config the Gateway's proxies should run.",
  labelNames: ["gateway"],
  registers: [registry],
});
const translation = new Histogram({
  name: `${METRIC_PREFIX}translation_duration_seconds`,
  help: "Time to translate the whole snapshot into every Gateway's config and status.",
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
});
const proxies = new Gauge({
  name: `${METRIC_PREFIX}proxies`,
  help: "Proxy pods by Gateway and state (Programmed: runs the current config; Pending; Failed: the last push or check failed).",
  labelNames: ["gateway", "state"],
  registers: [registry],
});
const requests = new Counter({
  name: `${METRIC_PREFIX}proxy_http_requests_total`,
  help: "HTTP requests the Gateway's proxies served (read from each proxy's /metrics, counter resets handled), by Gateway, route (namespace/name; empty when the host matches no single route), Caddy server (one per listener port) and status code.",
  labelNames: ["gateway", "route", "server", "code"],
  registers: [registry],
});

/** Outcome of one write of a Gateway's last-good Secret (reconcile/last-good.ts). */
export type LastGoodResult = "stored" | "too_large" | "failed";
const lastGoodWrites = new Counter({
  name: `${METRIC_PREFIX}last_good_writes_total`,
  help: "Writes of a Gateway's last-good Secret (the config new proxy pods start from), by Gateway and result: stored; too_large (config beyond the Secret limit, new pods start from the bootstrap config); failed.",
  labelNames: ["gateway", "result"],
  registers: [registry],
});

export const fleetMetrics = {
  lastGood(gateway: string, result: LastGoodResult): void {
    lastGoodWrites.inc({ gateway, result });
  },
  push(
    gateway: string,
    proxy: string,
    result: PushResult,
    seconds?: number,
    kind?: "load" | "delta",
  ): void {
    pushes.inc({ gateway, proxy, result });
    if (kind) pushKinds.inc({ gateway, kind });
    if (seconds !== undefined) pushDuration.observe({ gateway }, seconds);
  },
  /** A proxy pod is gone: its per-proxy series go too. */
  forgetProxy(gateway: string, proxy: string): void {
    for (const result of PUSH_RESULTS) pushes.remove({ gateway, proxy, result });
  },
  translated(seconds: number): void {
    translation.observe(seconds);
  },
  /** The current Gateways: config sizes and proxy counts by state (Gateways not named are dropped). */
  gateways(
    current: readonly {
      gateway: string;
      configBytes: number | undefined;
      phases: readonly ProxyPhase[];
    }[],
  ): void {
    configSize.reset();
    proxies.reset();
    for (const g of current) {
      if (g.configBytes !== undefined) configSize.set({ gateway: g.gateway }, g.configBytes);
      for (const state of PHASES)
        proxies.set({ gateway: g.gateway, state }, g.phases.filter(p => p === state).length);
    }
  },
  requests(
    labels: { gateway: string; route: string; server: string; code: string },
    delta: number,
  ): void {
    requests.inc(labels, delta);
  },
};
