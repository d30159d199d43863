/**
 * The real node (hack/node/node.sh: containerd, runc, CNI, the kubelet, kube-scheduler,
 * kube-proxy and CoreDNS). Part of the integration suite; `npm run test:real-node` runs it
 * alone.
 *
 * Asserts what only a real node shows (hack/node/README.md): the Node is Ready on containerd;
 * the echo server, under the securityContext the product declares for its proxies, runs as a
 * non-root uid with no capabilities, a seccomp filter and a read-only root (read from inside
 * the container by `kubectl exec` of kg-probe); a pod that allocates past its memory limit is
 * OOM-killed; a ClusterIP Service answers through kube-proxy (iptables) from the host and from
 * a pod; a pod reaches the API server through the `kubernetes` Service; a LoadBalancer Service gets a local address that answers; a pod resolves a Service's
 * name through CoreDNS; the service-account token is mounted; the images the suites name
 * (stock Caddy in the official image's layout, Pepr's controller for deployed mode) are there.
 * Each proof that passed is a row of the `realNode` section of reports/e2e.json.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  proxyPodSecurityContext,
  proxySecurityContext,
  PROXY_UID,
} from "../../capabilities/workload/pod";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { repoRoot } from "../support/paths";
import { crictl } from "../support/node";
import { ScenarioRow, writeScenarioRows } from "../support/demo-gateway";

interface ContainerStatus {
  readonly restartCount: number;
  readonly state?: { readonly terminated?: { readonly reason?: string } };
  readonly lastState?: { readonly terminated?: { readonly reason?: string } };
}

/** The upstream Ingress conformance suite's echo server, as it names it (tag and digest). */
const INGRESS_ECHO =
  "k8s.gcr.io/ingressconformance/echoserver:v0.0.1@sha256:9b34b17f391f87fb2155f01da2f2f90b7a4a5c1110ed84cb5379faa4f570dc52";

/** The installed pepr package's version: the tag of Pepr's controller image on the node. */
const PEPR_VERSION = (
  JSON.parse(readFileSync(join(repoRoot, "node_modules", "pepr", "package.json"), "utf8")) as {
    version: string;
  }
).version;

/** One field of an object in `ns` (kubectl's jsonpath, `path` without the braces). */
const jsonField = (ns: string, kind: string, name: string, path: string): string =>
  kubectlOk(["get", kind, "-n", ns, name, "-o", `jsonpath={${path}}`]);

describe("the real node", () => {
  const started = Date.now();
  const rows: ScenarioRow[] = [];
  /** Called last in a test: its proof, with the number of assertions that checked it. */
  const proved = (scenario: string, what: string): void => {
    rows.push({ scenario, proved: what, checks: expect.getState().assertionCalls });
  };
  afterAll(() => writeScenarioRows("realNode", "tests/node/real-node.test.ts", started, rows));

  let ns = "";

  beforeAll(() => {
    ns = createNamespace("real-node");
    kubectlOk(["apply", "-n", ns, "-f", join(repoRoot, "hack", "node", "testdata", "pods.yaml")]);
  });
  afterAll(() => {
    if (ns) deleteNamespace(ns);
  });

  /** The echo Service's ClusterIP, once its pod is Ready. */
  const echoClusterIP = (): string => {
    kubectlOk(["wait", "-n", ns, "--for", "condition=Ready", "--timeout=120s", "pod/kg-echo"]);
    return jsonField(ns, "service", "kg-echo", ".spec.clusterIP");
  };

  test("the Node is Ready, its runtime containerd 2.x, its kubelet 1.36", () => {
    kubectlOk(["wait", "--for", "condition=Ready", "--timeout=60s", "node/kengine-local"]);
    const runtime = kubectlOk([
      "get",
      "node",
      "kengine-local",
      "-o",
      "jsonpath={.status.nodeInfo.containerRuntimeVersion}",
    ]);
    expect(runtime).toMatch(/^containerd:\/\/2\./);
    const kubelet = kubectlOk([
      "get",
      "node",
      "kengine-local",
      "-o",
      "jsonpath={.status.nodeInfo.kubeletVersion}",
    ]);
    expect(kubelet).toMatch(/^v1\.36\./);
    proved(
      "node",
      "the Node is Ready on containerd 2.x with kubelet v1.36 (runtime and version from its status)",
    );
  });

  test("the echo pod runs as non-root, without capabilities, under seccomp, on a read-only root", async () => {
    kubectlOk(["wait", "-n", ns, "--for", "condition=Ready", "--timeout=120s", "pod/kg-echo"]);
    const probe = JSON.parse(kubectlOk(["exec", "-n", ns, "kg-echo", "--", "/kg-probe"])) as {
      uid: number;
      gid: number;
      capEff: string;
      seccomp: string;
      noNewPrivs: string;
      rootWritable: boolean;
      rootWriteError: string;
      saToken: boolean;
    };
    expect(probe.uid).toBe(65534);
    expect(probe.gid).toBe(65534);
    expect(probe.capEff).toBe("0000000000000000");
    expect(probe.seccomp).toBe("2"); // SECCOMP_MODE_FILTER: the runtime's default profile
    expect(probe.noNewPrivs).toBe("1");
    expect(probe.rootWritable).toBe(false);
    expect(probe.rootWriteError).toMatch(/read-only file system/);
    expect(probe.saToken).toBe(true); // the projected service-account token is mounted
    // and it serves, on its pod IP, from the host (CNI bridge)
    const ip = jsonField(ns, "pod", "kg-echo", ".status.podIP");
    const body = await eventually(`the echo server on ${ip}:3000`, async () => {
      const r = await fetch(`http://${ip}:3000/real-node`);
      return r.ok ? ((await r.json()) as { path: string; pod: string }) : undefined;
    });
    expect(body).toMatchObject({ path: "/real-node", pod: "kg-echo" });
    proved(
      "securityContext",
      "a pod under runAsNonRoot, drop ALL, seccomp RuntimeDefault, readOnlyRootFilesystem runs as uid/gid 65534 with CapEff 0, Seccomp 2, NoNewPrivs 1, EROFS on /, its service-account token mounted (read inside by kubectl exec)",
    );
  });

  test("a ClusterIP Service answers through kube-proxy, from the host and from a pod", async () => {
    const clusterIP = echoClusterIP();
    expect(clusterIP).toMatch(/^10\.96\./);
    const fromHost = await eventually(`${clusterIP}:80 from the host`, async () => {
      const r = await fetch(`http://${clusterIP}/from-host`, { signal: AbortSignal.timeout(3000) });
      return r.ok ? ((await r.json()) as { path: string; pod: string }) : undefined;
    });
    expect(fromHost).toMatchObject({ path: "/from-host", pod: "kg-echo" });
    // from inside the pod, to its own Service (hairpin through kube-proxy's DNAT)
    const fromPod = await eventually(`${clusterIP}:80 from the pod`, () => {
      const r = kubectl([
        "exec",
        "-n",
        ns,
        "kg-echo",
        "--",
        "/kg-probe",
        "get",
        `http://${clusterIP}/from-pod`,
      ]);
      return r.code === 0 ? r.stdout : undefined;
    });
    const [code, ...body] = fromPod.split("\n");
    expect(code).toBe("200");
    expect(JSON.parse(body.join("\n"))).toMatchObject({ path: "/from-pod", pod: "kg-echo" });
    proved(
      "clusterIP",
      "a ClusterIP Service answers through kube-proxy (iptables) from the host and from a pod to itself",
    );
  });

  test("a pod reaches the API server as an in-cluster client (10.96.0.1 → kube-proxy → the node's forwarder)", async () => {
    kubectlOk(["wait", "-n", ns, "--for", "condition=Ready", "--timeout=120s", "pod/kg-echo"]);
    const out = await eventually("GET /version from the pod", () => {
      const r = kubectl(["exec", "-n", ns, "kg-echo", "--", "/kg-probe", "kube", "/version"]);
      return r.code === 0 ? r.stdout : undefined;
    });
    const [code, ...body] = out.split("\n");
    expect(code).toBe("200");
    // the API server's /version (built from source without version stamps: gitVersion is a placeholder)
    expect(JSON.parse(body.join("\n"))).toMatchObject({
      gitVersion: expect.any(String),
      goVersion: expect.stringMatching(/^go1\./),
      platform: "linux/amd64",
    });
    proved(
      "inClusterAPI",
      "a pod reaches the API server at 10.96.0.1 with its service-account token",
    );
  });

  test("a LoadBalancer Service gets a local address and answers on it (hack/node/services.ts)", async () => {
    echoClusterIP();
    kubectlOk(
      ["apply", "-n", ns, "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "kg-echo-lb" },
        spec: {
          type: "LoadBalancer",
          selector: { app: "kg-echo" },
          ports: [{ name: "http", port: 8080, targetPort: 3000 }],
        },
      }),
    );
    const ip = await eventually("the Service's load-balancer address", () => {
      const got = jsonField(ns, "service", "kg-echo-lb", ".status.loadBalancer.ingress[0].ip");
      return got || undefined;
    });
    expect(ip).toMatch(/^127\.20\.\d+\.\d+$/);
    const body = await eventually(`${ip}:8080 from the host`, async () => {
      const r = await fetch(`http://${ip}:8080/through-lb`, { signal: AbortSignal.timeout(3000) });
      return r.ok ? ((await r.json()) as { path: string; pod: string }) : undefined;
    });
    expect(body).toMatchObject({ path: "/through-lb", pod: "kg-echo" });
    proved(
      "loadBalancer",
      "a LoadBalancer Service gets a 127.20.x.y address that answers (hack/node/services.ts)",
    );
  });

  test("a pod resolves a Service name through CoreDNS (a pod behind kube-dns, 10.96.0.10)", async () => {
    const clusterIP = echoClusterIP();
    // CoreDNS runs as a pod of the node (hack/node/coredns.yaml), the kubelet's clusterDNS
    expect(
      kubectlOk([
        "get",
        "service",
        "-n",
        "kube-system",
        "kube-dns",
        "-o",
        "jsonpath={.spec.clusterIP}",
      ]),
    ).toBe("10.96.0.10");
    expect(
      kubectlOk([
        "get",
        "deployment",
        "-n",
        "kube-system",
        "coredns",
        "-o",
        "jsonpath={.status.readyReplicas}",
      ]),
    ).toBe("1");
    const name = `kg-echo.${ns}.svc.cluster.local`;
    const addresses = await eventually(`${name} from the pod`, () => {
      const r = kubectl(["exec", "-n", ns, "kg-echo", "--", "/kg-probe", "lookup", name]);
      return r.code === 0 ? r.stdout.trim() : undefined;
    });
    expect(addresses).toBe(clusterIP);
    // a shorter name, through the search path the kubelet wrote into the pod's resolv.conf
    // ("kg-echo" alone is the pod's own hostname: /etc/hosts gives its pod IP)
    const short = kubectlOk([
      "exec",
      "-n",
      ns,
      "kg-echo",
      "--",
      "/kg-probe",
      "lookup",
      `kg-echo.${ns}`,
    ]);
    expect(short.trim()).toBe(clusterIP);
    proved(
      "coreDNS",
      "a pod resolves <svc>.<ns>.svc.cluster.local and <svc>.<ns> to the ClusterIP through CoreDNS (a pod behind kube-dns 10.96.0.10)",
    );
  });

  test("the proxy image runs under the securityContext the product declares (port 80, non-root)", async () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
      version: string;
      kengine: { proxyImage: string };
    };
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "kg-proxy", namespace: ns },
      spec: {
        securityContext: proxyPodSecurityContext(true),
        containers: [
          {
            name: "proxy",
            image: `${pkg.kengine.proxyImage}:${pkg.version}`,
            imagePullPolicy: "Never",
            command: ["/usr/bin/caddy", "respond", "--listen", ":80", "real node"],
            env: [
              { name: "HOME", value: "/tmp" },
              { name: "XDG_CONFIG_HOME", value: "/tmp" },
              { name: "XDG_DATA_HOME", value: "/tmp" },
            ],
            securityContext: proxySecurityContext(true),
            volumeMounts: [{ name: "tmp", mountPath: "/tmp" }],
            readinessProbe: { tcpSocket: { port: 80 }, periodSeconds: 1 },
          },
        ],
        volumes: [{ name: "tmp", emptyDir: {} }],
      },
    };
    kubectlOk(["apply", "-f", "-"], JSON.stringify(pod));
    kubectlOk(["wait", "-n", ns, "--for", "condition=Ready", "--timeout=120s", "pod/kg-proxy"]);
    const ip = jsonField(ns, "pod", "kg-proxy", ".status.podIP");
    const body = await eventually(`the proxy on ${ip}:80`, async () => {
      const r = await fetch(`http://${ip}/`, { signal: AbortSignal.timeout(3000) });
      return r.ok ? r.text() : undefined;
    });
    expect(body).toBe("real node");
    // the container's process, seen from the host through CRI
    const id = crictl(
      "ps",
      "-q",
      "--name",
      "^proxy$",
      "--label",
      `io.kubernetes.pod.namespace=${ns}`,
    );
    const pid = crictl("inspect", "-o", "go-template", "--template", "{{.info.pid}}", id);
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const field = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, "m").exec(status)?.[1];
    expect(field("Uid")?.split(/\s+/)).toEqual(Array(4).fill(String(PROXY_UID)));
    expect(field("CapEff")).toBe("0000000000000000");
    expect(field("CapBnd")).toBe("0000000000000400"); // NET_BIND_SERVICE only
    expect(field("Seccomp")).toBe("2");
    expect(field("NoNewPrivs")).toBe("1");
    expect(() => writeFileSync(`/proc/${pid}/root/.kg-write-test`, "x")).toThrow(/EROFS|read-only/);
    proved(
      "proxyImage",
      "the proxy image under the product's proxyPodSecurityContext/proxySecurityContext serves port 80 as uid 65532, CapEff 0, CapBnd NET_BIND_SERVICE, Seccomp 2, NoNewPrivs 1, read-only root (host /proc through crictl)",
    );
  });

  test("the images the suites name are imported and run (Gateway API and Ingress conformance, stock Caddy)", async () => {
    // each name resolves to an image in containerd, without a pull (hack/node/node.sh import_images)
    for (const image of [
      "registry.k8s.io/gateway-api/echo-basic:v1.5.1",
      "registry.k8s.io/gateway-api/echo-basic:v1.6.0-dev.2",
      "registry.k8s.io/gateway-api/echo-advanced:v1.5.1",
      "registry.k8s.io/gateway-api/conformance/echo-basic:v0.1.0",
      "registry.k8s.io/gateway-api/conformance/echo-advanced:v0.1.0",
      "registry.k8s.io/coredns/coredns:v1.12.2",
      INGRESS_ECHO,
      "docker.io/library/caddy:2.8",
      "docker.io/library/caddy:2.11",
      `ghcr.io/defenseunicorns/pepr/controller:v${PEPR_VERSION}`,
    ])
      expect(
        crictl("inspecti", "-o", "go-template", "--template", "{{.status.id}}", image),
      ).toMatch(/^sha256:/);
    // the Ingress suite's echo server, named as the suite names it (tag and digest), and stock
    // Caddy 2.8 started by its image's default arguments replaced as a pod's args replace them
    const pods = [
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "kg-ingress-echo", namespace: ns },
        spec: {
          containers: [
            {
              name: "echo",
              image: INGRESS_ECHO,
              env: [{ name: "POD_NAME", value: "kg-ingress-echo" }],
              readinessProbe: { httpGet: { path: "/", port: 3000 }, periodSeconds: 1 },
            },
          ],
        },
      },
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "kg-caddy-28", namespace: ns },
        spec: {
          containers: [
            {
              name: "caddy",
              image: "docker.io/library/caddy:2.8",
              imagePullPolicy: "Never",
              args: ["caddy", "respond", "--listen", ":8080", "stock caddy"],
              readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
            },
          ],
        },
      },
    ];
    for (const pod of pods) kubectlOk(["apply", "-f", "-"], JSON.stringify(pod));
    for (const pod of pods)
      kubectlOk([
        "wait",
        "-n",
        ns,
        "--for",
        "condition=Ready",
        "--timeout=120s",
        `pod/${pod.metadata.name}`,
      ]);
    const ipOf = (pod: string) => jsonField(ns, "pod", pod, ".status.podIP");
    const echo = await eventually("the Ingress suite's echo server", async () => {
      const r = await fetch(`http://${ipOf("kg-ingress-echo")}:3000/ingress`, {
        signal: AbortSignal.timeout(3000),
      });
      return r.ok ? ((await r.json()) as { path: string; pod: string }) : undefined;
    });
    expect(echo).toMatchObject({ path: "/ingress", pod: "kg-ingress-echo" });
    const caddy = await eventually("stock Caddy 2.8", async () => {
      const r = await fetch(`http://${ipOf("kg-caddy-28")}:8080/`, {
        signal: AbortSignal.timeout(3000),
      });
      return r.ok ? r.text() : undefined;
    });
    expect(caddy).toBe("stock caddy");
    expect(kubectlOk(["exec", "-n", ns, "kg-caddy-28", "--", "caddy", "version"])).toMatch(
      /^v2\.8\.4/,
    );
    proved(
      "images",
      "the images the conformance suites and tests name resolve in containerd without a pull, and run",
    );
  });

  test("stock Caddy 2.11 runs the Caddyfile in /etc/caddy by its default command; `test` answers exec probes", async () => {
    const manifest = `
apiVersion: v1
kind: ConfigMap
metadata: {name: kg-caddy-211, namespace: ${ns}}
data: {Caddyfile: ":8080 {\\n respond \\"stock caddy 2.11\\"\\n}\\n"}
---
apiVersion: v1
kind: Pod
metadata: {name: kg-caddy-211, namespace: ${ns}}
spec:
  containers:
  - name: caddy
    image: caddy:2.11
    imagePullPolicy: Never
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
    livenessProbe: {exec: {command: [test, -f, /etc/caddy/Caddyfile]}, periodSeconds: 1}
    volumeMounts: [{name: config, mountPath: /etc/caddy, readOnly: true}]
  volumes: [{name: config, configMap: {name: kg-caddy-211}}]
`;
    kubectlOk(["apply", "-f", "-"], manifest);
    kubectlOk(["wait", "-n", ns, "--for", "condition=Ready", "--timeout=120s", "pod/kg-caddy-211"]);
    const ip = jsonField(ns, "pod", "kg-caddy-211", ".status.podIP");
    const body = await eventually("stock Caddy 2.11", async () => {
      const r = await fetch(`http://${ip}:8080/`, { signal: AbortSignal.timeout(3000) });
      return r.ok ? r.text() : undefined;
    });
    expect(body).toBe("stock caddy 2.11");
    expect(kubectlOk(["exec", "-n", ns, "kg-caddy-211", "--", "caddy", "version"])).toMatch(
      /^v2\.11\./,
    );
    // the exec probe passed (no restarts after several periods), and fails for a missing file
    await new Promise(r => setTimeout(r, 3000));
    expect(jsonField(ns, "pod", "kg-caddy-211", ".status.containerStatuses[0].restartCount")).toBe(
      "0",
    );
    expect(kubectl(["exec", "-n", ns, "kg-caddy-211", "--", "test", "-f", "/nope"]).code).toBe(1);
    proved(
      "stockCaddy",
      "stock Caddy 2.11 serves a ConfigMap Caddyfile by its default command; exec probes pass",
    );
  });

  test("a pod that allocates 256 MiB under a 32 MiB limit is OOM-killed, and restarted", async () => {
    // restartPolicy Always (the default): the kubelet starts the container again, and its last
    // state keeps the reason.
    const status = await eventually(
      "kg-oom to be OOMKilled and restarted",
      () => {
        const r = kubectl([
          "get",
          "pod",
          "-n",
          ns,
          "kg-oom",
          "-o",
          "jsonpath={.status.containerStatuses[0]}",
        ]);
        if (r.code !== 0 || !r.stdout) return undefined;
        const s = JSON.parse(r.stdout) as ContainerStatus;
        return s.restartCount >= 1 && s.lastState?.terminated?.reason === "OOMKilled"
          ? s
          : undefined;
      },
      120_000,
      1000,
    );
    expect(status.lastState?.terminated?.reason).toBe("OOMKilled");
    expect(status.restartCount).toBeGreaterThanOrEqual(1);
    proved(
      "oomKill",
      "a pod allocating 256 MiB under a 32Mi limit is OOMKilled by its memory cgroup and restarted by the kubelet",
    );
  });
});
