/**
 * 1,000 HTTPRoutes created at once against one Gateway (module under `pepr dev`): every route
 * is Accepted with our parent entry, the listener counts 1,000 attached routes, and the number
 * of status writes is counted twice: by the module's own metrics and by the API server's
 * apiserver_request_total (PATCH of the status subresource). The counts are printed; the test asserts only
 * what must hold whatever the speed (about one write per route, a handful per Gateway).
 */
import { KubeConfig } from "@kubernetes/client-node";
import { request } from "node:https";
import type { RequestOptions } from "node:https";
import { kubeClient } from "../../capabilities/kube/client";
import { PARENT_STATUS_INTERVAL_MS } from "../../capabilities/status";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { PeprDev, startModule } from "../support/module";

const ROUTES = Number(process.env.KG_SCALE_ROUTES ?? 1000);
const CTRL = "kengine.io/gateway-controller";

/** GET a text endpoint: the module's /metrics (self-signed) or the API server's. */
async function getText(url: string, kc?: KubeConfig): Promise<string> {
  const u = new URL(url);
  const opts: RequestOptions = {
    method: "GET",
    hostname: u.hostname,
    port: u.port,
    path: u.pathname,
    timeout: 30_000,
    ...(kc ? {} : { rejectUnauthorized: false }),
  };
  if (kc) await kc.applyToHTTPSOptions(opts);
  return new Promise((resolve, reject) => {
    const req = request(opts, res => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", d => (body += d));
      res.on("end", () =>
        res.statusCode === 200
          ? resolve(body)
          : reject(new Error(`${url}: HTTP ${res.statusCode}`)),
      );
    });
    req.on("timeout", () => req.destroy(new Error(`${url}: timed out`)));
    req.on("error", reject);
    req.end();
  });
}

/** Sum of every sample of `name` whose labels contain all of `labels`. */
function sum(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name + "{") && !line.startsWith(name + " ")) continue;
    const space = line.lastIndexOf(" ");
    const head = line.slice(0, space);
    if (Object.entries(labels).every(([k, v]) => head.includes(`${k}="${v}"`)))
      total += Number(line.slice(space + 1));
  }
  return total;
}

interface Counts {
  routeWrites: number;
  gatewayWrites: number;
  conflicts: number;
  noops: number;
  apiRoutePatches: number;
  apiGatewayPatches: number;
}

describe(`${ROUTES} HTTPRoutes applied at once`, () => {
  let dev: PeprDev;
  let ns: string;
  const cls = `scale-${Date.now().toString(36)}`;
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const server = kc.getCurrentCluster()!.server;

  const counts = async (): Promise<Counts> => {
    const [ours, api] = await Promise.all([
      getText("https://localhost:3000/metrics"),
      getText(`${server}/metrics`, kc),
    ]);
    const apiPatches = (resource: string) =>
      sum(api, "apiserver_request_total", { verb: "PATCH", resource, subresource: "status" });
    return {
      routeWrites: sum(ours, "kengine_gateway_status_writes_total", { kind: "HTTPRoute" }),
      gatewayWrites: sum(ours, "kengine_gateway_status_writes_total", { kind: "Gateway" }),
      conflicts: sum(ours, "kengine_gateway_status_conflicts_total"),
      noops: sum(ours, "kengine_gateway_status_noops_total", { kind: "HTTPRoute" }),
      apiRoutePatches: apiPatches("httproutes"),
      apiGatewayPatches: apiPatches("gateways"),
    };
  };

  beforeAll(async () => {
    ns = createNamespace("scale");
    kubectlOk(
      ["apply", "-f", "-"],
      `
apiVersion: gateway.kengine.io/v1alpha1
kind: KengineParameters
metadata: {name: none, namespace: ${ns}}
spec:
  proxy: {replicas: 0}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ${cls}}
spec:
  controllerName: ${CTRL}
  parametersRef: {group: gateway.kengine.io, kind: KengineParameters, name: none, namespace: ${ns}}
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: ${ns}}
spec: {ports: [{name: http, port: 8080}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ${ns}}
spec:
  gatewayClassName: ${cls}
  listeners: [{name: http, port: 80, protocol: HTTP}]
`,
    );
    dev = await startModule();
    await eventually(
      "the Gateway to be Accepted",
      () =>
        kubectl([
          "get",
          "gateway",
          "gw",
          "-n",
          ns,
          "-o",
          "jsonpath={.status.conditions[?(@.type=='Accepted')].status}",
        ]).stdout === "True" || undefined,
      120_000,
    );
  });

  afterAll(async () => {
    await dev?.stop();
    kubectl(["delete", "gatewayclass", cls, "--ignore-not-found"]);
    if (ns) deleteNamespace(ns);
  });

  it("attaches every route with one status write each, and few Gateway writes", async () => {
    const client = kubeClient();
    const before = await counts();
    const t0 = Date.now();
    const names = Array.from({ length: ROUTES }, (_, i) => `r-${String(i).padStart(4, "0")}`);
    const queue = [...names];
    const create = async () => {
      for (let n = queue.shift(); n; n = queue.shift()) {
        await client.request(
          "POST",
          `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/httproutes`,
          {
            apiVersion: "gateway.networking.k8s.io/v1",
            kind: "HTTPRoute",
            metadata: { name: n, namespace: ns },
            spec: {
              parentRefs: [{ name: "gw" }],
              hostnames: [`${n}.example.com`],
              rules: [{ backendRefs: [{ name: "echo", port: 8080 }] }],
            },
          },
        );
      }
    };
    await Promise.all(Array.from({ length: 16 }, create));
    const created = Date.now();

    interface Route {
      metadata: { name: string };
      status?: {
        parents?: { controllerName: string; conditions: { type: string; status: string }[] }[];
      };
    }
    const accepted = (r: Route) =>
      r.status?.parents?.some(
        p =>
          p.controllerName === CTRL &&
          p.conditions.some(c => c.type === "Accepted" && c.status === "True"),
      ) ?? false;
    let pending = ROUTES;
    await eventually(
      `all ${ROUTES} routes Accepted and attachedRoutes = ${ROUTES}`,
      async () => {
        const list = await client.request<{ items: Route[] }>(
          "GET",
          `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/httproutes`,
        );
        pending = list.items.filter(r => !accepted(r)).length;
        if (list.items.length !== ROUTES || pending) return undefined;
        const gw = await client.request<{
          status?: { listeners?: { attachedRoutes: number }[] };
        }>("GET", `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/gateways/gw`);
        return gw.status?.listeners?.[0]?.attachedRoutes === ROUTES ? true : undefined;
      },
      600_000,
      250,
    );
    const settled = Date.now();
    // Let trailing writes (and the builds our own writes cause) finish before counting.
    await new Promise(r => setTimeout(r, 5000));
    const after = await counts();
    const d = Object.fromEntries(
      Object.entries(after).map(([k, v]) => [k, v - before[k as keyof Counts]]),
    ) as unknown as Counts;
    console.log(
      `${ROUTES} HTTPRoutes: created in ${created - t0} ms; all Accepted with attachedRoutes=${ROUTES} ` +
        `${settled - created} ms after the last create. Status writes (module metrics): ` +
        `HTTPRoute ${d.routeWrites}, Gateway ${d.gatewayWrites}, conflicts ${d.conflicts}, ` +
        `route no-ops ${d.noops}. API server PATCH */status: httproutes ${d.apiRoutePatches}, ` +
        `gateways ${d.apiGatewayPatches}.`,
    );
    expect(d.routeWrites).toBeGreaterThanOrEqual(ROUTES);
    // The API server saw what the module counted (only this module writes these objects).
    expect(d.apiRoutePatches).toBeGreaterThanOrEqual(d.routeWrites);
    expect(d.routeWrites).toBeLessThanOrEqual(ROUTES * 1.1);
    // A Gateway is written at most once per interval (plus the first write and trailing ones).
    expect(d.gatewayWrites).toBeLessThanOrEqual(
      Math.ceil((settled - t0 + 5000) / PARENT_STATUS_INTERVAL_MS) + 3,
    );
  });
});
