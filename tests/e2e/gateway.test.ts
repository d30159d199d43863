/**
 * End to end on the local cluster: the module (pepr dev) provisions a Gateway's proxies as real
 * pods, programs them over mTLS, and traffic through the Gateway's LoadBalancer address reaches
 * the echo backend; a replaced proxy pod is programmed without anyone acting, while a steady
 * client sees no failed request.
 */
import { Socket } from "node:net";
import { connect } from "node:tls";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { PeprDev, startModule } from "../support/module";
import { get, steadyClient } from "../support/traffic";
import { demoSample } from "../support/manifests";
import { capabilityMask, containerFacts } from "../support/node";
import { writeReportSection } from "../support/demo-gateway";
import type { V1Pod } from "@kubernetes/client-node";

/** The proxies' memory limit, set through KengineParameters and applied by the node. */
const PROXY_MEMORY_LIMIT = "256Mi";
const bytesOf = (q: string): number => {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(q);
  if (!m) throw new Error(`unexpected quantity ${q}`);
  return Number(m[1]) * { "": 1, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 }[m[2] ?? ""]!;
};

interface Echo {
  readonly namespace: string;
  readonly pod: string;
  readonly path: string;
}

/** The message of the demo Gateway's Programmed condition ("N/M proxies run …"). */
const programmedMessage = (ns: string): string =>
  kubectl([
    "get",
    "gateway",
    "demo",
    "-n",
    ns,
    "-o",
    "jsonpath={.status.conditions[?(@.type=='Programmed')].message}",
  ]).stdout;

describe("a Gateway of our class on the local cluster", () => {
  let dev: PeprDev;
  let ns: string;
  let address: string;
  const host = "e2e.kengine.local";

  beforeAll(async () => {
    dev = await startModule();
    ns = createNamespace("e2e");
    // The sample's backend, GatewayClass, Gateway and route, moved to this test's namespace.
    const sample = demoSample(ns, host);
    kubectlOk(["apply", "-f", "-"], sample);
    // pepr dev alone may take up to 240 s to start on a loaded 2-core machine
  }, 420_000);

  afterAll(async () => {
    await dev?.stop();
    if (ns) deleteNamespace(ns);
  });

  it("provisions proxies, gets an address and becomes Programmed", async () => {
    await eventually(
      "the Gateway to be Programmed",
      () => {
        const s = kubectl([
          "get",
          "gateway",
          "demo",
          "-n",
          ns,
          "-o",
          "jsonpath={.status.conditions[?(@.type=='Programmed')].status}",
        ]).stdout;
        return s === "True" ? s : undefined;
      },
      180_000,
      500,
    );
    address = kubectlOk([
      "get",
      "gateway",
      "demo",
      "-n",
      ns,
      "-o",
      "jsonpath={.status.addresses[0].value}",
    ]);
    expect(address).toMatch(/^127\./);
    // Programmed=True says every ready proxy runs the current config; the second pod may still
    // be starting then, so wait for both.
    const message = await eventually(
      "both proxies to run the current config",
      () => {
        const m = programmedMessage(ns);
        return m.startsWith("2/2 ") ? m : undefined;
      },
      120_000,
      500,
    );
    expect(message).toMatch(/^2\/2 proxies/);
    const route = kubectlOk([
      "get",
      "httproute",
      "echo",
      "-n",
      ns,
      "-o",
      "jsonpath={.status.parents[0].conditions[?(@.type=='Accepted')].status}",
    ]);
    expect(route).toBe("True");
  });

  it("shows every proxy as a KengineProxy: Synced, same hash, verified channel", async () => {
    const rows = await eventually(
      "two Synced KengineProxy objects",
      () => {
        const out = kubectl([
          "get",
          "kengineproxies",
          "-n",
          ns,
          "-o",
          'jsonpath={range .items[*]}{.spec.gateway},{.status.conditions[0].status},{.status.appliedHash},{.status.desiredHash},{.status.channel.state}{"\\n"}{end}',
        ])
          .stdout.trim()
          .split("\n")
          .filter(Boolean);
        return out.length === 2 && out.every(r => r.split(",")[1] === "True") ? out : undefined;
      },
      60_000,
    );
    const fields = rows.map(r => r.split(","));
    for (const [gateway, , applied, desired, channel] of fields) {
      expect(gateway).toBe("demo");
      expect(applied).toMatch(/^[0-9a-f]{12}$/);
      expect(applied).toBe(desired);
      expect(channel).toBe("Verified");
    }
    expect(fields[0][2]).toBe(fields[1][2]);
    // The printer columns are what an operator sees.
    expect(kubectlOk(["get", "kengineproxies", "-n", ns])).toMatch(
      /GATEWAY\s+SYNCED\s+APPLIED\s+DESIRED\s+CHANNEL/,
    );
  });

  it("routes traffic through the Gateway's address to the backend", async () => {
    const r = await eventually("a 200 through the Gateway", async () => {
      const res = await get(address, host, "/hello");
      return res.status === 200 ? res : undefined;
    });
    const echo = JSON.parse(r.body) as Echo;
    expect(echo.namespace).toBe(ns);
    expect(echo.pod).toMatch(/^echo-/);
    expect(echo.path).toBe("/hello");
    // A host no route serves gets 404 from the proxy, not the backend.
    expect(await get(address, "nobody.example")).toMatchObject({ status: 404 });
  });

  it("programs a replacement proxy pod by itself while a steady client sees no failure", async () => {
    const pods = kubectlOk([
      "get",
      "pods",
      "-n",
      ns,
      "-l",
      "app.kubernetes.io/component=proxy",
      "-o",
      "jsonpath={.items[*].metadata.name}",
    ]).split(" ");
    expect(pods).toHaveLength(2);
    const client = steadyClient(address, host, { max: 2000 });
    kubectlOk(["delete", "pod", pods[0], "-n", ns, "--wait=true"]);
    await eventually(
      "two ready proxy pods again, none of them the deleted one",
      () => {
        const ready = kubectl([
          "get",
          "pods",
          "-n",
          ns,
          "-l",
          "app.kubernetes.io/component=proxy",
          "-o",
          "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=='Ready')].status} {end}",
        ])
          .stdout.trim()
          .split(" ")
          .filter(p => p.endsWith("=True") && !p.startsWith(`${pods[0]}=`));
        return ready.length === 2 ? ready : undefined;
      },
      120_000,
      500,
    );
    await eventually(
      "the Gateway to say 2/2 again",
      () => {
        const m = programmedMessage(ns);
        return m.startsWith("2/2") ? m : undefined;
      },
      60_000,
    );
    const { sent, failures } = await client.stop();
    expect(sent).toBeGreaterThan(10);
    expect(failures).toEqual([]);
  });

  it("follows its KengineParameters: 3 proxies, then 5, all programmed, no failed request", async () => {
    kubectlOk(
      ["apply", "-f", "-"],
      `apiVersion: gateway.kengine.io/v1alpha1
kind: KengineParameters
metadata: {name: fleet, namespace: ${ns}}
spec:
  proxy: {replicas: 3, resources: {limits: {memory: ${PROXY_MEMORY_LIMIT}}}}
`,
    );
    kubectlOk([
      "patch",
      "gateway",
      "demo",
      "-n",
      ns,
      "--type=merge",
      "-p",
      JSON.stringify({
        spec: {
          infrastructure: {
            parametersRef: {
              group: "gateway.kengine.io",
              kind: "KengineParameters",
              name: "fleet",
            },
          },
        },
      }),
    ]);
    const synced = (n: number) =>
      eventually(
        `${n} proxies programmed and ${n} Synced KengineProxy rows with one hash`,
        () => {
          const m = programmedMessage(ns);
          const rows = kubectl([
            "get",
            "kengineproxies",
            "-n",
            ns,
            "-o",
            "jsonpath={range .items[*]}{.status.conditions[0].status},{.status.appliedHash} {end}",
          ])
            .stdout.trim()
            .split(" ")
            .filter(Boolean);
          const hashes = new Set(rows.map(r => r.split(",")[1]));
          return m.startsWith(`${n}/${n} `) &&
            rows.length === n &&
            rows.every(r => r.startsWith("True,")) &&
            hashes.size === 1
            ? rows
            : undefined;
        },
        180_000,
        500,
      );
    await synced(3);

    const client = steadyClient(address, host, { max: 5000 });
    kubectlOk([
      "patch",
      "kengineparameters",
      "fleet",
      "-n",
      ns,
      "--type=merge",
      "-p",
      '{"spec":{"proxy":{"replicas":5}}}',
    ]);
    await synced(5);
    const { sent, failures } = await client.stop();
    expect(sent).toBeGreaterThan(10);
    expect(failures).toEqual([]);
  });

  // What the product declares for its proxies (capabilities/workload/pod.ts, and the memory
  // limit of the KengineParameters above) is what the kernel applies: read from the host for
  // every proxy pod.
  it("runs every proxy under the securityContext and memory limit its pod declares", () => {
    const started = Date.now();
    const proxies = "app.kubernetes.io/component=proxy";
    const pods = JSON.parse(kubectlOk(["get", "pods", "-n", ns, "-l", proxies, "-o", "json"])) as {
      items: V1Pod[];
    };
    const running = pods.items.filter(p => !p.metadata?.deletionTimestamp);
    expect(running).toHaveLength(5);
    const seen: object[] = [];
    for (const pod of running) {
      const podSc = pod.spec?.securityContext ?? {};
      const container = pod.spec?.containers.find(c => c.name === "proxy");
      const sc = container?.securityContext ?? {};
      // what the product promises (docs/operations.md), declared on the pod
      expect(podSc.runAsNonRoot ?? sc.runAsNonRoot).toBe(true);
      expect(podSc.seccompProfile?.type).toBe("RuntimeDefault");
      expect(sc.readOnlyRootFilesystem).toBe(true);
      expect(sc.allowPrivilegeEscalation).toBe(false);
      expect(sc.capabilities?.drop).toEqual(["ALL"]);
      expect(container?.resources?.limits?.memory).toBe(PROXY_MEMORY_LIMIT);
      // and what the kernel applies to its process
      const facts = containerFacts(pod.metadata?.uid ?? "", "proxy");
      const uid = String(sc.runAsUser ?? podSc.runAsUser);
      const gid = String(sc.runAsGroup ?? podSc.runAsGroup);
      expect(uid).not.toBe("0");
      expect(facts.uid).toEqual([uid, uid, uid, uid]);
      expect(facts.gid).toEqual([gid, gid, gid, gid]);
      expect(facts.capEff).toBe("0000000000000000"); // non-root: no effective capability
      expect(facts.capBnd).toBe(capabilityMask(sc.capabilities?.add ?? []));
      expect(facts.seccomp).toBe("2"); // SECCOMP_MODE_FILTER, the runtime's default profile
      expect(facts.noNewPrivs).toBe("1");
      expect(facts.rootWritable).toBe(false);
      expect(facts.memoryLimit).toBe(String(bytesOf(PROXY_MEMORY_LIMIT)));
      const { env: _env, pid: _pid, ...kernel } = facts;
      seen.push({ pod: pod.metadata?.name, ...kernel });
    }
    writeReportSection("managedProxyNode", "tests/e2e/gateway.test.ts", {
      durationMs: Date.now() - started,
      proved:
        "every managed proxy pod runs as the uid/gid its securityContext names, with no effective capability, only the added ones bounding, seccomp filter, no_new_privs, a read-only root and the memory cgroup limit of its KengineParameters (host /proc and cgroupfs, through crictl)",
      checks: expect.getState().assertionCalls,
      pods: seen,
    });
  });

  it("refuses the management port to a client without a certificate, and has no admin API on TCP", async () => {
    const ip = kubectlOk([
      "get",
      "pods",
      "-n",
      ns,
      "-l",
      "app.kubernetes.io/component=proxy",
      "-o",
      "jsonpath={.items[0].status.podIP}",
    ]);
    const outcome = await new Promise<string>(resolve => {
      const s = connect(
        {
          host: ip,
          port: 19443,
          servername: `x.demo-kengine-admin.${ns}.svc`,
          rejectUnauthorized: false,
        },
        () => {
          // TLS 1.3 reports a missing client certificate after the handshake: try to use the channel.
          s.write(`GET /config/ HTTP/1.1\r\nHost: x.demo-kengine-admin.${ns}.svc\r\n\r\n`);
        },
      );
      let data = "";
      s.on("data", d => (data += d));
      s.on("error", e => resolve(`error: ${e.message}`));
      s.on("close", () => resolve(data ? `data: ${data.slice(0, 80)}` : "closed"));
      s.setTimeout(5000, () => s.destroy(new Error("timeout")));
    });
    expect(outcome).not.toMatch(/^data: HTTP\/1\.1 200/);
    expect(outcome).toMatch(/error|closed/);
    // the admin API is a unix socket in the pod (workload/pod.ts): Caddy's default admin port is closed
    const adminPort = await new Promise<string>(resolve => {
      const s = new Socket();
      s.setTimeout(5000, () => (s.destroy(), resolve("timeout")));
      s.once("connect", () => (s.destroy(), resolve("connected")));
      s.once("error", (e: Error & { code?: string }) => resolve(e.code ?? e.message));
      s.connect(2019, ip);
    });
    expect(adminPort).toBe("ECONNREFUSED");
  });
});
