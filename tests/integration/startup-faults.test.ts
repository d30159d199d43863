/**
 * Start-up faults against the real cluster: the controller either recovers and
 * programs, or exits visibly; it never runs without programming.
 *
 * - The API server cannot be reached at start (connections refused): the controller reaches it
 *   through a loopback TCP forwarder that is not listening yet; its requests are retried with
 *   back-off, and once the forwarder listens it starts and programs.
 * - The API server refuses the lists for a while: the controller runs as a ServiceAccount that
 *   may not read Gateway API objects at first (RBAC, a real 403 from the real API server); its
 *   lists are retried with back-off, and once the rule is granted it programs. Refused for
 *   good, the process exits with code 1 after a few tries.
 * - A Gateway API CRD is missing (TCPRoute): the kind counts as empty, is reported (GatewayClass
 *   SupportedVersion message), the rest programs; once the CRD is installed again, a TCPRoute
 *   is picked up without a restart. The CRD is restored at the end (other tests share the
 *   cluster).
 *
 * Each controller is its own process (tests/support/controller-instance.ts, fed by real
 * watches); the proxies are real pods on the local node.
 */
import { ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Server, Socket, createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { repoRoot } from "../support/paths";
import { freePort } from "../support/ports";

interface Instance {
  readonly proc: ChildProcess;
  readonly retries: string[];
  readonly notServed: string[];
  readonly fleet: string[];
  started: boolean;
  stderr: string;
  exit?: number | null;
}

const procs: ChildProcess[] = [];
const dirs: string[] = [];

function startInstance(ns: string, env: NodeJS.ProcessEnv = process.env): Instance {
  const proc = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      join(repoRoot, "tests", "support", "controller-instance.ts"),
      ns,
      `startup-${ns}`,
      "startup",
    ],
    { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] },
  );
  procs.push(proc);
  const inst: Instance = {
    proc,
    retries: [],
    notServed: [],
    fleet: [],
    started: false,
    stderr: "",
  };
  let buf = "";
  proc.stdout!.on("data", (d: Buffer) => {
    buf += d.toString("utf8");
    for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        const m = JSON.parse(line) as {
          started?: boolean;
          startupRetry?: string;
          notServed?: string;
          fleet?: string;
        };
        if (m.started) inst.started = true;
        if (m.startupRetry) inst.retries.push(m.startupRetry);
        if (m.notServed) inst.notServed.push(m.notServed);
        if (m.fleet) inst.fleet.push(m.fleet);
      } catch {
        // not ours
      }
    }
  });
  proc.stderr!.on("data", (d: Buffer) => (inst.stderr += d.toString("utf8")));
  proc.once("exit", code => (inst.exit = code));
  return inst;
}

async function stopInstance(inst: Instance): Promise<void> {
  if (inst.proc.exitCode !== null || inst.proc.signalCode !== null) return;
  const gone = new Promise(r => inst.proc.once("exit", r));
  inst.proc.kill("SIGTERM");
  await gone;
}

const jsonpath = (args: string[], path: string) =>
  kubectl(["get", ...args, "-o", `jsonpath=${path}`]).stdout;
const programmed = (ns: string) =>
  jsonpath(["gateway", "gw", "-n", ns], "{.status.conditions[?(@.type=='Programmed')].status}") ===
    "True" || undefined;

/** A GatewayClass, a Service and a Gateway (HTTP and TCP listeners) with one HTTPRoute. */
function applyGateway(ns: string, cls: string): void {
  kubectlOk(
    ["apply", "-f", "-"],
    `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ${cls}}
spec: {controllerName: kengine.io/gateway-controller}
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
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: tcp, port: 9000, protocol: TCP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: ${ns}}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  rules: [{backendRefs: [{name: echo, port: 8080}]}]
`,
  );
}

/** The admin kubeconfig as JSON (server, CA, client credentials). */
const adminKubeconfig = () =>
  JSON.parse(kubectlOk(["config", "view", "--raw", "--minify", "-o", "json"])) as {
    clusters: { name: string; cluster: { server: string } & Record<string, unknown> }[];
    users: { name: string; user: Record<string, unknown> }[];
  };

function writeKubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), "kg-startup-"));
  dirs.push(dir);
  const path = join(dir, "kubeconfig");
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "local", cluster }],
      users: [{ name: "user", user }],
      contexts: [{ name: "ctx", context: { cluster: "local", user: "user" } }],
      "current-context": "ctx",
    }),
  );
  return path;
}

/**
 * A kubeconfig for ServiceAccount `sa` of `ns` (a real token from the TokenRequest API), so
 * the API server's RBAC decides what the controller may list.
 */
function serviceAccountKubeconfig(ns: string, sa: string): string {
  const token = kubectlOk(["create", "token", sa, "-n", ns, "--duration=1h"]).trim();
  return writeKubeconfig(adminKubeconfig().clusters[0]!.cluster, { token });
}

afterAll(async () => {
  for (const p of procs)
    if (p.exitCode === null && p.signalCode === null) {
      const gone = new Promise(r => p.once("exit", r));
      p.kill("SIGTERM");
      await gone;
    }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("the API server cannot be reached at start", () => {
  let ns: string;
  const cls = `startup-down-${Date.now().toString(36)}`;
  let forwarder: Server | undefined;
  const sockets = new Set<Socket>();

  beforeAll(() => {
    ns = createNamespace("startup-down");
    applyGateway(ns, cls);
  });
  afterAll(async () => {
    for (const c of sockets) c.destroy();
    await new Promise(r => (forwarder ? forwarder.close(r) : r(undefined)));
    kubectl(["delete", "gatewayclass", cls, "--ignore-not-found"]);
    if (ns) deleteNamespace(ns);
  });

  it("retries refused connections, then starts and programs once the API server answers", async () => {
    // the admin credentials, with the server at a loopback port nothing listens on yet
    const admin = adminKubeconfig();
    const real = new URL(admin.clusters[0]!.cluster.server);
    const port = await freePort();
    const kubeconfig = writeKubeconfig(
      { ...admin.clusters[0]!.cluster, server: `https://${real.hostname}:${port}` },
      admin.users[0]!.user,
    );
    const inst = startInstance(ns, { ...process.env, KUBECONFIG: kubeconfig });
    await eventually("two retried start-up requests", () => inst.retries[1], 60_000);
    expect(inst.started).toBe(false);
    expect(inst.exit).toBeUndefined();
    // now the API server is reachable there: a plain TCP forwarder to the real one
    forwarder = createServer(client => {
      const upstream = connect(Number(real.port), real.hostname);
      for (const c of [client, upstream]) {
        sockets.add(c);
        c.once("close", () => sockets.delete(c));
      }
      client.pipe(upstream).pipe(client);
      const close = () => (client.destroy(), upstream.destroy());
      client.on("error", close);
      upstream.on("error", close);
    });
    await new Promise<void>(r => forwarder!.listen(port, real.hostname, r));
    await eventually("the controller started", () => inst.started || undefined, 120_000);
    await eventually("Gateway gw Programmed=True", () => programmed(ns), 180_000);
    await eventually("a push by the instance", () => inst.fleet.includes("pushed") || undefined);
    expect(inst.exit).toBeUndefined();
    await stopInstance(inst);
  }, 400_000);
});

describe("the API server refuses the start-up lists for a while (RBAC)", () => {
  let ns: string;
  const cls = `startup-rbac-${Date.now().toString(36)}`;
  const everythingButGatewayApi = `${cls}-base`;
  const gatewayApi = `${cls}-gwapi`;

  beforeAll(() => {
    ns = createNamespace("startup-rbac");
    applyGateway(ns, cls);
    kubectlOk(
      ["apply", "-f", "-"],
      `apiVersion: v1
kind: ServiceAccount
metadata: {name: controller, namespace: ${ns}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ${everythingButGatewayApi}}
rules:
- apiGroups: ["", apps, discovery.k8s.io, coordination.k8s.io, gateway.kengine.io, apiextensions.k8s.io, policy, networking.k8s.io, events.k8s.io]
  resources: ["*"]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ${gatewayApi}}
rules:
- apiGroups: [gateway.networking.k8s.io, gateway.networking.x-k8s.io]
  resources: ["*"]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ${everythingButGatewayApi}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ${everythingButGatewayApi}}
subjects: [{kind: ServiceAccount, name: controller, namespace: ${ns}}]
`,
    );
  });
  afterAll(() => {
    kubectl([
      "delete",
      "clusterrolebinding",
      everythingButGatewayApi,
      gatewayApi,
      "--ignore-not-found",
    ]);
    kubectl(["delete", "clusterrole", everythingButGatewayApi, gatewayApi, "--ignore-not-found"]);
    kubectl(["delete", "gatewayclass", cls, "--ignore-not-found"]);
    if (ns) deleteNamespace(ns);
  });

  it("retries while refused, then programs once the lists are allowed", async () => {
    const kubeconfig = serviceAccountKubeconfig(ns, "controller");
    const inst = startInstance(ns, { ...process.env, KUBECONFIG: kubeconfig });
    // the first Gateway API list is refused (403) and retried
    await eventually("a retried start-up list", () => inst.retries[0], 60_000);
    expect(inst.retries[0]).toBe("/apis/gateway.networking.k8s.io/v1/gatewayclasses");
    expect(inst.started).toBe(false);
    expect(programmed(ns)).toBeUndefined();
    kubectlOk([
      "create",
      "clusterrolebinding",
      gatewayApi,
      `--clusterrole=${gatewayApi}`,
      `--serviceaccount=${ns}:controller`,
    ]);
    await eventually("the controller started", () => inst.started || undefined, 120_000);
    await eventually("Gateway gw Programmed=True", () => programmed(ns), 180_000);
    // (the instance's stdout is read between polls: spawnSync blocks the event loop)
    await eventually("a push by the instance", () => inst.fleet.includes("pushed") || undefined);
    expect(inst.exit).toBeUndefined();
    await stopInstance(inst);
  }, 400_000);

  it("exits with code 1, saying why, when the lists stay refused", async () => {
    kubectl(["delete", "clusterrolebinding", gatewayApi, "--ignore-not-found"]);
    const kubeconfig = serviceAccountKubeconfig(ns, "controller");
    const inst = startInstance(ns, { ...process.env, KUBECONFIG: kubeconfig });
    const code = await new Promise<number | null>(r => inst.proc.once("exit", r));
    expect(code).toBe(1);
    expect(inst.started).toBe(false);
    expect(inst.retries.length).toBeGreaterThanOrEqual(1);
    expect(inst.stderr).toContain("not allowed (RBAC or credentials)");
    expect(inst.stderr).toContain("gatewayclasses");
  }, 120_000);
});

describe("a Gateway API CRD is not installed (TCPRoute)", () => {
  let ns: string;
  const cls = `startup-crd-${Date.now().toString(36)}`;
  const crd = "tcproutes.gateway.networking.k8s.io";
  let saved: string | undefined;

  const restoreCrd = () => {
    if (!saved || kubectl(["get", "crd", crd]).code === 0) return;
    kubectlOk(["create", "-f", "-"], saved);
    kubectlOk(["wait", "--for", "condition=Established", "--timeout=60s", "crd", crd]);
  };

  beforeAll(() => {
    const o = JSON.parse(kubectlOk(["get", "crd", crd, "-o", "json"])) as {
      metadata: Record<string, unknown>;
      status?: unknown;
    };
    const { name, labels, annotations } = o.metadata;
    saved = JSON.stringify({ ...o, metadata: { name, labels, annotations }, status: undefined });
    kubectlOk(["delete", "crd", crd, "--wait=true"]);
    ns = createNamespace("startup-crd");
    applyGateway(ns, cls);
  });
  afterAll(() => {
    restoreCrd();
    kubectl(["delete", "gatewayclass", cls, "--ignore-not-found"]);
    if (ns) deleteNamespace(ns);
  });

  it("counts the kind as empty, reports it, programs the rest, and picks the kind up when installed", async () => {
    const inst = startInstance(ns);
    await eventually("the controller started", () => inst.started || undefined, 120_000);
    expect(inst.notServed).toEqual(["TCPRoute"]);
    await eventually("Gateway gw Programmed=True", () => programmed(ns), 180_000);
    const supported = await eventually(
      "GatewayClass SupportedVersion names the missing CRD",
      () => {
        const m = jsonpath(
          ["gatewayclass", cls],
          "{.status.conditions[?(@.type=='SupportedVersion')].message}",
        );
        return m.includes("TCPRoute") ? m : undefined;
      },
      60_000,
    );
    expect(supported).toContain("CRDs not installed");
    expect(
      jsonpath(
        ["httproute", "web", "-n", ns],
        "{.status.parents[0].conditions[?(@.type=='Accepted')].status}",
      ),
    ).toBe("True");

    // installed again: a TCPRoute is accepted without restarting the controller
    restoreCrd();
    kubectlOk(
      ["apply", "-f", "-"],
      `apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: tcp, namespace: ${ns}}
spec:
  parentRefs: [{name: gw, sectionName: tcp}]
  rules: [{backendRefs: [{name: echo, port: 8080}]}]
`,
    );
    await eventually(
      "TCPRoute tcp Accepted=True",
      () =>
        jsonpath(
          ["tcproute", "tcp", "-n", ns],
          "{.status.parents[0].conditions[?(@.type=='Accepted')].status}",
        ) === "True" || undefined,
      150_000,
      1000,
    );
    expect(inst.exit).toBeUndefined();
    await stopInstance(inst);
  }, 500_000);
});
