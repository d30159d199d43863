/**
 * Bring your own proxies (docs/proxies.md), against the real cluster with real Caddy pods: the user
 * runs their own Deployment of proxies behind a Service labelled
 * `gateway.kengine.io/owning-gateway`, with admin TLS material from their own CA; the Gateway's
 * KengineParameters say `mode: External` and name the client certificate Secret. The controller
 * programs those pods like managed ones, provisions nothing, and traffic flows.
 */
import { podManagementSpec } from "../../capabilities/workload";
import { request } from "node:http";
import { join } from "node:path";
import { kubeClient } from "../../capabilities/kube/client";
import { registry } from "../../capabilities/metrics";
import { parsePrometheusText } from "../../capabilities/proxies";
import { bootstrapConfig } from "../../capabilities/caddy";
import {
  createAuthority,
  generateKeyPair,
  issueClientCertificate,
  issueServerCertificate,
  proxyServerNames,
} from "../../capabilities/pki/pki";
import { Reconciler } from "../../capabilities/reconcile";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { repoRoot } from "../support/paths";
import { echoBackend, quietLogger } from "../support/manifests";

function get(address: string, host: string, path = "/"): Promise<{ status: number; body: string }> {
  return new Promise(resolve => {
    const req = request(
      { host: address, port: 80, path, headers: { Host: host }, timeout: 5000, agent: false },
      res => {
        let body = "";
        res.on("data", d => (body += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", () => resolve({ status: 0, body: "" }));
    req.end();
  });
}

const must = <T>(r: { ok: true; value: T } | { ok: false; error: string }): T => {
  if (!r.ok) throw new Error(r.error);
  return r.value;
};

describe("bring-your-own proxies", () => {
  let ns: string;
  const cls = `byo-${Date.now().toString(36)}`;
  const stops: (() => unknown)[] = [];
  const fleetEvents: string[] = [];
  let reconciler: Reconciler;
  const host = "byo.kengine.local";
  const programmed = () =>
    kubectl([
      "get",
      "gateway",
      "edge",
      "-n",
      ns,
      "-o",
      "jsonpath={.status.conditions[?(@.type=='Programmed')].status}|{.status.conditions[?(@.type=='Programmed')].message}",
    ]).stdout;

  beforeAll(async () => {
    // the CRD with mode/external (the running cluster may have an older one)
    kubectlOk([
      "apply",
      "--server-side",
      "--force-conflicts",
      "-f",
      join(repoRoot, "deploy/crds/gateway.kengine.io_kengineparameters.yaml"),
    ]);
    ns = createNamespace("byo");
    // The user's own admin CA: serving certificate for the proxies, client certificate for the controller.
    const now = new Date(Date.now() - 60_000);
    const ca = must(
      createAuthority({
        commonName: "my proxies admin CA",
        keys: generateKeyPair(),
        notBefore: now,
        lifetimeDays: 2,
      }),
    );
    const serving = must(
      issueServerCertificate(ca, {
        commonName: `my-proxies.${ns}.svc`,
        dnsNames: proxyServerNames("my-proxies", ns),
        keys: generateKeyPair(),
        notBefore: now,
        lifetimeDays: 1,
      }),
    );
    const client = must(
      issueClientCertificate(ca, {
        commonName: "kengine controller",
        keys: generateKeyPair(),
        notBefore: now,
        lifetimeDays: 1,
      }),
    );
    const boot = bootstrapConfig(podManagementSpec(ca.certificatePem));
    if (!boot.ok) throw new Error(boot.error.join("; "));
    const bootstrap = boot.value;
    const secret = (name: string, data: Record<string, string>) => ({
      apiVersion: "v1",
      kind: "Secret",
      type: "kubernetes.io/tls",
      metadata: { name, namespace: ns },
      stringData: data,
    });
    const manifests = [
      secret("my-proxies-serving", {
        "tls.crt": serving.certificatePem,
        "tls.key": serving.privateKey.reveal(),
      }),
      secret("my-proxies-admin-client", {
        "tls.crt": client.certificatePem,
        "tls.key": client.privateKey.reveal(),
        "ca.crt": ca.certificatePem,
      }),
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "my-proxies-bootstrap", namespace: ns },
        data: { "caddy.json": JSON.stringify(bootstrap) },
      },
      {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "my-proxies", namespace: ns },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: "my-proxies" } },
          template: {
            metadata: { labels: { app: "my-proxies" } },
            spec: {
              containers: [
                {
                  name: "caddy",
                  image: "docker.io/library/caddy:2.11",
                  command: ["caddy", "run", "--config", "/etc/kengine/bootstrap/caddy.json"],
                  env: [
                    {
                      name: "KENGINE_POD_IP",
                      valueFrom: { fieldRef: { fieldPath: "status.podIP" } },
                    },
                    { name: "XDG_CONFIG_HOME", value: "/var/lib/kengine/config" },
                    { name: "XDG_DATA_HOME", value: "/var/lib/kengine/data" },
                  ],
                  ports: [
                    { name: "http", containerPort: 80 },
                    { name: "admin", containerPort: 19443 },
                  ],
                  readinessProbe: { httpGet: { path: "/ready", port: 19080 }, periodSeconds: 2 },
                  volumeMounts: [
                    { name: "tls", mountPath: "/etc/kengine/management", readOnly: true },
                    { name: "bootstrap", mountPath: "/etc/kengine/bootstrap", readOnly: true },
                    { name: "data", mountPath: "/var/lib/kengine" },
                    // the admin socket's directory, the pod's own (deploy/proxy/README.md)
                    { name: "tmp", mountPath: "/tmp" },
                  ],
                },
              ],
              volumes: [
                { name: "tls", secret: { secretName: "my-proxies-serving" } },
                { name: "bootstrap", configMap: { name: "my-proxies-bootstrap" } },
                { name: "data", emptyDir: {} },
                { name: "tmp", emptyDir: {} },
              ],
            },
          },
        },
      },
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: {
          name: "my-proxies",
          namespace: ns,
          labels: { "gateway.kengine.io/owning-gateway": "edge" },
        },
        spec: {
          type: "LoadBalancer",
          selector: { app: "my-proxies" },
          ports: [
            { name: "http", port: 80, targetPort: 80 },
            { name: "admin", port: 19443, targetPort: 19443 },
          ],
        },
      },
      ...echoBackend(ns),
      {
        apiVersion: "gateway.kengine.io/v1alpha1",
        kind: "KengineParameters",
        metadata: { name: "byo", namespace: ns },
        spec: {
          mode: "External",
          external: { clientCertificateSecretName: "my-proxies-admin-client" },
        },
      },
      {
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "GatewayClass",
        metadata: { name: cls },
        spec: { controllerName: "kengine.io/gateway-controller" },
      },
      {
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "Gateway",
        metadata: { name: "edge", namespace: ns },
        spec: {
          gatewayClassName: cls,
          infrastructure: {
            parametersRef: { group: "gateway.kengine.io", kind: "KengineParameters", name: "byo" },
          },
          listeners: [{ name: "http", port: 80, protocol: "HTTP" }],
        },
      },
      {
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "HTTPRoute",
        metadata: { name: "echo", namespace: ns },
        spec: {
          parentRefs: [{ name: "edge" }],
          hostnames: [host],
          rules: [{ backendRefs: [{ name: "echo", port: 8080 }] }],
        },
      },
    ];
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({ apiVersion: "v1", kind: "List", items: manifests }),
    );

    const r = new Reconciler({
      onFleetEvent: e => fleetEvents.push(`${e.type} ${e.name}`),
      kube: kubeClient(),
      log: quietLogger,
      namespace: ns,
      identity: "byo",
      trafficIntervalMs: 0, // the test reads the proxies' metrics itself
      election: { name: "byo", leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 500 },
    });
    reconciler = r;
    await r.start();
    stops.push(() => r.stop());
  });

  afterAll(async () => {
    for (const s of stops.reverse()) await s();
    kubectl(["delete", "gatewayclass", cls, "--ignore-not-found"]);
    if (ns) deleteNamespace(ns);
  });

  it("programs the user's proxies over their own mTLS credentials; traffic flows", async () => {
    const status = await eventually(
      "the Gateway to be Programmed by both proxies",
      () => (programmed().startsWith("True|2/2") ? programmed() : undefined),
      180_000,
      500,
    );
    expect(status).toMatch(/^True\|2\/2 proxies run the current configuration$/);
    const address = kubectlOk([
      "get",
      "gateway",
      "edge",
      "-n",
      ns,
      "-o",
      "jsonpath={.status.addresses[0].value}",
    ]);
    expect(address).toMatch(/^127\.20\./);
    const res = await eventually("a 200 from the backend through the user's proxies", async () => {
      const r = await get(address, host, "/byo");
      return r.status === 200 ? r : undefined;
    });
    expect(JSON.parse(res.body)).toMatchObject({ namespace: ns, path: "/byo" });

    // Nothing provisioned: no Deployment, Services, Secret or ConfigMap of ours.
    const ours = kubectlOk([
      "get",
      "deployments,daemonsets,services,secrets,configmaps",
      "-n",
      ns,
      "-l",
      "app.kubernetes.io/managed-by=kengine-gateway",
      "-o",
      "name",
    ]);
    // (the controller CA Secret is there only because this test runs the controller in this namespace)
    expect(
      ours
        .trim()
        .split("\n")
        .filter(l => l && l !== "secret/kengine-gateway-admin-ca"),
    ).toEqual([]);

    // One KengineProxy per pod, Synced, channel verified with the user's serving certificate.
    const rows = await eventually(
      "two Synced KengineProxy objects",
      () => {
        const out = kubectl([
          "get",
          "kengineproxies",
          "-n",
          ns,
          "-o",
          'jsonpath={range .items[*]}{.spec.pod},{.status.conditions[0].status},{.status.channel.state}{"\\n"}{end}',
        ])
          .stdout.trim()
          .split("\n")
          .filter(Boolean);
        return out.length === 2 && out.every(l => l.split(",")[1] === "True") ? out : undefined;
      },
      60_000,
    );
    for (const row of rows) expect(row).toMatch(/^my-proxies-.*,True,Verified$/);
  });

  it("shows the fleet and the proxies' own traffic on the controller's /metrics, counted once", async () => {
    const gw = `${ns}/edge`;
    const scrape = async () => parsePrometheusText(await registry.metrics());
    const value = async (name: string, labels: Record<string, string>) =>
      (await scrape())
        .filter(s => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        .reduce((sum, s) => sum + s.value, 0);
    const routeRequests = () =>
      value("kengine_gateway_proxy_http_requests_total", {
        gateway: gw,
        route: `${ns}/echo`,
        code: "200",
      });
    const address = kubectlOk([
      "get",
      "gateway",
      "edge",
      "-n",
      ns,
      "-o",
      "jsonpath={.status.addresses[0].value}",
    ]);

    // The gauges show the fleet as of the controller's last build: a push in flight (the periodic
    // resync, an endpoint change) counts its proxy Pending until the build that follows it.
    const byState = await eventually(
      "both proxies Programmed on /metrics",
      async () => {
        const samples = (await scrape()).filter(
          x => x.name === "kengine_gateway_proxies" && x.labels.gateway === gw,
        );
        const counts = Object.fromEntries(samples.map(x => [x.labels.state, x.value]));
        return counts.Programmed === 2 ? counts : undefined;
      },
      30_000,
    );
    expect(byState).toEqual({ Programmed: 2, Pending: 0, Failed: 0 });
    expect(await value("kengine_gateway_proxy_config_bytes", { gateway: gw })).toBeGreaterThan(
      1000,
    );
    expect(
      await value("kengine_gateway_proxy_pushes_total", { gateway: gw, result: "success" }),
    ).toBeGreaterThanOrEqual(2);
    expect(await value("kengine_gateway_translation_duration_seconds_count", {})).toBeGreaterThan(
      0,
    );

    await reconciler.collectTraffic();
    const before = await routeRequests();
    for (let i = 0; i < 20; i++) expect((await get(address, host, `/n${i}`)).status).toBe(200);
    await reconciler.collectTraffic();
    await reconciler.collectTraffic(); // a second reading adds nothing
    expect((await routeRequests()) - before).toBe(20);
    // a host no route serves is counted apart, never under the route
    expect((await get(address, "nobody.example")).status).toBe(404);
    await reconciler.collectTraffic();
    expect((await routeRequests()) - before).toBe(20);
    expect(
      await value("kengine_gateway_proxy_http_requests_total", {
        gateway: gw,
        route: "",
        code: "404",
      }),
    ).toBeGreaterThanOrEqual(1);

    // A config change reloads both proxies: their counters start from zero, nothing is lost
    // or counted twice.
    const hash = () =>
      kubectl(["get", "kengineproxies", "-n", ns, "-o", "jsonpath={.items[*].status.appliedHash}"])
        .stdout.split(" ")
        .filter(Boolean);
    const old = hash();
    kubectlOk([
      "patch",
      "httproute",
      "echo",
      "-n",
      ns,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { hostnames: [host, "also.byo.kengine.local"] } }),
    ]);
    await eventually(
      "both proxies on the new config",
      () => {
        const h = hash();
        return h.length === 2 &&
          h[0] === h[1] &&
          h[0] !== old[0] &&
          programmed().startsWith("True|2/2")
          ? true
          : undefined;
      },
      60_000,
    );
    for (let i = 0; i < 10; i++) expect((await get(address, host, `/m${i}`)).status).toBe(200);
    await reconciler.collectTraffic();
    expect((await routeRequests()) - before).toBe(30);
  });

  it("names the problem when the credentials Secret goes away, and recovers when it is back", async () => {
    const saved = kubectlOk(["get", "secret", "my-proxies-admin-client", "-n", ns, "-o", "json"]);
    kubectlOk(["delete", "secret", "my-proxies-admin-client", "-n", ns]);
    await eventually(
      "Programmed=False naming the Secret",
      () =>
        programmed() ===
        `False|Secret ${ns}/my-proxies-admin-client (admin client certificate) not found`
          ? true
          : undefined,
      60_000,
    );
    const obj = JSON.parse(saved) as { metadata: Record<string, unknown> };
    obj.metadata = { name: "my-proxies-admin-client", namespace: ns };
    kubectlOk(["create", "-f", "-"], JSON.stringify(obj));
    await eventually(
      "Programmed=True again",
      () => (programmed().startsWith("True|2/2") ? true : undefined),
      60_000,
    );
  });

  it("reports push failures and recoveries as Events on the Gateway, once per streak", async () => {
    const events = (reason: string) =>
      kubectl([
        "get",
        "events", // the core view of our events.k8s.io Events
        "-n",
        ns,
        "--field-selector",
        `reason=${reason},involvedObject.name=edge`,
        "-o",
        'jsonpath={range .items[*]}{.involvedObject.kind}|{.type}|{.reportingComponent}|{.message}{"\\n"}{end}',
      ])
        .stdout.trim()
        .split("\n")
        .filter(Boolean);
    expect(events("PushFailed")).toEqual([]);
    // Credentials from a CA the proxies do not trust (and that did not sign their certificates).
    const other = must(
      createAuthority({
        commonName: "someone else's CA",
        keys: generateKeyPair(),
        notBefore: new Date(Date.now() - 60_000),
        lifetimeDays: 2,
      }),
    );
    const wrong = must(
      issueClientCertificate(other, {
        commonName: "not the controller",
        keys: generateKeyPair(),
        notBefore: new Date(Date.now() - 60_000),
        lifetimeDays: 1,
      }),
    );
    const saved = kubectlOk(["get", "secret", "my-proxies-admin-client", "-n", ns, "-o", "json"]);
    const failedBefore = fleetEvents.filter(e => e.startsWith("failed")).length;
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Secret",
        type: "kubernetes.io/tls",
        metadata: { name: "my-proxies-admin-client", namespace: ns },
        data: {
          "tls.crt": Buffer.from(wrong.certificatePem).toString("base64"),
          "tls.key": Buffer.from(wrong.privateKey.reveal()).toString("base64"),
          "ca.crt": Buffer.from(other.certificatePem).toString("base64"),
        },
      }),
    );
    // Many failed attempts (back-off retries: 3+ per proxy before the first Event, then more)…
    await eventually(
      "10 failed attempts",
      () =>
        fleetEvents.filter(e => e.startsWith("failed")).length - failedBefore >= 10
          ? true
          : undefined,
      90_000,
    );
    const programmedNow = await eventually(
      "Programmed=False naming both proxies",
      () => {
        const p = programmed();
        return /^False\|0\/2 proxies run the current configuration: my-proxies-/.test(p) &&
          new Set(p.match(/my-proxies-[a-z0-9]+-[a-z0-9]+/g)).size === 2
          ? p
          : undefined;
      },
      30_000,
    );
    expect(programmedNow).toContain("connect");
    // …but one Warning per proxy.
    await reconciler.eventsFlushed();
    const failures = await eventually(
      "a PushFailed Event per proxy",
      () => (events("PushFailed").length >= 2 ? events("PushFailed") : undefined),
      30_000,
    );
    expect(failures).toHaveLength(2);
    for (const f of failures)
      expect(f).toMatch(
        new RegExp(
          `^Gateway\\|Warning\\|kengine.io/gateway-controller\\|proxy ${ns}/my-proxies-\\S+: connect: .*\\(retrying with back-off\\)$`,
        ),
      );

    const obj = JSON.parse(saved) as { metadata: Record<string, unknown> };
    obj.metadata = { name: "my-proxies-admin-client", namespace: ns };
    kubectlOk(["apply", "-f", "-"], JSON.stringify(obj));
    await eventually(
      "Programmed=True again",
      () => (programmed().startsWith("True|2/2") ? true : undefined),
      90_000,
    );
    await reconciler.eventsFlushed();
    const recoveries = await eventually(
      "a PushRecovered Event per proxy",
      () => (events("PushRecovered").length >= 2 ? events("PushRecovered") : undefined),
      30_000,
    );
    expect(recoveries).toHaveLength(2);
    for (const r of recoveries)
      expect(r).toMatch(
        /^Gateway\|Normal\|kengine.io\/gateway-controller\|proxy .* runs the current configuration again, after: connect: /,
      );
    expect(events("PushFailed")).toHaveLength(2);
  });
});
