/**
 * The local kubelet (hack/kubelet) against the real control plane: pods run as processes with
 * their own IPs, report status, serve logs; LoadBalancer Services get a working address.
 */
import { randomBytes } from "node:crypto";
import { spawn, spawnSync } from "node:child_process";
import { createSocket } from "node:dgram";
import { existsSync, readdirSync } from "node:fs";
import { createServer, Socket } from "node:net";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { kubeconfigPath, kubectlBin } from "../support/paths";
import { describeLocalKubelet } from "../support/node";

interface PodJson {
  metadata: { name: string; uid: string; deletionTimestamp?: string };
  status: {
    phase?: string;
    podIP?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: {
      name: string;
      ready: boolean;
      restartCount: number;
      state: {
        waiting?: { reason: string; message?: string };
        running?: object;
        terminated?: { exitCode: number; reason: string };
      };
      lastState: { terminated?: { exitCode: number } };
    }[];
  };
}

interface EchoResponse {
  path: string;
  namespace: string;
  pod: string;
}

const echoImage = "registry.k8s.io/gateway-api/echo-basic:v20251204-v1.4.1";

function echoDeployment(name: string, replicas: number): string {
  return `
apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: echo
        image: ${echoImage}
        env:
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        ports: [{name: http, containerPort: 3000}]
        readinessProbe: {httpGet: {path: /health, port: http}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: ${name}}
spec:
  type: LoadBalancer
  selector: {app: ${name}}
  ports:
  - {name: web, port: 8080, targetPort: http}
`;
}

function pods(ns: string, selector?: string): PodJson[] {
  const args = ["get", "pods", "-n", ns, "-o", "json"];
  if (selector) args.push("-l", selector);
  return (JSON.parse(kubectlOk(args)) as { items: PodJson[] }).items;
}

function pod(ns: string, name: string): PodJson {
  return JSON.parse(kubectlOk(["get", "pod", "-n", ns, name, "-o", "json"])) as PodJson;
}

const isReady = (p: PodJson): boolean =>
  !p.metadata.deletionTimestamp &&
  p.status.conditions?.some(c => c.type === "Ready" && c.status === "True") === true;

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

/** Ready pods of the echo deployment, once there are exactly `n`. */
function readyEchoPods(ns: string, n: number): Promise<PodJson[]> {
  return eventually(
    `${n} ready echo pods`,
    () => {
      const ready = pods(ns, "app=echo").filter(isReady);
      const all = pods(ns, "app=echo").filter(p => !p.metadata.deletionTimestamp);
      return ready.length === n && all.length === n ? ready : undefined;
    },
    60_000,
  );
}

// testTimeout in a jest project entry is not applied; set it here.
jest.setTimeout(180_000);

describeLocalKubelet("local kubelet", () => {
  let ns: string;

  beforeAll(() => {
    ns = createNamespace("kubelet");
  });
  afterAll(() => deleteNamespace(ns));

  it("runs an echo-basic Deployment with 2 replicas until it is Available", async () => {
    const started = Date.now();
    kubectlOk(["apply", "-n", ns, "-f", "-"], echoDeployment("echo", 2));
    await eventually(
      "deployment/echo Available with 2 replicas",
      () => {
        const d = JSON.parse(kubectlOk(["get", "deployment", "-n", ns, "echo", "-o", "json"])) as {
          status: { availableReplicas?: number; conditions?: { type: string; status: string }[] };
        };
        const available = d.status.conditions?.some(
          c => c.type === "Available" && c.status === "True",
        );
        return available && d.status.availableReplicas === 2 ? true : undefined;
      },
      90_000,
    );
    console.log(`deployment/echo Available after ${Date.now() - started} ms`);
    const running = await readyEchoPods(ns, 2);
    const ips = running.map(p => p.status.podIP);
    expect(new Set(ips).size).toBe(2);
    for (const ip of ips) expect(ip).toMatch(/^10\.244\.0\.\d+$/);
  });

  it("lists both pod IPs in the Service's EndpointSlice", async () => {
    const ips = (await readyEchoPods(ns, 2)).map(p => p.status.podIP!).sort();
    const sliceIPs = await eventually("an EndpointSlice with both pod IPs", () => {
      const out = kubectlOk([
        "get",
        "endpointslices",
        "-n",
        ns,
        "-l",
        "kubernetes.io/service-name=echo",
        "-o",
        "json",
      ]);
      const slices = JSON.parse(out) as {
        items: { endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[] }[];
      };
      const got = slices.items
        .flatMap(s => s.endpoints ?? [])
        .filter(e => e.conditions?.ready !== false)
        .flatMap(e => e.addresses)
        .sort();
      return JSON.stringify(got) === JSON.stringify(ips) ? got : undefined;
    });
    expect(sliceIPs).toEqual(ips);
  });

  it("serves echo-basic's JSON on each pod IP, with the pod's name and namespace", async () => {
    for (const p of await readyEchoPods(ns, 2)) {
      const body = await getJson<EchoResponse>(`http://${p.status.podIP}:3000/from-test`);
      expect(body.pod).toBe(p.metadata.name);
      expect(body.namespace).toBe(ns);
      expect(body.path).toBe("/from-test");
    }
  });

  it("shows the container's log lines through kubectl logs", async () => {
    const [p] = await readyEchoPods(ns, 2);
    const marker = `/log-marker-${randomBytes(4).toString("hex")}`;
    await getJson<EchoResponse>(`http://${p.status.podIP}:3000${marker}`);
    const logs = await eventually("the request in kubectl logs", () => {
      const out = kubectlOk(["logs", "-n", ns, p.metadata.name, "-c", "echo"]);
      return out.includes(marker) ? out : undefined;
    });
    expect(logs).toContain("Starting server, listening on port 3000 (http)");
    expect(logs).toContain(`Echoing back request made to ${marker}`);
    // sinceTime (what the conformance suite's log reader sends) cuts off older lines.
    const since = new Date(Math.ceil((Date.now() + 1) / 1000) * 1000);
    await eventually("the next second", () => (Date.now() > since.getTime() ? true : undefined));
    const marker2 = `/log-since-${randomBytes(4).toString("hex")}`;
    await getJson<EchoResponse>(`http://${p.status.podIP}:3000${marker2}`);
    const recent = kubectlOk([
      "logs",
      "-n",
      ns,
      p.metadata.name,
      `--since-time=${since.toISOString().replace(/\.\d+Z$/, "Z")}`,
    ]);
    expect(recent).toContain(marker2);
    expect(recent).not.toContain(marker);
    expect(recent).not.toContain("Starting server");
    const tail = kubectlOk(["logs", "-n", ns, p.metadata.name, "--tail=1", "--timestamps"]);
    expect(tail.trim().split("\n")).toHaveLength(1);
    expect(tail).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z Echoing back request made to /);
  });

  it("follows a container's log (kubectl logs -f)", async () => {
    const [p] = await readyEchoPods(ns, 2);
    const f = spawn(kubectlBin, [
      "--kubeconfig",
      kubeconfigPath,
      "logs",
      "-f",
      "--tail=0",
      "-n",
      ns,
      p.metadata.name,
    ]);
    let out = "";
    f.stdout.on("data", d => (out += String(d)));
    try {
      const marker = `/follow-${randomBytes(4).toString("hex")}`;
      // Keep asking until the stream (which starts empty) shows a request made after it opened.
      await eventually("the request in the followed log", async () => {
        await getJson<EchoResponse>(`http://${p.status.podIP}:3000${marker}`);
        return out.includes(`Echoing back request made to ${marker}`) ? true : undefined;
      });
      expect(out).not.toContain("Starting server");
    } finally {
      f.kill();
    }
  });

  it("serves a LoadBalancer Service's address from both pods", async () => {
    const names = new Set((await readyEchoPods(ns, 2)).map(p => p.metadata.name));
    const ip = await eventually("a load balancer ingress address", () => {
      const out = kubectlOk([
        "get",
        "service",
        "-n",
        ns,
        "echo",
        "-o",
        "jsonpath={.status.loadBalancer.ingress[0].ip}",
      ]);
      return out || undefined;
    });
    expect(ip).toMatch(/^127\.\d+\.\d+\.\d+$/);
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const body = await getJson<EchoResponse>(`http://${ip}:8080/via-lb`);
      expect(body.namespace).toBe(ns);
      seen.add(body.pod);
    }
    expect(seen).toEqual(names);
  });

  it("takes the address back when a Service stops being a LoadBalancer", async () => {
    kubectlOk(
      ["apply", "-n", ns, "-f", "-"],
      `
apiVersion: v1
kind: Service
metadata: {name: temp-lb}
spec:
  type: LoadBalancer
  selector: {app: echo}
  ports: [{name: web, port: 8181, targetPort: http}]
`,
    );
    const lbIP = () =>
      kubectlOk([
        "get",
        "service",
        "-n",
        ns,
        "temp-lb",
        "-o",
        "jsonpath={.status.loadBalancer.ingress[0].ip}",
      ]);
    const ip = await eventually("an address", () => lbIP() || undefined);
    await eventually("traffic on it", () => getJson<EchoResponse>(`http://${ip}:8181/`));
    kubectlOk(["patch", "service", "-n", ns, "temp-lb", "-p", '{"spec":{"type":"ClusterIP"}}']);
    await eventually("the status cleared", () => (lbIP() === "" ? true : undefined));
    await eventually("the listener closed", async () => {
      try {
        await fetch(`http://${ip}:8181/`, { signal: AbortSignal.timeout(2000) });
        return undefined;
      } catch {
        return true;
      }
    });
    kubectlOk(["delete", "service", "-n", ns, "temp-lb"]);
  });

  it("replaces a deleted pod with a new one on a new IP", async () => {
    const before = await readyEchoPods(ns, 2);
    const victim = before[0];
    kubectlOk(["delete", "pod", "-n", ns, victim.metadata.name, "--wait=true", "--timeout=60s"]);
    const after = await eventually(
      "a replacement pod",
      () => {
        const ready = pods(ns, "app=echo").filter(isReady);
        return ready.length === 2 && ready.every(p => p.metadata.name !== victim.metadata.name)
          ? ready
          : undefined;
      },
      60_000,
    );
    const replacement = after.find(p => p.metadata.name !== before[1].metadata.name)!;
    expect(replacement.metadata.uid).not.toBe(victim.metadata.uid);
    expect(replacement.status.podIP).not.toBe(victim.status.podIP);
    const body = await getJson<EchoResponse>(`http://${replacement.status.podIP}:3000/`);
    expect(body.pod).toBe(replacement.metadata.name);
    // The deleted pod's address no longer answers.
    await expect(
      fetch(`http://${victim.status.podIP}:3000/`, { signal: AbortSignal.timeout(2000) }),
    ).rejects.toThrow();
  });

  it("runs init containers to completion first, and a finished restartPolicy Never pod Succeeds", async () => {
    kubectlOk(
      ["apply", "-n", ns, "-f", "-"],
      `
apiVersion: v1
kind: Pod
metadata: {name: with-init}
spec:
  initContainers:
  - {name: first, image: "caddy:2.11", command: [caddy, version]}
  containers:
  - {name: main, image: "caddy:2.11", command: [caddy, version]}
  restartPolicy: Never
---
apiVersion: v1
kind: Pod
metadata: {name: init-fails}
spec:
  initContainers:
  - {name: first, image: "caddy:2.11", command: [caddy, validate, --config, /nonexistent.json]}
  containers:
  - {name: main, image: ${echoImage}}
`,
    );
    const done = await eventually(
      "with-init Succeeded",
      () => {
        const p = pod(ns, "with-init");
        return p.status.phase === "Succeeded" ? p : undefined;
      },
      60_000,
    );
    expect(done.status.containerStatuses?.[0].state.terminated).toMatchObject({
      exitCode: 0,
      reason: "Completed",
    });
    // Logs of a finished container are still served.
    expect(kubectlOk(["logs", "-n", ns, "with-init", "-c", "main"])).toMatch(/v2\.\d+/);
    expect(kubectlOk(["logs", "-n", ns, "with-init", "-c", "first"])).toMatch(/v2\.\d+/);

    const blocked = await eventually(
      "the failing init container restarted",
      () => {
        const p = JSON.parse(
          kubectlOk(["get", "pod", "-n", ns, "init-fails", "-o", "json"]),
        ) as PodJson & {
          status: { initContainerStatuses?: { restartCount: number }[] };
        };
        return (p.status.initContainerStatuses?.[0]?.restartCount ?? 0) >= 1 ? p : undefined;
      },
      60_000,
    );
    expect(blocked.status.phase).toBe("Pending");
    expect(blocked.status.containerStatuses?.[0].state.waiting?.reason).toBe("PodInitializing");
    expect(blocked.status.conditions?.find(c => c.type === "Initialized")?.status).toBe("False");
    kubectlOk([
      "delete",
      "pod",
      "-n",
      ns,
      "with-init",
      "init-fails",
      "--wait=true",
      "--timeout=60s",
    ]);
  });

  describe("broken pods", () => {
    let bad: string;
    beforeAll(() => {
      bad = createNamespace("kubelet-bad");
      kubectlOk(
        ["apply", "-n", bad, "-f", "-"],
        `
apiVersion: v1
kind: Pod
metadata: {name: unknown-image}
spec:
  containers: [{name: app, image: "docker.io/library/nginx:1.27"}]
---
apiVersion: v1
kind: Pod
metadata: {name: crashing}
spec:
  containers:
  - name: app
    image: ${echoImage}
    env: [{name: HTTP_PORT, value: "not-a-port"}]
---
apiVersion: v1
kind: Pod
metadata: {name: late-config}
spec:
  containers:
  - name: app
    image: ${echoImage}
    env: [{name: POD_NAME, valueFrom: {configMapKeyRef: {name: late, key: name}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: not-alive}
spec:
  containers:
  - name: app
    image: ${echoImage}
    livenessProbe: {httpGet: {path: /status/500, port: 3000}, periodSeconds: 1, failureThreshold: 2}
---
apiVersion: v1
kind: Pod
metadata: {name: never-ready}
spec:
  containers:
  - name: app
    image: ${echoImage}
    readinessProbe: {httpGet: {path: /status/503, port: 3000}, periodSeconds: 1}
`,
      );
    });
    afterAll(() => deleteNamespace(bad));

    it("reports ErrImagePull with the image name for an unknown image", async () => {
      const cs = await eventually("an ErrImagePull status", () => {
        const s = pod(bad, "unknown-image").status.containerStatuses?.[0];
        return s?.state.waiting?.reason === "ErrImagePull" ? s : undefined;
      });
      expect(cs.state.waiting?.message).toContain("docker.io/library/nginx:1.27");
      expect(cs.ready).toBe(false);
      const p = pod(bad, "unknown-image");
      expect(p.status.phase).toBe("Pending");
      expect(isReady(p)).toBe(false);
      const logs = kubectl(["logs", "-n", bad, "unknown-image"]);
      expect(logs.code).not.toBe(0);
      expect(logs.stderr).toContain("is waiting to start: ErrImagePull");
    });

    it("restarts a crashing container with back-off and counts the restarts", async () => {
      const cs = await eventually(
        "restartCount >= 2",
        () => {
          const s = pod(bad, "crashing").status.containerStatuses?.[0];
          return s && s.restartCount >= 2 ? s : undefined;
        },
        60_000,
      );
      expect(cs.ready).toBe(false);
      expect(cs.lastState.terminated?.exitCode).not.toBe(0);
      await eventually("CrashLoopBackOff", () => {
        const s = pod(bad, "crashing").status.containerStatuses?.[0];
        return s?.state.waiting?.reason === "CrashLoopBackOff" ? true : undefined;
      });
      const previous = kubectlOk(["logs", "-n", bad, "crashing", "--previous"]);
      expect(previous).toContain("Failed to start listening");
    });

    it("restarts a container that fails its liveness probe", async () => {
      const cs = await eventually(
        "a liveness restart",
        () => {
          const s = pod(bad, "not-alive").status.containerStatuses?.[0];
          return s && s.restartCount >= 1 && s.lastState.terminated ? s : undefined;
        },
        60_000,
      );
      expect(cs.lastState.terminated?.exitCode).not.toBe(0);
      const events = kubectlOk([
        "get",
        "events",
        "-n",
        bad,
        "--field-selector",
        "involvedObject.name=not-alive",
        "-o",
        'jsonpath={range .items[*]}{.reason}: {.message}{"\\n"}{end}',
      ]);
      expect(events).toContain(
        "Unhealthy: Liveness probe failed: HTTP probe failed with statuscode: 500",
      );
      expect(events).toContain("Killing: Container app failed liveness probe, will be restarted");
    });

    it("keeps a pod whose readiness probe fails Running but not Ready", async () => {
      await eventually("never-ready running", () =>
        pod(bad, "never-ready").status.containerStatuses?.[0]?.state.running ? true : undefined,
      );
      // Many probe periods later it is still not ready and was never restarted.
      await new Promise(r => setTimeout(r, 4000));
      const p = pod(bad, "never-ready");
      expect(p.status.phase).toBe("Running");
      expect(isReady(p)).toBe(false);
      expect(p.status.containerStatuses?.[0].ready).toBe(false);
      expect(p.status.containerStatuses?.[0].restartCount).toBe(0);
    });

    it("waits with CreateContainerConfigError for a missing ConfigMap, then runs once it exists", async () => {
      const cs = await eventually("CreateContainerConfigError", () => {
        const s = pod(bad, "late-config").status.containerStatuses?.[0];
        return s?.state.waiting?.reason === "CreateContainerConfigError" ? s : undefined;
      });
      expect(cs.state.waiting?.message).toContain("late");
      kubectlOk(["create", "configmap", "-n", bad, "late", "--from-literal=name=from-configmap"]);
      const p = await eventually(
        "late-config running",
        () => {
          const x = pod(bad, "late-config");
          return isReady(x) ? x : undefined;
        },
        60_000,
      );
      const body = await getJson<EchoResponse>(`http://${p.status.podIP}:3000/`);
      expect(body.pod).toBe("from-configmap");
    });

    it("does not disturb healthy pods", async () => {
      const healthy = await readyEchoPods(ns, 2);
      for (const p of healthy) {
        expect(p.status.containerStatuses?.[0].restartCount).toBe(0);
        const body = await getJson<EchoResponse>(`http://${p.status.podIP}:3000/`);
        expect(body.pod).toBe(p.metadata.name);
      }
    });
  });

  it("honours configMap, secret and emptyDir volumes and downward-API env (Caddy image)", async () => {
    kubectlOk(
      ["apply", "-n", ns, "-f", "-"],
      `
apiVersion: v1
kind: ConfigMap
metadata: {name: caddy-config}
data:
  Caddyfile: |
    {
      admin off
    }
    :8080 {
      handle /env {
        respond "{env.MY_POD} {env.MY_NS} {env.MY_IP} {env.MY_NODE} {env.PLAIN}"
      }
      handle_path /site/* {
        root * /srv/kg-test-site
        file_server
      }
      handle {
        root * /srv/kg-test-secret
        file_server
      }
    }
---
apiVersion: v1
kind: ConfigMap
metadata: {name: site}
data: {page.txt: "version one"}
---
apiVersion: v1
kind: Secret
metadata: {name: caddy-secret}
stringData: {greeting.txt: "hello from a secret"}
---
apiVersion: v1
kind: Pod
metadata: {name: caddy}
spec:
  containers:
  - name: caddy
    image: caddy:2.11
    env:
    - {name: MY_POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: MY_NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: MY_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: MY_NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: PLAIN, value: "plain-value"}
    ports: [{containerPort: 8080}]
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
    livenessProbe: {exec: {command: [test, -f, /etc/caddy/Caddyfile]}, periodSeconds: 2}
    volumeMounts:
    - {name: config, mountPath: /etc/caddy, readOnly: true}
    - {name: secret, mountPath: /srv/kg-test-secret, readOnly: true}
    - {name: scratch, mountPath: /data}
    - {name: site, mountPath: /srv/kg-test-site}
  volumes:
  - {name: site, configMap: {name: site}}
  - {name: config, configMap: {name: caddy-config}}
  - {name: secret, secret: {secretName: caddy-secret}}
  - {name: scratch, emptyDir: {}}
`,
    );
    const p = await eventually("caddy ready", () => {
      const x = pod(ns, "caddy");
      return isReady(x) ? x : undefined;
    });
    const ip = p.status.podIP!;
    const env = await (await fetch(`http://${ip}:8080/env`)).text();
    expect(env).toBe(`caddy ${ns} ${ip} kengine-local plain-value`);
    const secret = await fetch(`http://${ip}:8080/greeting.txt`);
    expect(await secret.text()).toBe("hello from a secret");
    // The mounts are private to the container: the host path stays empty.
    if (existsSync("/srv/kg-test-secret")) expect(readdirSync("/srv/kg-test-secret")).toEqual([]);
    // A ConfigMap change reaches the mounted volume of the running pod.
    expect(await (await fetch(`http://${ip}:8080/site/page.txt`)).text()).toBe("version one");
    kubectlOk([
      "patch",
      "configmap",
      "-n",
      ns,
      "site",
      "-p",
      '{"data":{"page.txt":"version two"}}',
    ]);
    await eventually(
      "the updated page",
      async () => {
        const t = await (await fetch(`http://${ip}:8080/site/page.txt`)).text();
        return t === "version two" ? t : undefined;
      },
      60_000,
    );
    // Liveness (exec) keeps passing: no restarts.
    await new Promise(r => setTimeout(r, 3000));
    expect(pod(ns, "caddy").status.containerStatuses?.[0].restartCount).toBe(0);
  });
  it("lets pods reach each other (Caddy in one pod proxies to an echo pod)", async () => {
    const [backend] = await readyEchoPods(ns, 2);
    kubectlOk(
      ["apply", "-n", ns, "-f", "-"],
      `
apiVersion: v1
kind: ConfigMap
metadata: {name: proxy-config}
data:
  Caddyfile: |
    {
      admin off
    }
    :8080 {
      reverse_proxy ${backend.status.podIP}:3000
    }
---
apiVersion: v1
kind: Pod
metadata: {name: proxy}
spec:
  containers:
  - name: caddy
    image: caddy:2.11
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
    volumeMounts: [{name: config, mountPath: /etc/caddy}]
  volumes: [{name: config, configMap: {name: proxy-config}}]
`,
    );
    const proxy = await eventually("proxy ready", () => {
      const x = pod(ns, "proxy");
      return isReady(x) ? x : undefined;
    });
    const marker = `/pod-to-pod-${randomBytes(4).toString("hex")}`;
    const body = await getJson<EchoResponse>(`http://${proxy.status.podIP}:8080${marker}`);
    expect(body.pod).toBe(backend.metadata.name);
    // The echo pod saw the request come from the proxy pod's own address.
    const logs = kubectlOk(["logs", "-n", ns, backend.metadata.name]);
    expect(logs).toContain(
      `Echoing back request made to ${marker} to client (${proxy.status.podIP}:`,
    );
  });

  it("never routes pod traffic off the node (routing lookup only, nothing is sent)", async () => {
    const [p] = await readyEchoPods(ns, 2);
    const lookup = (dst: string) =>
      spawnSync("ip", ["route", "get", dst, "from", p.status.podIP!, "iif", "kg-br0"], {
        encoding: "utf8",
      });
    // 192.0.2.1 (TEST-NET-1) stands for any address beyond the node.
    const away = lookup("192.0.2.1");
    expect(away.status).not.toBe(0);
    expect(away.stderr).toMatch(/unreachable|No route to host/i);
    const host = lookup("10.244.0.1");
    expect(host.status).toBe(0);
    expect(host.stdout).toMatch(/^local 10\.244\.0\.1 /);
  });

  it("forwards UDP on a LoadBalancer address to the ready endpoints", async () => {
    kubectlOk(
      ["apply", "-n", ns, "-f", "-"],
      `
apiVersion: apps/v1
kind: Deployment
metadata: {name: udp}
spec:
  replicas: 2
  selector: {matchLabels: {app: udp}}
  template:
    metadata: {labels: {app: udp}}
    spec:
      containers:
      - name: echo
        image: ${echoImage}
        env:
        - {name: UDP_ECHO_SERVER, value: "1"}
        - {name: UDP_PORT, value: "9000"}
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
---
apiVersion: v1
kind: Service
metadata: {name: udp}
spec:
  type: LoadBalancer
  selector: {app: udp}
  ports: [{name: dns, port: 5353, targetPort: 9000, protocol: UDP}]
`,
    );
    const names = await eventually(
      "2 running udp pods in the EndpointSlice",
      () => {
        const ps = pods(ns, "app=udp").filter(isReady);
        const slices = kubectlOk([
          "get",
          "endpointslices",
          "-n",
          ns,
          "-l",
          "kubernetes.io/service-name=udp",
          "-o",
          "jsonpath={.items[*].endpoints[*].addresses[*]}",
        ]).split(" ");
        return ps.length === 2 && ps.every(p => slices.includes(p.status.podIP!))
          ? new Set(ps.map(p => p.metadata.name))
          : undefined;
      },
      60_000,
    );
    const ip = await eventually("udp load balancer address", () => {
      const out = kubectlOk([
        "get",
        "service",
        "-n",
        ns,
        "udp",
        "-o",
        "jsonpath={.status.loadBalancer.ingress[0].ip}",
      ]);
      return out || undefined;
    });
    const ask = (payload: string) =>
      new Promise<{ request: string; pod: string }>((resolve, reject) => {
        const sock = createSocket("udp4");
        const timer = setTimeout(() => {
          sock.close();
          reject(new Error("no UDP reply"));
        }, 2000);
        sock.on("message", m => {
          clearTimeout(timer);
          sock.close();
          resolve(JSON.parse(m.toString()) as { request: string; pod: string });
        });
        sock.send(payload, 5353, ip);
      });
    // Round robin over the endpoints the load balancer's own watch knows: that watch may see the
    // second pod's EndpointSlice a moment after kubectl did (as kube-proxy may), so the first
    // replies can all come from one pod; within 20 requests both answer.
    const seen = new Set<string>();
    for (let i = 0; i < 20 && seen.size < names.size; i++) {
      const reply = await eventually("a UDP reply", () => ask(`ping-${i}`));
      expect(reply.request).toBe(`ping-${i}`);
      seen.add(reply.pod);
      if (i >= 5) await new Promise(r => setTimeout(r, 250));
    }
    expect(seen).toEqual(names);
  });

  it("runs the conformance suite's CoreDNS image (stand-in while CoreDNS is not built)", async () => {
    kubectlOk(
      ["apply", "-n", ns, "-f", "-"],
      `
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns}
data:
  Corefile: |
    foo.bar.com:53 {
      whoami
    }
---
apiVersion: v1
kind: Pod
metadata: {name: coredns}
spec:
  containers:
  - name: coredns
    image: registry.k8s.io/coredns/coredns:v1.12.2
    args: [-conf, /root/Corefile]
    volumeMounts: [{mountPath: /root, name: conf}]
  volumes: [{name: conf, configMap: {name: coredns}}]
`,
    );
    const p = await eventually("coredns ready", () => {
      const x = pod(ns, "coredns");
      return isReady(x) ? x : undefined;
    });
    // A DNS query for foo.bar.com A, id 0x1234.
    const q = Buffer.concat([
      Buffer.from([0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]),
      Buffer.from([
        3,
        ...Buffer.from("foo"),
        3,
        ...Buffer.from("bar"),
        3,
        ...Buffer.from("com"),
        0,
      ]),
      Buffer.from([0, 1, 0, 1]),
    ]);
    const answer = await eventually(
      "a DNS answer",
      () =>
        new Promise<Buffer>((resolve, reject) => {
          const sock = createSocket("udp4");
          const timer = setTimeout(() => {
            sock.close();
            reject(new Error("no DNS answer"));
          }, 2000);
          sock.on("message", m => {
            clearTimeout(timer);
            sock.close();
            resolve(m);
          });
          sock.send(q, 53, p.status.podIP!);
        }),
    );
    expect(answer.readUInt16BE(0)).toBe(0x1234);
    expect(answer.readUInt16BE(2) & 0x8000).toBe(0x8000);
    expect(answer.readUInt16BE(6)).toBe(1);
    expect([...answer.subarray(answer.length - 4)]).toEqual([10, 244, 0, 1]);
    kubectlOk(["delete", "pod", "-n", ns, "coredns", "--wait=false"]);
  });

  it("stops containers with SIGTERM and SIGKILLs them after the grace period", async () => {
    // A backend on the host bridge that accepts and never answers keeps a request in flight,
    // and Caddy waits for in-flight requests on SIGTERM.
    const held: Socket[] = [];
    const hang = createServer(c => held.push(c));
    await new Promise<void>(r => hang.listen(0, "10.244.0.1", r));
    const hangPort = (hang.address() as { port: number }).port;
    const manifest = (name: string) => `
apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}}
data:
  Caddyfile: |
    {
      admin off
    }
    :8080 {
      reverse_proxy 10.244.0.1:${hangPort}
    }
    :8081 {
      respond ok
    }
---
apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: caddy
    image: caddy:2.11
    readinessProbe: {httpGet: {port: 8081}, periodSeconds: 1}
    volumeMounts: [{name: config, mountPath: /etc/caddy}]
  volumes: [{name: config, configMap: {name: ${name}}}]
`;
    /** Deletes the pod and returns the last container state its watch showed. */
    const deleteAndWatch = async (name: string): Promise<string> => {
      const w = spawn(kubectlBin, [
        "--kubeconfig",
        kubeconfigPath,
        "get",
        "pod",
        "-n",
        ns,
        name,
        "-w",
        "-o",
        'jsonpath={.status.containerStatuses[0].state}{"\\n"}',
      ]);
      let out = "";
      w.stdout.on("data", d => (out += String(d)));
      await eventually("the watch to start", () => (out.length > 0 ? true : undefined));
      kubectlOk(["delete", "pod", "-n", ns, name, "--wait=true", "--timeout=60s"]);
      await eventually("the final state in the watch", () =>
        out.includes("terminated") ? true : undefined,
      );
      w.kill();
      return out.trim().split("\n").pop()!;
    };
    try {
      for (const name of ["graceful", "stuck"]) {
        kubectlOk(["apply", "-n", ns, "-f", "-"], manifest(name));
      }
      const stuck = await eventually("stuck ready", () => {
        const x = pod(ns, "stuck");
        return isReady(x) ? x : undefined;
      });
      await eventually("graceful ready", () => (isReady(pod(ns, "graceful")) ? true : undefined));
      const inFlight = fetch(`http://${stuck.status.podIP}:8080/`).catch(() => undefined);
      await eventually("the request in flight", () => (held.length > 0 ? true : undefined));

      const graceful = JSON.parse(await deleteAndWatch("graceful")) as {
        terminated: { exitCode: number; signal?: number };
      };
      expect(graceful.terminated.signal).toBeUndefined();
      expect(graceful.terminated.exitCode).not.toBe(137);

      const killed = JSON.parse(await deleteAndWatch("stuck")) as {
        terminated: { exitCode: number; signal?: number };
      };
      expect(killed.terminated).toMatchObject({ exitCode: 137, signal: 9 });
      await inFlight;
    } finally {
      held.forEach(c => c.destroy());
      hang.close();
    }
  });
});
