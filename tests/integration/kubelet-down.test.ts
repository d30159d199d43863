/**
 * `npm run cluster:down` removes everything the local kubelet made: its process, every
 * container process, the kg-* network namespaces, veths and bridge, LoadBalancer listeners and
 * the mount points it created. Then `cluster:up` brings a working node back.
 *
 * This stops and restarts the cluster, wiping its state, so it runs only on a cluster this test
 * run started itself (tests/support/global-setup.ts sets KG_CLUSTER_STARTED_BY_TESTS), or when
 * KG_TEST_CLUSTER_DOWN=1 asks for it; never on a KG_LOCAL_DIR instance (which runs no kubelet).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createNamespace, deleteNamespace, eventually, kubectlOk } from "../support/kube";
import { localDir, repoRoot } from "../support/paths";
import { onRealNode } from "../support/node";

jest.setTimeout(300_000);

const cluster = (cmd: "up" | "down"): void => {
  execFileSync("bash", [join(repoRoot, "hack", "cluster.sh"), cmd], { stdio: "inherit" });
};
const sh = (cmd: string): string => execFileSync("bash", ["-c", cmd], { encoding: "utf8" });
const netns = (): string[] =>
  sh("ip netns list | awk '{print $1}'")
    .split("\n")
    .filter(n => n.startsWith("kg-"));
const kgLinks = (): string[] =>
  sh("ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1")
    .split("\n")
    .filter(n => n.startsWith("kg-"));
const alive = (pid: number): boolean => existsSync(`/proc/${pid}`);
const lbListeners = (): string =>
  sh("ss -Htuln | awk '{print $5}' | grep '^127\\.20\\.' || true").trim();

const ours =
  process.env.KG_CLUSTER_STARTED_BY_TESTS === "1" || process.env.KG_TEST_CLUSTER_DOWN === "1";
const runsKubelet =
  !onRealNode &&
  !process.env.KG_LOCAL_DIR &&
  existsSync(join(repoRoot, "hack", "kubelet", "main.ts"));

if (runsKubelet && !ours) {
  console.log(
    "kubelet-down: skipped, the cluster was already running (KG_TEST_CLUSTER_DOWN=1 runs it anyway)",
  );
}

(runsKubelet && ours ? describe : describe.skip)("cluster:down with the local kubelet", () => {
  let ns: string;
  afterAll(() => {
    if (ns) deleteNamespace(ns);
  });

  it("a restarted kubelet runs the same pods again: same IP, restart counted, never Failed", async () => {
    const rns = createNamespace("kubelet-restart");
    try {
      kubectlOk(["run", "echo", "-n", rns, "--image=registry.k8s.io/gateway-api/echo-basic:v1"]);
      const podIP = () =>
        kubectlOk([
          "get",
          "pod",
          "-n",
          rns,
          "echo",
          "-o",
          "jsonpath={.status.phase} {.status.podIP}",
        ]);
      const before = await eventually(
        "echo running",
        () => (podIP().startsWith("Running 10.") ? podIP().split(" ")[1] : undefined),
        60_000,
      );
      const kubeletPid = Number(readFileSync(join(localDir, "run", "kubelet.pid"), "utf8"));
      process.kill(-kubeletPid, "SIGTERM");
      await eventually("the kubelet to exit", () => (alive(kubeletPid) ? undefined : true), 30_000);
      const phaseWhileDown = podIP().split(" ")[0];
      cluster("up");
      expect(phaseWhileDown).toBe("Running");
      const after = await eventually(
        "echo running again",
        () => {
          const p = JSON.parse(kubectlOk(["get", "pod", "-n", rns, "echo", "-o", "json"])) as {
            status: {
              phase: string;
              podIP: string;
              containerStatuses: { restartCount: number; ready: boolean }[];
            };
          };
          const cs = p.status.containerStatuses[0];
          return p.status.phase === "Running" && cs.ready && cs.restartCount === 1 ? p : undefined;
        },
        60_000,
      );
      expect(after.status.podIP).toBe(before);
      const res = await fetch(`http://${before}:3000/`, { signal: AbortSignal.timeout(3000) });
      expect(res.status).toBe(200);
    } finally {
      deleteNamespace(rns);
    }
  });

  it("leaves no process, network namespace, interface or mount point behind, and up works again", async () => {
    ns = createNamespace("kubelet-down");
    kubectlOk(
      ["apply", "-n", ns, "-f", "-"],
      `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {Caddyfile: ":8080 {\\n respond ok\\n}\\n"}
---
apiVersion: v1
kind: Pod
metadata: {name: proxy, labels: {app: proxy}}
spec:
  containers:
  - name: caddy
    image: caddy:2.11
    volumeMounts: [{name: cfg, mountPath: /etc/kg-down-test/caddy}]
    args: [run, --config, /etc/kg-down-test/caddy/Caddyfile, --adapter, caddyfile]
  volumes: [{name: cfg, configMap: {name: cfg}}]
---
apiVersion: v1
kind: Pod
metadata: {name: echo, labels: {app: proxy}}
spec:
  containers:
  - {name: echo, image: "registry.k8s.io/gateway-api/echo-basic:v1"}
---
apiVersion: v1
kind: Service
metadata: {name: lb}
spec:
  type: LoadBalancer
  selector: {app: proxy}
  ports: [{port: 8080}]
`,
    );
    await eventually(
      "both pods running",
      () => {
        const out = kubectlOk(["get", "pods", "-n", ns, "-o", "jsonpath={.items[*].status.phase}"]);
        return out === "Running Running" ? true : undefined;
      },
      60_000,
    );
    await eventually("a load balancer listener", () => (lbListeners() ? true : undefined));

    const kubeletPid = Number(readFileSync(join(localDir, "run", "kubelet.pid"), "utf8"));
    const componentPids = ["etcd", "kube-apiserver", "kube-controller-manager"].map(c =>
      Number(readFileSync(join(localDir, "run", `${c}.pid`), "utf8")),
    );
    const containerPids = netns().flatMap(n =>
      sh(`ip netns pids ${n}`).split("\n").filter(Boolean).map(Number),
    );
    expect(netns().length).toBeGreaterThanOrEqual(2);
    expect(containerPids.length).toBeGreaterThanOrEqual(2);
    expect(kgLinks()).toContain("kg-br0");
    const createdPaths = readFileSync(join(localDir, "kubelet", "created-paths"), "utf8")
      .split("\n")
      .filter(Boolean);
    expect(createdPaths).toContain("/etc/kg-down-test");

    cluster("down");
    // Observe first, then bring the cluster back before asserting, so a failure here does not
    // leave the developer's cluster down.
    const after = {
      kubeletAlive: alive(kubeletPid),
      alivePids: [...componentPids, ...containerPids].filter(alive),
      kubeletProcesses: sh(
        `pgrep --ns ${process.pid} --nslist net -f 'hack/kubelet/[m]ain.ts' || true`,
      ).trim(),
      netns: netns(),
      links: kgLinks(),
      routingGuard: sh("ip rule show priority 27495").trim(),
      lbListeners: lbListeners(),
      leftPaths: createdPaths.filter(p => existsSync(p)),
    };
    cluster("up");
    expect(after).toEqual({
      kubeletAlive: false,
      alivePids: [],
      kubeletProcesses: "",
      netns: [],
      links: [],
      routingGuard: "",
      lbListeners: "",
      leftPaths: [],
    });

    ns = createNamespace("kubelet-up");
    kubectlOk([
      "run",
      "echo",
      "-n",
      ns,
      "--image=registry.k8s.io/gateway-api/echo-basic:v1",
      "--restart=Never",
    ]);
    const ip = await eventually(
      "a pod running after up",
      () => {
        const out = kubectlOk([
          "get",
          "pod",
          "-n",
          ns,
          "echo",
          "-o",
          "jsonpath={.status.phase} {.status.podIP}",
        ]);
        const [phase, podIP] = out.split(" ");
        return phase === "Running" && podIP ? podIP : undefined;
      },
      60_000,
    );
    const body = await eventually("echo answers", async () => {
      const res = await fetch(`http://${ip}:3000/`, { signal: AbortSignal.timeout(3000) });
      return (await res.json()) as { path: string };
    });
    expect(body.path).toBe("/");
  });
});
