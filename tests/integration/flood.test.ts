/**
 * The flood test: hostile traffic stays cheap. A managed Gateway with two
 * real proxy pods (the Bundled build, on the local node) and one HTTPRoute, programmed by a
 * controller running in this process; then 10,000 requests with random Host headers, sent to the
 * proxy pods' own addresses (10.244.0.0/24, the kubelet's pod network). Afterwards:
 *   - each proxy's /metrics (read over the mTLS admin channel, as the controller reads it) has the
 *     same Caddy HTTP series as before the flood (bound: 0 new series; Go runtime series may
 *     vary by a few, bound 20 sample lines in all);
 *   - the controller's own traffic metric has the same series as before (bound: 0);
 *   - the controller's heap (this process, after a forced GC) grew by less than 32 MiB.
 * The heap bound is generous on purpose: this process also runs jest and the HTTP client, and V8
 * keeps freed pages; what it catches is the failure this replaces (before: 2,000 random hosts grew
 * one proxy's /metrics to 7.3 MB, so 10,000 would be ~36 MB a proxy, read and parsed on every
 * collection). Series counts are deterministic and are the real assertion. The figures are printed.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { kubeClient } from "../../capabilities/kube/client";
import { registry } from "../../capabilities/metrics";
import { parsePrometheusText } from "../../capabilities/proxies";
import { proxyServerName } from "../../capabilities/pki/pki";
import { proxyNames } from "../../capabilities/provision";
import { DEFAULT_PROXY_SETTINGS } from "../../capabilities/provision";
import { Reconciler } from "../../capabilities/reconcile";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { echoBackend, quietLogger } from "../support/manifests";
import { adminClient } from "../support/admin-channel";
import { get } from "../support/traffic";

const FLOOD = 10_000;
const CONCURRENCY = 16;
const HOST = "flood.kengine.local";
const GW = "flood";
const HEAP_BOUND_MIB = 32;
const OTHER_LINES_BOUND = 20;

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
const heapMiB = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1024 / 1024;
};

/** One GET to a proxy pod (the support helper sends only to loopback and pod addresses). */
const status = async (address: string, host: string): Promise<number> =>
  (await get(address, host)).status;

const randomHost = (i: number): string =>
  `${i.toString(36)}-${Math.random().toString(36).slice(2, 12)}.attacker.example`;

describe("a flood of random Host headers", () => {
  let ns: string;
  const cls = `flood-${Date.now().toString(36)}`;
  const stops: (() => unknown)[] = [];
  let reconciler: Reconciler;

  beforeAll(async () => {
    ns = createNamespace("flood");
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [
          ...echoBackend(ns),
          {
            apiVersion: "gateway.networking.k8s.io/v1",
            kind: "GatewayClass",
            metadata: { name: cls },
            spec: { controllerName: "kengine.io/gateway-controller" },
          },
          {
            apiVersion: "gateway.networking.k8s.io/v1",
            kind: "Gateway",
            metadata: { name: GW, namespace: ns },
            spec: {
              gatewayClassName: cls,
              listeners: [{ name: "http", port: 80, protocol: "HTTP" }],
            },
          },
          {
            apiVersion: "gateway.networking.k8s.io/v1",
            kind: "HTTPRoute",
            metadata: { name: "echo", namespace: ns },
            spec: {
              parentRefs: [{ name: GW }],
              hostnames: [HOST],
              rules: [{ backendRefs: [{ name: "echo", port: 8080 }] }],
            },
          },
        ],
      }),
    );
    reconciler = new Reconciler({
      kube: kubeClient(),
      log: quietLogger,
      namespace: ns,
      identity: "flood",
      trafficIntervalMs: 0, // the test collects the proxies' traffic itself
      defaults: { ...DEFAULT_PROXY_SETTINGS, replicas: 2 },
      election: { name: "flood", leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 500 },
    });
    await reconciler.start();
    stops.push(() => reconciler.stop());
  });

  afterAll(async () => {
    for (const s of stops.reverse()) await s();
    kubectl(["delete", "gatewayclass", cls, "--ignore-not-found"]);
    if (ns) deleteNamespace(ns);
  });

  it("leaves the proxies' metric series, the controller's traffic series and its heap where they were", async () => {
    // Two ready proxy pods serving the route.
    const pods = await eventually(
      "two ready proxy pods that serve the route",
      async () => {
        const rows = kubectl([
          "get",
          "pods",
          "-n",
          ns,
          "-l",
          `gateway.networking.k8s.io/gateway-name=${GW}`,
          "-o",
          'jsonpath={range .items[*]}{.metadata.name},{.status.podIP},{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}',
        ])
          .stdout.trim()
          .split("\n")
          .filter(Boolean)
          .map(l => l.split(","));
        if (rows.length !== 2 || rows.some(r => r[2] !== "True")) return undefined;
        for (const [, ip] of rows) if ((await status(ip!, HOST)) !== 200) return undefined;
        return rows.map(([name, ip]) => ({ name: name!, ip: ip! }));
      },
      180_000,
      1000,
    );

    // The proxies' /metrics as the controller reads them: mTLS with a client certificate from
    // the controller CA (tests/support/admin-channel.ts).
    const admin = adminClient(ns);
    stops.push(() => admin.close());
    const proxySeries = async () =>
      Promise.all(
        pods.map(async p => {
          const text = await admin.metrics({
            name: p.name,
            address: p.ip,
            port: 19443,
            serverName: proxyServerName(p.name, proxyNames(GW).admin, ns),
          });
          if (!text.ok) throw new Error(`${p.name}: ${text.error.message}`);
          const samples = parsePrometheusText(text.value);
          const http = samples.filter(s => s.name.startsWith("caddy_http_"));
          const hostsOf = (list: typeof http) =>
            [...new Set(list.flatMap(s => (s.labels.host ? [s.labels.host] : [])))].sort();
          return {
            pod: p.name,
            bytes: text.value.length,
            lines: samples.length,
            http: http.length,
            hosts: hostsOf(http),
            // the listener's server, not the management server our own reads go through
            trafficHosts: hostsOf(http.filter(s => !s.labels.server?.startsWith("kengine-"))),
          };
        }),
      );
    const controllerSeries = async () => {
      await reconciler.collectTraffic();
      return parsePrometheusText(await registry.metrics()).filter(
        s =>
          s.name === "kengine_gateway_proxy_http_requests_total" &&
          s.labels.gateway === `${ns}/${GW}`,
      );
    };
    const flood = async (from: number, n: number): Promise<Record<number, number>> => {
      const statuses: Record<number, number> = {};
      let next = from;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < from + n) {
            const i = next++;
            const code = await status(pods[i % pods.length]!.ip, randomHost(i));
            statuses[code] = (statuses[code] ?? 0) + 1;
          }
        }),
      );
      return statuses;
    };

    // Every kind of answer once on each proxy (the route's 200, an unknown host's 404), then measure.
    for (const p of pods) expect(await status(p.ip, HOST)).toBe(200);
    expect(await flood(0, 20)).toEqual({ 404: 20 });
    // Our own reads add the management server's series for a completed GET /metrics once.
    await proxySeries();
    const proxiesBefore = await proxySeries();
    const controllerBefore = await controllerSeries();
    const heapBefore = heapMiB();

    const started = Date.now();
    const statuses = await flood(20, FLOOD);
    const seconds = (Date.now() - started) / 1000;
    // The proxies still serve the route.
    for (const p of pods) expect(await status(p.ip, HOST)).toBe(200);

    const proxiesAfter = await proxySeries();
    const controllerAfter = await controllerSeries();
    const heapAfter = heapMiB();

    const figures = {
      requests: FLOOD,
      statuses,
      seconds,
      proxies: proxiesBefore.map((b, i) => ({
        pod: b.pod,
        metricsBytes: [b.bytes, proxiesAfter[i]!.bytes],
        httpSeries: [b.http, proxiesAfter[i]!.http],
        allSampleLines: [b.lines, proxiesAfter[i]!.lines],
        hosts: proxiesAfter[i]!.hosts,
        trafficHosts: proxiesAfter[i]!.trafficHosts,
      })),
      controllerTrafficSeries: [controllerBefore.length, controllerAfter.length],
      controllerTrafficRoutes: [...new Set(controllerAfter.map(s => s.labels.route))].sort(),
      controllerHeapMiB: [Math.round(heapBefore * 10) / 10, Math.round(heapAfter * 10) / 10],
    };
    console.log(`flood figures: ${JSON.stringify(figures, null, 2)}`);

    expect(statuses).toEqual({ 404: FLOOD }); // every request answered: no route for those hosts
    for (const [i, before] of proxiesBefore.entries()) {
      const after = proxiesAfter[i]!;
      expect(after.http).toBe(before.http);
      expect(after.hosts).toEqual(before.hosts);
      expect(after.trafficHosts).toEqual(["_other", HOST]);
      expect(Math.abs(after.lines - before.lines)).toBeLessThanOrEqual(OTHER_LINES_BOUND);
    }
    expect(controllerAfter.length).toBe(controllerBefore.length);
    expect(figures.controllerTrafficRoutes).toEqual(["", `${ns}/echo`]);
    // The flood was counted (under no route), not lost: all 10,000 404s are in the totals.
    const notFound = (series: typeof controllerAfter) =>
      series.filter(s => s.labels.code === "404").reduce((sum, s) => sum + s.value, 0);
    expect(notFound(controllerAfter) - notFound(controllerBefore)).toBe(FLOOD);
    expect(heapAfter - heapBefore).toBeLessThan(HEAP_BOUND_MIB);
  }, 600_000);
});
