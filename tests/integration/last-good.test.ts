/**
 * Last known good config on the real cluster with real Bundled proxy pods: a controller
 * (its own process) programs a Gateway with a route and stores the accepted config in the
 * Gateway's last-good Secret; the controller is killed; every proxy pod is deleted; the pods the
 * Deployment starts with no controller running come back serving the route and Ready (they
 * resume from the mounted Secret: the proxy's own log says so); a controller started again
 * adopts them without pushing.
 */
import type { ChildProcess } from "node:child_process";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { startInstance, stopInstance, stopInstances } from "../support/instances";
import { echoBackend } from "../support/manifests";
import { proxyPods as listProxyPods } from "../support/proxy-pods";
import { get } from "../support/traffic";

const GW = "lkg";
const HOST = "lkg.kengine.local";
const SECRET = `${GW}-kengine-last-good`;

describe("last known good config (no controller running)", () => {
  let ns: string;
  const cls = `lkg-${Date.now().toString(36)}`;
  const lease = "lkg";
  const procs: ChildProcess[] = [];

  const jsonpath = (args: string[], path: string): string =>
    kubectl([...args, "-o", `jsonpath=${path}`]).stdout.trim();
  const proxyPods = () => listProxyPods(ns, GW);
  const address = () =>
    jsonpath(["get", "gateway", GW, "-n", ns], "{.status.addresses[0].value}") || undefined;
  const serves = async (addr: string) => (await get(addr, HOST, "/lkg")).status === 200;

  beforeAll(() => {
    ns = createNamespace("lkg");
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({ apiVersion: "v1", kind: "List", items: echoBackend(ns) }),
    );
    kubectlOk(
      ["apply", "-f", "-"],
      `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ${cls}}
spec: {controllerName: kengine.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: ${GW}, namespace: ${ns}}
spec:
  gatewayClassName: ${cls}
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: echo, namespace: ${ns}}
spec:
  parentRefs: [{name: ${GW}}]
  hostnames: ["${HOST}"]
  rules: [{backendRefs: [{name: echo, port: 8080}]}]
`,
    );
  });

  afterAll(async () => {
    await stopInstances(procs);
    kubectl(["delete", "gatewayclass", cls, "--ignore-not-found"]);
    if (ns) deleteNamespace(ns);
  });

  it("a proxy restarted while no controller runs serves its last accepted config, and is adopted without a push", async () => {
    const suffix = Math.random().toString(36).slice(2, 7);
    const first = startInstance(ns, `lkg-a-${suffix}`, lease);
    procs.push(first.proc);

    // 1. Programmed by a controller: the route answers through the Gateway's address.
    const addr = await eventually("the Gateway's address", address, 240_000, 500);
    expect(addr).toMatch(/^127\./);
    await eventually(
      "the route to answer",
      async () => ((await serves(addr)) ? true : undefined),
      180_000,
      500,
    );
    const running = proxyPods();
    expect(running.length).toBeGreaterThan(0);
    const appliedHash = await eventually(
      "the proxy's KengineProxy to show the applied hash",
      () =>
        jsonpath(["get", "kengineproxies", running[0]!.name, "-n", ns], "{.status.appliedHash}") ||
        undefined,
      60_000,
      500,
    );

    // 2. The accepted config is in the Gateway's last-good Secret (a Secret, owned by the Gateway).
    const stored = await eventually(
      "the last-good Secret to hold the applied config",
      () => {
        const out = jsonpath(
          ["get", "secret", SECRET, "-n", ns],
          `{.type},{.metadata.ownerReferences[0].kind},{.metadata.annotations.gateway\\.kengine\\.io/config-hash},{.metadata.annotations.gateway\\.kengine\\.io/config-stored},{.metadata.annotations.gateway\\.kengine\\.io/config-key}`,
        );
        const [type, owner, hash, storedFlag, key] = out.split(",");
        return hash && appliedHash.startsWith(hash.slice(0, 12)) && storedFlag === "true"
          ? { type, owner, hash, key: key! }
          : undefined;
      },
      60_000,
      500,
    );
    expect(stored.type).toBe("Opaque");
    expect(stored.owner).toBe("Gateway");
    const data = jsonpath(["get", "secret", SECRET, "-n", ns], `{.data}`);
    const config = JSON.parse(
      Buffer.from(
        (JSON.parse(data) as Record<string, string>)[stored.key] ?? "",
        "base64",
      ).toString("utf8"),
    ) as { apps: { http: { servers: Record<string, { "@id"?: string }> } } };
    expect(config.apps.http.servers["kengine-readiness"]?.["@id"]).toBe(
      `kengine-config-${stored.hash}`,
    );

    // 3. No controller: kill it (no goodbye), then delete every proxy pod.
    await stopInstance(first.proc, "SIGKILL");
    const oldUids = new Set(running.map(p => p.uid));
    kubectlOk(["delete", "pods", "-n", ns, ...running.map(p => p.name), "--wait=false"]);

    // 4. The Deployment's new pods, started with no controller, become Ready and serve the route.
    const fresh = await eventually(
      "new proxy pods, Ready, and the old ones gone",
      () => {
        const pods = proxyPods();
        return pods.length === running.length &&
          pods.every(p => !oldUids.has(p.uid) && p.ready && !p.deleting)
          ? pods
          : undefined;
      },
      180_000,
      500,
    );
    // Ready is not yet reachable: the load balancer forwards to the Service's EndpointSlices,
    // which the controller-manager updates after the pods turn Ready (seconds under CI's load;
    // a user's cluster has the same lag). So: wait for the first answer, then every one must.
    await eventually(
      "the Service's endpoints to reach the new pods",
      async () => ((await serves(addr)) ? true : undefined),
      60_000,
      250,
    );
    let ok = 0;
    for (let i = 0; i < 20; i++) if (await serves(addr)) ok++;
    expect(ok).toBe(20);
    for (const p of fresh) {
      const log = kubectlOk(["logs", "-n", ns, p.name]);
      // Caddy's own account: it started from the mounted file, not from the bootstrap
      expect(log).toContain("resuming from last configuration");
      expect(log).not.toContain("no autosave file exists");
    }

    // 5. A controller started again adopts the running pods by hash: no push.
    const second = startInstance(ns, `lkg-b-${suffix}`, lease);
    procs.push(second.proc);
    await eventually(
      "the new controller to adopt every proxy",
      () => (second.fleet.filter(e => e === "adopted").length >= fresh.length ? true : undefined),
      180_000,
      500,
    );
    expect(second.fleet).not.toContain("pushed");
    expect(second.fleet).not.toContain("drifted");
    expect(await serves(addr)).toBe(true);
  });
});
