/**
 * `hack/cluster.sh down` on the node (hack/node/README.md, "Teardown"): with a pod and a
 * LoadBalancer Service running, `down` leaves no process (control plane, node components,
 * shims, containers), no bridge, mount, pod cgroup, iptables chain of kube-proxy or CNI, load
 * balancer listener or node state behind, restores ip_forward, and `up` brings a working node
 * back.
 *
 * It takes the cluster down, so it runs only where the tests started the cluster themselves
 * (CI, a cold `npm test`), or with KG_TEST_CLUSTER_DOWN=1.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createNamespace, deleteNamespace, eventually, kubectlOk } from "../support/kube";
import { crictl } from "../support/node";
import { localDir, repoRoot } from "../support/paths";

jest.setTimeout(300_000);

const cluster = (cmd: "up" | "down"): void => {
  execFileSync("bash", [join(repoRoot, "hack", "cluster.sh"), cmd], { stdio: "inherit" });
};
const sh = (cmd: string): string => execFileSync("bash", ["-c", cmd], { encoding: "utf8" });
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const pidFile = (name: string): number =>
  Number(readFileSync(join(localDir, "run", `${name}.pid`), "utf8"));
const nodeState = join(localDir, "node");
const sock = join(nodeState, "containerd.sock");

/** The pod cgroups of the kubelet's cgroupfs driver (cgroup v1's memory hierarchy, or v2). */
const podCgroups = ["/sys/fs/cgroup/memory/kubepods", "/sys/fs/cgroup/kubepods"];

/**
 * What `down` must leave behind: nothing of the node's, read from the machine (iptables chains
 * that were there before the node's first `up`, in `saved`, are the machine's).
 */
const leftovers = (pids: readonly number[], saved: string) => ({
  alivePids: pids.filter(alive),
  shims: sh(`pgrep -f '[c]ontainerd-shim-runc-v2 .*-address ${sock}' || true`).trim(),
  bridge: sh("ip -o link show kg-cni0 2>/dev/null || true").trim(),
  mounts: readFileSync("/proc/mounts", "utf8")
    .split("\n")
    .filter(l => l.split(" ")[1]?.startsWith(`${nodeState}/`)),
  podCgroups: podCgroups.some(d => existsSync(d)),
  chains: sh("iptables-save 2>/dev/null || true")
    .split("\n")
    .filter(l => /^:(KUBE-|CNI-)/.test(l) && !saved.includes(l.split(" ")[0]!)),
  lbListeners: sh("ss -Hlnt 'src 127.20.0.0/16' || true").trim(),
  nodeState: existsSync(nodeState),
});

const ours =
  process.env.KG_CLUSTER_STARTED_BY_TESTS === "1" || process.env.KG_TEST_CLUSTER_DOWN === "1";
if (!ours) {
  console.log(
    "teardown: skipped, the cluster was already running (KG_TEST_CLUSTER_DOWN=1 runs it)",
  );
}

(ours && !process.env.KG_LOCAL_DIR ? describe : describe.skip)("cluster:down on the node", () => {
  let ns = "";
  afterAll(() => {
    if (ns) deleteNamespace(ns);
  });

  const echo = (name: string) => `
apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}}
spec:
  replicas: 1
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      containers:
      - name: echo
        image: registry.k8s.io/gateway-api/echo-basic:v1
        imagePullPolicy: Never
        env:
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        readinessProbe: {httpGet: {path: /, port: 3000}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: ${name}}
spec:
  type: LoadBalancer
  selector: {app: ${name}}
  ports: [{port: 8080, targetPort: 3000}]
`;

  /** The Service's load balancer address, once a request through it answers 200. */
  const answering = (namespace: string, name: string): Promise<string> =>
    eventually(
      `${namespace}/${name} answering through its load balancer`,
      async () => {
        const ip = kubectlOk([
          "get",
          "service",
          "-n",
          namespace,
          name,
          "-o",
          "jsonpath={.status.loadBalancer.ingress[0].ip}",
        ]);
        if (!ip) return undefined;
        const res = await fetch(`http://${ip}:8080/`, { signal: AbortSignal.timeout(3000) }).catch(
          () => undefined,
        );
        return res?.status === 200 ? ip : undefined;
      },
      120_000,
      500,
    );

  it("leaves nothing of the node behind, restores ip_forward, and up runs pods again", async () => {
    ns = createNamespace("node-down");
    kubectlOk(["apply", "-n", ns, "-f", "-"], echo("echo"));
    await answering(ns, "echo");

    const components = ["etcd", "kube-apiserver", "kube-controller-manager"].map(pidFile);
    const node = ["containerd", "real-kubelet", "kube-scheduler", "kube-proxy", "services"].map(
      pidFile,
    );
    const containers = crictl("ps", "-q")
      .split("\n")
      .filter(Boolean)
      .map(id => Number(crictl("inspect", "-o", "go-template", "--template", "{{.info.pid}}", id)));
    const machine = join(nodeState, "machine");
    const ipForwardBefore = readFileSync(join(machine, "ip_forward"), "utf8").trim();
    const saved = readFileSync(join(machine, "iptables"), "utf8");
    const running = leftovers([...components, ...node, ...containers], saved);
    // what the node runs, so that its absence below means something
    expect(containers.length).toBeGreaterThanOrEqual(2); // echo and CoreDNS
    expect(running.alivePids).toHaveLength(components.length + node.length + containers.length);
    expect(running.shims).not.toBe("");
    expect(running.bridge).toContain("kg-cni0");
    expect(running.mounts.length).toBeGreaterThan(0);
    expect(running.podCgroups).toBe(true);
    expect(running.chains.length).toBeGreaterThan(0);
    expect(running.lbListeners).toContain("127.20.");

    cluster("down");
    // Observe first, then bring the cluster back before asserting, so a failure here does not
    // leave the rest of the run without a cluster.
    const after = leftovers([...components, ...node, ...containers], saved);
    const ipForwardAfter = readFileSync("/proc/sys/net/ipv4/ip_forward", "utf8").trim();
    cluster("up");
    expect(after).toEqual({
      alivePids: [],
      shims: "",
      bridge: "",
      mounts: [],
      podCgroups: false,
      chains: [],
      lbListeners: "",
      nodeState: false,
    });
    expect(ipForwardAfter).toBe(ipForwardBefore);

    // up again: a fresh cluster (down wipes etcd) runs a pod behind a load balancer
    ns = createNamespace("node-up");
    kubectlOk(["apply", "-n", ns, "-f", "-"], echo("echo"));
    expect(await answering(ns, "echo")).toMatch(/^127\.20\./);
  });
});
