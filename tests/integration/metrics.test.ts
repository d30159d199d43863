/**
 * The controller's metrics on a real scrape: `pepr dev` runs the module, Pepr serves /metrics on
 * https://localhost:3000, and one scrape shows Pepr's metrics and ours (status writes by kind,
 * no-ops, the election state).
 */
import { request } from "node:https";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { PeprDev, startModule } from "../support/module";

/** GET https://localhost:3000/metrics (pepr dev's self-signed certificate). */
const scrape = (): Promise<string> =>
  new Promise((resolve, reject) => {
    const req = request(
      {
        host: "localhost",
        port: 3000,
        path: "/metrics",
        rejectUnauthorized: false,
        timeout: 10_000,
      },
      res => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", d => (body += d));
        res.on("end", () =>
          res.statusCode === 200 ? resolve(body) : reject(new Error(`HTTP ${res.statusCode}`)),
        );
      },
    );
    req.on("timeout", () => req.destroy(new Error("scrape timed out")));
    req.on("error", reject);
    req.end();
  });

/** The value of one sample line (`name{labels} value`), or undefined if absent. */
const sample = (text: string, series: string): number | undefined => {
  const line = text.split("\n").find(l => l.startsWith(series + " "));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe("metrics on the module's /metrics", () => {
  let dev: PeprDev;
  let ns: string;
  const cls = `metrics-${Date.now().toString(36)}`;

  beforeAll(async () => {
    ns = createNamespace("metrics");
    kubectlOk(
      ["apply", "-f", "-"],
      `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ${cls}}
spec: {controllerName: kengine.io/gateway-controller}
`,
    );
    dev = await startModule();
  });

  afterAll(async () => {
    await dev?.stop();
    if (ns) deleteNamespace(ns);
    kubectl(["delete", "gatewayclass", cls, "--ignore-not-found"]);
  });

  it("shows Pepr's metrics and ours in one scrape, counting status writes", async () => {
    await eventually(
      "the GatewayClass to be Accepted",
      () =>
        kubectl([
          "get",
          "gatewayclass",
          cls,
          "-o",
          "jsonpath={.status.conditions[?(@.type=='Accepted')].status}",
        ]).stdout === "True" || undefined,
      120_000,
    );
    const before = await scrape();
    expect(before).toMatch(/^# HELP pepr_errors /m); // Pepr's own
    expect(before).toMatch(/^# TYPE kengine_gateway_status_writes_total counter$/m);
    expect(before).toMatch(
      /^kengine_gateway_is_leader\{lease="kengine-gateway-leader",identity=".+"\} 1$/m,
    );
    // the leader's Lease tries, timed (at least the one that made it leader)
    expect(before).toMatch(
      /^kengine_gateway_lease_attempt_seconds_count\{lease="kengine-gateway-leader",identity=".+",outcome="(acquired|renewed)"\} [1-9]/m,
    );
    const gwWrites = (t: string) =>
      sample(t, 'kengine_gateway_status_writes_total{kind="Gateway"}') ?? 0;
    expect(
      sample(before, 'kengine_gateway_status_writes_total{kind="GatewayClass"}'),
    ).toBeGreaterThan(0);

    kubectlOk(
      ["apply", "-f", "-"],
      `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ${ns}}
spec:
  gatewayClassName: ${cls}
  listeners: [{name: http, port: 80, protocol: HTTP}]
`,
    );
    const after = await eventually(
      "a Gateway status write to be counted",
      async () => {
        const t = await scrape();
        return gwWrites(t) > gwWrites(before) ? t : undefined;
      },
      120_000,
    );
    // Builds that find the stored status already current count as no-ops.
    expect(after).toMatch(/^kengine_gateway_status_noops_total\{kind="GatewayClass"\} [1-9]/m);
    expect(after).toMatch(/^# TYPE kengine_gateway_status_write_failures_total counter$/m);
    expect(after).toMatch(/^# TYPE kengine_gateway_status_conflicts_total counter$/m);
  });
});
