/**
 * Ingest once, counted on the real API server: a controller process opens
 * exactly one watch per watched kind (the API server's own gauge of open WATCH requests,
 * `apiserver_longrunning_requests`, before and after the controller starts): no kind is
 * watched twice, and none is left unwatched.
 */
import { ChildProcess, spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { kubeClient } from "../../capabilities/kube/client";
import { DEFAULT_PROXY_SETTINGS } from "../../capabilities/provision";
import { Reconciler } from "../../capabilities/reconcile";
import { LIST_PATHS } from "../../capabilities/snapshot/kinds";
import { METADATA_LIST_ACCEPT } from "../../capabilities/reconcile/referenced-data";
import { metadataOnly } from "../../capabilities/snapshot";
import {
  applyItems,
  createNamespace,
  deleteNamespace,
  eventually,
  kubectlOk,
} from "../support/kube";
import { quietLogger } from "../support/manifests";
import { TcpProxy, startTcpProxy } from "../support/tcp-proxy";
import { kubeconfigPath, kubectlBin, repoRoot } from "../support/paths";

const kubeconfigAt = (path: string): KubeConfig => {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
};

/** Open cluster-wide WATCH requests per "group/resource", from the API server's metrics. */
function openWatches(): Map<string, number> {
  // several MiB: more than kubectl()'s default output buffer
  const r = spawnSync(kubectlBin, ["--kubeconfig", kubeconfigPath, "get", "--raw", "/metrics"], {
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
    timeout: 60_000,
  });
  if (r.status !== 0) throw new Error(`kubectl get --raw /metrics: ${r.stderr || String(r.error)}`);
  const text = r.stdout;
  const counts = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line.startsWith("apiserver_longrunning_requests{")) continue;
    const labels = Object.fromEntries(
      [...line.matchAll(/(\w+)="([^"]*)"/g)].map(m => [m[1], m[2]] as const),
    );
    // Cluster-wide watches only, as the controller's are: the real node's kubelet watches each
    // Secret and ConfigMap its pods mount by name (scope "resource"), and those come and go
    // with other suites' pods (the count of Secrets and ConfigMaps was off by one so).
    if (labels.verb !== "WATCH" || labels.subresource) continue;
    if (labels.scope !== undefined && labels.scope !== "cluster") continue;
    const key = `${labels.group ?? ""}/${labels.resource}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1)));
  }
  return counts;
}

/**
 * The open watches once they stop changing (two reads a second apart agree): a controller an
 * earlier suite stopped may still hold watches for a moment, and counting them in the baseline
 * would make this controller's look missing when they close.
 */
async function settledWatches(): Promise<Map<string, number>> {
  const same = (a: Map<string, number>, b: Map<string, number>): boolean =>
    a.size === b.size && [...a].every(([k, n]) => b.get(k) === n);
  let last = openWatches();
  return eventually(
    "the API server's open watches to settle",
    async () => {
      await new Promise(r => setTimeout(r, 1000));
      const now = openWatches();
      const settled = same(last, now);
      last = now;
      return settled ? now : undefined;
    },
    60_000,
    0,
  );
}

/** "group/resource" of each watched kind, from its list path. */
const watchedResources = Object.values(LIST_PATHS).map(p => {
  const parts = p.split("/");
  return `${parts[1] === "api" ? "" : parts[2]}/${parts[parts.length - 1]}`;
});

describe("ingest once", () => {
  let ns: string;
  let proc: ChildProcess | undefined;
  let started = false;

  beforeAll(() => {
    ns = createNamespace("ingest");
  });
  afterAll(async () => {
    if (proc && proc.exitCode === null) {
      const exited = new Promise(r => proc!.once("exit", r));
      proc.kill("SIGTERM");
      await exited;
    }
    deleteNamespace(ns);
  });

  it("opens exactly one watch per watched kind", async () => {
    const before = await settledWatches();
    proc = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        join(repoRoot, "tests", "support", "controller-instance.ts"),
        ns,
        `ingest-${ns}`,
        "ingest",
      ],
      // the test's own environment (jest's process.env is not the one a child inherits)
      { cwd: repoRoot, env: { ...process.env }, stdio: ["ignore", "pipe", "inherit"] },
    );
    proc.stdout!.on("data", (d: Buffer) => {
      if (d.toString().includes('"started":true')) started = true;
    });
    await eventually("the controller started", () => started || undefined, 120_000);
    const deltas = await eventually(
      "one more open watch for every watched kind",
      () => {
        const after = openWatches();
        const d = Object.fromEntries(
          watchedResources.map(r => [r, (after.get(r) ?? 0) - (before.get(r) ?? 0)]),
        );
        if (Object.values(d).every(n => n === 1)) return d;
        // said in the timeout's message: which kinds are off, and by how much
        throw new Error(`open watches added per kind: ${JSON.stringify(d)}`);
      },
      60_000,
      500,
    );
    expect(Object.keys(deltas).sort()).toEqual([...new Set(watchedResources)].sort());
  }, 200_000);
});

/**
 * The tenant boundary's ingest half (docs/operations.md §11), against the real API server: Secrets and ConfigMaps
 * are listed and watched as metadata only and read whole only when referenced, and a watch whose
 * connection goes half-open (a loopback TCP proxy that stops forwarding without closing) is
 * restarted within its silence bound.
 */
describe("ingest bounds", () => {
  const BIG = 20;
  const BIG_BYTES = 900 * 1024;
  let ns: string;
  let proxy: TcpProxy | undefined;
  let reconciler: Reconciler | undefined;
  const warnings: { message: string; meta?: Record<string, unknown> }[] = [];
  const kube = kubeClient(kubeconfigAt(kubeconfigPath));

  beforeAll(async () => {
    ns = createNamespace("ingest-bounds");
    for (let i = 0; i < BIG; i++)
      await kube.request("POST", `/api/v1/namespaces/${ns}/configmaps`, {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: `big-${i}` },
        data: { blob: "x".repeat(BIG_BYTES) },
      });
    await kube.request("POST", `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "ca" },
      data: { "ca.crt": "first" },
    });
    // The controller reaches the API server through a proxy that can go half-open.
    const kc = kubeconfigAt(kubeconfigPath);
    const cluster = kc.getCurrentCluster()!;
    const server = new URL(cluster.server);
    proxy = await startTcpProxy(
      server.hostname.replace(/^\[|\]$/g, ""),
      Number(server.port || 443),
    );
    kc.loadFromOptions({
      clusters: kc.clusters.map(c =>
        c.name === cluster.name ? { ...c, server: `https://${server.hostname}:${proxy!.port}` } : c,
      ),
      users: kc.users,
      contexts: kc.contexts,
      currentContext: kc.currentContext,
    });
    reconciler = new Reconciler({
      kube: kubeClient(kc),
      log: {
        ...quietLogger,
        warn: (message: string, meta?: Record<string, unknown>) => warnings.push({ message, meta }),
      },
      namespace: ns,
      identity: `ingest-bounds-${ns}`,
      trafficIntervalMs: 0,
      defaults: { ...DEFAULT_PROXY_SETTINGS, replicas: 1 },
      election: {
        name: `ingest-bounds-${ns}`,
        leaseDurationMs: 4000,
        renewDeadlineMs: 3000,
        retryPeriodMs: 500,
      },
      watchSilenceMs: 5_000,
    });
    await reconciler.start();
  }, 180_000);

  afterAll(async () => {
    await reconciler?.stop();
    await proxy?.close();
    deleteNamespace(ns);
  });

  it("lists Secrets and ConfigMaps as metadata: a small fraction of the bytes of their whole list", async () => {
    const full = JSON.stringify(
      await kube.request<object>("GET", `/api/v1/namespaces/${ns}/configmaps`),
    ).length;
    const meta = JSON.stringify(
      await kube.request<object>(
        "GET",
        `/api/v1/namespaces/${ns}/configmaps`,
        undefined,
        undefined,
        METADATA_LIST_ACCEPT,
      ),
    ).length;
    console.log(
      `list of ${BIG + 1} ConfigMaps (${BIG} of ${BIG_BYTES} bytes): whole ${full} bytes, metadata only ${meta} bytes`,
    );
    expect(meta * 100).toBeLessThan(full);
    const s = reconciler!.snapshot;
    for (let i = 0; i < BIG; i++) {
      const o = s.objects.ConfigMap.get(`${ns}/big-${i}`);
      expect(o && metadataOnly(o)).toBe(true);
      expect(o).not.toHaveProperty("data");
    }
  });

  it("reads a ConfigMap whole once a BackendTLSPolicy references it, follows its updates, and drops its data when the reference goes", async () => {
    const caOf = () => reconciler!.snapshot.objects.ConfigMap.get(`${ns}/ca`)?.data?.["ca.crt"];
    expect(caOf()).toBeUndefined();
    applyItems([
      {
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "BackendTLSPolicy",
        metadata: { name: "p", namespace: ns },
        spec: {
          targetRefs: [{ group: "", kind: "Service", name: "svc" }],
          validation: {
            caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "ca" }],
            hostname: "svc.example.com",
          },
        },
      },
    ]);
    await eventually("the referenced ConfigMap's data", () =>
      caOf() === "first" ? true : undefined,
    );
    kubectlOk([
      "-n",
      ns,
      "patch",
      "configmap",
      "ca",
      "--type=merge",
      "-p",
      '{"data":{"ca.crt":"second"}}',
    ]);
    await eventually("its new data", () => (caOf() === "second" ? true : undefined));
    kubectlOk(["-n", ns, "delete", "backendtlspolicy", "p"]);
    await eventually("its data dropped", () => {
      const o = reconciler!.snapshot.objects.ConfigMap.get(`${ns}/ca`);
      return o && metadataOnly(o) ? true : undefined;
    });
  }, 60_000);

  it("restarts a watch whose connection went half-open, within its silence bound, and misses nothing", async () => {
    const before = warnings.length;
    proxy!.freeze();
    kubectlOk(["-n", ns, "create", "configmap", "after-freeze", "--from-literal=a=b"]);
    await eventually(
      "the ConfigMap created after the freeze in the snapshot",
      () => (reconciler!.snapshot.objects.ConfigMap.has(`${ns}/after-freeze`) ? true : undefined),
      // the bound is 5 s; a pooled connection frozen too may cost another bound
      30_000,
    );
    const silent = warnings
      .slice(before)
      .filter(w => w.message.startsWith("watch silent past its bound"))
      .map(w => w.meta?.kind);
    expect(silent).toContain("ConfigMap");
  }, 60_000);
});
