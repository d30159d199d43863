/** Automatic HTTPS metrics: certificate expiry per listener, orders and their results. */
import { Counter, Gauge } from "prom-client";
import { METRIC_PREFIX, registry } from "../metrics";

const expiry = new Gauge({
  name: `${METRIC_PREFIX}acme_certificate_expiry_timestamp_seconds`,
  help: "When the ACME certificate a listener serves expires (Unix time), per Gateway and listener.",
  labelNames: ["gateway", "listener", "name"],
  registers: [registry],
});
const orders = new Counter({
  name: `${METRIC_PREFIX}acme_orders_total`,
  help: "ACME orders placed with the CA (newOrder requests), by issuer.",
  labelNames: ["issuer"],
  registers: [registry],
});
const results = new Counter({
  name: `${METRIC_PREFIX}acme_order_results_total`,
  help: "Finished ACME orders by issuer and result (issued, failed).",
  labelNames: ["issuer", "result"],
  registers: [registry],
});

export const acmeMetrics = {
  /** The whole set of listeners with a certificate: series of others are dropped. */
  expiry(
    rows: readonly { gateway: string; listener: string; name: string; notAfter: Date }[],
  ): void {
    expiry.reset();
    for (const r of rows)
      expiry.set(
        { gateway: r.gateway, listener: r.listener, name: r.name },
        Math.floor(r.notAfter.getTime() / 1000),
      );
  },
  order(issuer: string): void {
    orders.inc({ issuer });
  },
  result(issuer: string, result: "issued" | "failed"): void {
    results.inc({ issuer, result });
  },
};
