/**
 * The traffic stage, on its own timer: reads every proxy's own /metrics over the admin channel
 * and adds its new traffic to the per-Gateway, per-route totals (traffic.ts). The proxies to
 * read come from the last push (`follow`); their routes are looked up when read, not per build.
 */
import { fleetMetrics } from "../metrics/fleet";
import { AdminChannels, parsePrometheusText } from "../proxies";
import type { Snapshot } from "../snapshot";
import type { Logger } from "./logger";
import type { TrafficTarget } from "./push-stage";
import {
  RELOAD_SAMPLE,
  REQUESTS_SAMPLE,
  RouteHosts,
  TrafficTotals,
  gatewayRoutes,
  routeForHost,
} from "./traffic";

export interface TrafficInput {
  /** Reads a proxy's /metrics (the admin channel). */
  readonly admin: Pick<AdminChannels, "metrics">;
  /** The snapshot of now: each Gateway's routes and hostnames. */
  readonly snapshot: Snapshot;
  /** Followers read nothing: they have no proxies. */
  readonly leader: boolean;
}

export class TrafficStage {
  /** The proxies' traffic, summed per Gateway and route. */
  readonly totals = new TrafficTotals();
  #targets: readonly TrafficTarget[] = [];

  constructor(private readonly log: Pick<Logger, "debug">) {}

  /** The proxies the last push went to (push-stage.ts). */
  follow(targets: readonly TrafficTarget[]): void {
    this.#targets = targets;
  }

  /** One reading of every proxy. Never throws; an unreachable proxy is read next time. */
  async collect(input: TrafficInput): Promise<void> {
    const targets = input.leader ? this.#targets : [];
    const { admin, snapshot } = input;
    // Each Gateway's routes and hostnames, from the snapshot of now (one pass over the routes,
    // kept while the route maps are unchanged: traffic.ts).
    const routesOf = (gateway: string): readonly RouteHosts[] => {
      const [namespace, name] = gateway.split("/") as [string, string];
      return gatewayRoutes(snapshot, namespace, name);
    };
    await Promise.all(
      targets.map(async ({ gateway, target }) => {
        const text = await admin.metrics(target.endpoint);
        if (!text.ok) {
          this.log.debug("cannot read proxy metrics", {
            proxy: target.endpoint.name,
            error: text.error.message,
          });
          return;
        }
        const samples = parsePrometheusText(
          text.value,
          n => n === REQUESTS_SAMPLE || n === RELOAD_SAMPLE,
        );
        for (const { labels, delta } of this.totals.observe(
          target.endpoint.name,
          gateway,
          samples,
          host => routeForHost(routesOf(gateway), host),
        ))
          fleetMetrics.requests(labels, delta);
      }),
    );
    this.totals.retain(new Set(targets.map(t => t.target.endpoint.name)));
  }
}
