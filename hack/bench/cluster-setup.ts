/**
 * The objects the cluster benchmarks (hack/bench/cluster.ts) create: the module's own user and
 * kubeconfig (so the API server's metrics tell its requests apart), the echo backend, the
 * GatewayClass parameters and the Gateways.
 */
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { Kube } from "./kube";
import { WorkloadOptions } from "./workload";

export const repoRoot = join(__dirname, "..", "..");
export const localDir = process.env.KG_LOCAL_DIR ?? join(repoRoot, ".local");
export const kubectlBin = join(localDir, "bin", "kubectl");
export const NS = "kg-bench";
export const CLASS = "kengine-bench";
export const USER = "kengine-bench-controller";
export const MAIN = "main"; // Gateway with one proxy: settle, propagation, memory
export const FAN = "fan"; // Gateway whose proxy count changes: fanout, apiRequests
export const CONTROLLER = "kengine.io/gateway-controller";

export const base: WorkloadOptions = {
  routes: 0,
  namespace: NS,
  gatewayClass: CLASS,
  endpointSlices: false,
  selector: { app: "bench-echo" },
};

/* ------------------------------------------------------------------ identity */

/** A key and a certificate signed by the local CA (client: CN/O; server: an IP SAN). */
export function issue(
  dir: string,
  name: string,
  subject: string,
  san?: string,
): { crt: string; key: string } {
  const pki = join(localDir, "pki");
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const crt = join(dir, `${name}.crt`);
  const run = (args: string[]) => execFileSync("openssl", args, { stdio: "ignore" });
  run([
    "req",
    "-new",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    key,
    "-out",
    csr,
    "-subj",
    subject,
  ]);
  const ext = join(dir, `${name}.ext`);
  writeFileSync(ext, san ? `subjectAltName=${san}\n` : "extendedKeyUsage=clientAuth\n");
  run([
    "x509",
    "-req",
    "-in",
    csr,
    "-CA",
    join(pki, "ca.crt"),
    "-CAkey",
    join(pki, "ca.key"),
    "-CAcreateserial",
    "-CAserial",
    join(dir, "ca.srl"),
    "-out",
    crt,
    "-days",
    "1",
    "-extfile",
    ext,
  ]);
  return { crt, key };
}

/**
 * The controller's own user (a client certificate bound to cluster-admin) and a kubeconfig
 * for the API server at `server`.
 */
export function controllerKubeconfig(
  dir: string,
  server: string,
  client: { crt: string; key: string },
): string {
  const pki = join(localDir, "pki");
  const path = join(dir, "kubeconfig");
  writeFileSync(
    path,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      "- name: local",
      `  cluster: {server: "${server}", certificate-authority: ${join(pki, "ca.crt")}}`,
      "users:",
      `- name: ${USER}`,
      `  user: {client-certificate: ${client.crt}, client-key: ${client.key}}`,
      "contexts:",
      `- name: local`,
      `  context: {cluster: local, user: ${USER}}`,
      "current-context: local",
      "",
    ].join("\n"),
  );
  return path;
}

export const identityObjects = [
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: "kengine-bench-controller" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: USER }],
  },
];

/* ------------------------------------------------------------------ cluster objects */

export function echoDeployment(replicas: number) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "bench-echo", namespace: NS },
    spec: {
      replicas,
      selector: { matchLabels: { app: "bench-echo" } },
      template: {
        metadata: { labels: { app: "bench-echo" } },
        spec: {
          containers: [
            {
              name: "echo",
              image: "registry.k8s.io/gateway-api/echo-basic:v1.6.1",
              env: [
                { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
                { name: "NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
              ],
              ports: [{ containerPort: 3000 }],
              readinessProbe: { httpGet: { path: "/", port: 3000 }, periodSeconds: 2 },
            },
          ],
        },
      },
    },
  };
}

export const parameters = (name: string, replicas: number, flavor: ProxyFlavor = "Bundled") => ({
  apiVersion: "gateway.kengine.io/v1alpha1",
  kind: "KengineParameters",
  metadata: { name, namespace: NS },
  spec: { proxy: { replicas, flavor } },
});

export const gateway = (name: string) => ({
  apiVersion: "gateway.networking.k8s.io/v1",
  kind: "Gateway",
  metadata: { name, namespace: NS },
  spec: {
    gatewayClassName: CLASS,
    listeners: [{ name: "http", port: 80, protocol: "HTTP" }],
    infrastructure: {
      parametersRef: { group: "gateway.kengine.io", kind: "KengineParameters", name },
    },
  },
});

/** Creates the objects, 16 at a time. */
export async function createRoutes(
  kube: Kube,
  objs: readonly { metadata: { name: string } }[],
): Promise<void> {
  await Kube.each(objs, 16, o => kube.create(o as never));
}

/**
 * The local cluster, as jest's globalSetup brings it up for the integration tests
 * (tests/support/global-setup.ts): the peers (cached; under the peers lock), then `hack/cluster.sh
 * up` (idempotent). A cluster this process started is taken down when it exits, however it
 * exits (KG_KEEP_CLUSTER=1 keeps it); one that was running is left as it was. The caller holds
 * the cluster lock.
 */
export function localCluster(log: (l: string) => void): void {
  const cluster = (cmd: string, stdio: "pipe" | "inherit") =>
    execFileSync("bash", [join(repoRoot, "hack", "cluster.sh"), cmd], {
      encoding: "utf8",
      // cluster.sh's own progress goes to our stderr: stdout carries no results here
      stdio: stdio === "pipe" ? "pipe" : ["ignore", 2, 2],
    });
  const wasRunning = /kube-apiserver\s+running/.test(cluster("status", "pipe"));
  execFileSync("flock", ["/tmp/kg-peers.lock", "bash", join(repoRoot, "hack", "build-peers.sh")], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  if (!wasRunning) log("no local cluster answers: starting it (hack/cluster.sh up)");
  cluster("up", "inherit");
  if (wasRunning || process.env.KG_KEEP_CLUSTER === "1") return;
  process.once("exit", () => {
    log("taking the local cluster down (hack/cluster.sh down)");
    cluster("down", "inherit");
  });
}
