/**
 * The scenarios that need the local cluster: the module runs under `pepr dev` (as a user of
 * its own, so the API server's metrics can tell its requests apart), the proxies are real
 * Caddy processes started by the local kubelet, the backends real echo-basic pods, requests
 * go to the proxy pods' addresses. Run it under the cluster lock (index.ts does):
 *
 *   flock /tmp/kg-cluster.lock npx tsx hack/bench/cluster.ts --only=settle,memory --out=FILE
 */
import { execFileSync, spawnSync } from "node:child_process";
import {
  createWriteStream,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { join } from "node:path";
import { Agent, Pool, request } from "undici";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { steadyClient } from "../../tests/support/traffic";
import { PeprDev, startPeprDev } from "../pepr-dev";
import { benchProxyLoad } from "./config-load";
import { Kube, authFromKubeconfig } from "./kube";
import { median, now, quantile, round, sleep } from "./stats";
import { KubeObject } from "../../capabilities/snapshot";
import {
  WorkloadOptions,
  gatewayClass,
  httpRoute,
  httpRoutes,
  routeName,
  services,
} from "./workload";

const repoRoot = join(__dirname, "..", "..");
const localDir = process.env.KG_LOCAL_DIR ?? join(repoRoot, ".local");
const kubectlBin = join(localDir, "bin", "kubectl");
const NS = "kg-bench";
const CLASS = "kengine-bench";
const USER = "kengine-bench-controller";
const MAIN = "main"; // Gateway with one proxy: settle, propagation, memory
const FAN = "fan"; // Gateway whose proxy count changes: fanout, apiRequests
const CONTROLLER = "kengine.io/gateway-controller";

export const CLUSTER_SCENARIOS = [
  "admission",
  "settle",
  "propagation",
  "churn",
  "fanout",
  "apiRequests",
  "proxyMemory",
  "memory",
  "restart",
] as const;
export type ClusterScenario = (typeof CLUSTER_SCENARIOS)[number];

export interface ClusterOptions {
  readonly only: ReadonlySet<ClusterScenario>;
  /** Steady-state window per proxy count for apiRequests (seconds). */
  readonly apiWindowS: number;
  readonly fanout: readonly number[];
  readonly log: (line: string) => void;
  /** Profile the module: CPU profile and heap snapshots are written here. */
  readonly profileDir?: string;
  /** Called after every scenario with the results so far. */
  readonly onProgress?: (results: ClusterResults) => void;
  /**
   * The module's V8 heap limit (NODE_OPTIONS --max-old-space-size, MiB), as a deployed module's
   * would be; 0: none (V8's default for this machine's memory).
   */
  readonly heapLimitMiB: number;
}

/**
 * A deployed-like heap limit (`--heap-limit=256`): half of the memory limit Pepr 1.1.4 gives its
 * watcher and admission Deployments (512Mi; they set no NODE_OPTIONS), leaving the rest to what
 * is not JavaScript heap. Not the default: with it the module ran out of heap before 2,000 routes
 * (docs/bench.md), which would end every scenario after settle.
 */
export const DEPLOYED_HEAP_LIMIT_MIB = 256;
/** The default: no limit (V8's own for this machine's memory), until the module fits in one. */
export const DEFAULT_HEAP_LIMIT_MIB = 0;

const base: WorkloadOptions = {
  routes: 0,
  namespace: NS,
  gatewayClass: CLASS,
  endpointSlices: false,
  selector: { app: "bench-echo" },
};

/* ------------------------------------------------------------------ identity */

/** A key and a certificate signed by the local CA (client: CN/O; server: an IP SAN). */
function issue(
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
function controllerKubeconfig(
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

const identityObjects = [
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: "kengine-bench-controller" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: USER }],
  },
];

/* ------------------------------------------------------------------ cluster objects */

function echoDeployment(replicas: number) {
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

const parameters = (name: string, replicas: number, flavor: ProxyFlavor = "Bundled") => ({
  apiVersion: "gateway.kengine.io/v1alpha1",
  kind: "KengineParameters",
  metadata: { name, namespace: NS },
  spec: { proxy: { replicas, flavor } },
});

const gateway = (name: string) => ({
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

/* ------------------------------------------------------------------ observation */

interface GatewayStatus {
  status?: {
    conditions?: { type: string; status: string; message?: string }[];
    listeners?: { attachedRoutes: number }[];
  };
}
interface RouteList {
  metadata: { resourceVersion: string };
  items: RouteObj[];
}
interface RouteObj {
  metadata: { name: string; generation?: number };
  status?: {
    parents?: {
      controllerName: string;
      parentRef: { name: string };
      conditions?: { type: string; status: string; observedGeneration?: number }[];
    }[];
  };
}

const accepted = (r: RouteObj, parent: string): boolean =>
  (r.status?.parents ?? []).some(
    p =>
      p.controllerName === CONTROLLER &&
      p.parentRef.name === parent &&
      (p.conditions ?? []).some(
        c =>
          c.type === "Accepted" &&
          c.status === "True" &&
          (c.observedGeneration ?? 0) >= (r.metadata.generation ?? 1),
      ),
  );

/**
 * Watches the HTTPRoutes carrying `label` and resolves (with the arrival time of the deciding
 * event) once `count` of them are Accepted by `parent`.
 */
async function watchAccepted(
  kube: Kube,
  label: string,
  parent: string,
  count: number,
  timeoutMs: number,
): Promise<number> {
  const path = `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes?labelSelector=${encodeURIComponent(label)}`;
  const deadline = Date.now() + timeoutMs;
  const ok = new Set<string>();
  for (;;) {
    const list = await kube.ok<RouteList>("GET", path);
    ok.clear();
    for (const r of list.items) if (accepted(r, parent)) ok.add(r.metadata.name);
    if (ok.size >= count) return now();
    const res = await request(
      `${kube.auth.server}${path}&watch=1&allowWatchBookmarks=false&resourceVersion=${list.metadata.resourceVersion}&timeoutSeconds=${Math.max(1, Math.ceil((deadline - Date.now()) / 1000))}`,
      {
        dispatcher: watchAgent(kube),
        bodyTimeout: 0,
      },
    );
    let buf = "";
    for await (const chunk of res.body) {
      buf += chunk.toString();
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.trim()) continue;
        const ev = JSON.parse(line) as { type: string; object: RouteObj };
        if (ev.type === "ERROR") break;
        if (ev.type === "DELETED" || !accepted(ev.object, parent))
          ok.delete(ev.object.metadata.name);
        else ok.add(ev.object.metadata.name);
        if (ok.size >= count) {
          const t = now();
          res.body.destroy();
          return t;
        }
      }
    }
    if (Date.now() > deadline)
      throw new Error(`timed out: ${ok.size}/${count} routes Accepted by ${parent}`);
  }
}

let watchDispatcher: Agent | undefined;
const watchAgent = (kube: Kube): Agent =>
  (watchDispatcher ??= new Agent({
    connect: { ca: kube.auth.ca, cert: kube.auth.cert, key: kube.auth.key },
  }));

async function gatewayStatus(kube: Kube, name: string): Promise<GatewayStatus> {
  return kube.ok<GatewayStatus>(
    "GET",
    `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/gateways/${name}`,
  );
}

async function until<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await sleep(everyMs);
  }
}

/** Waits until the Gateway's listener counts `routes` and `n` proxies run its current config. */
async function gatewayReady(
  kube: Kube,
  name: string,
  routes: number,
  n: number,
  timeoutMs = 600_000,
): Promise<void> {
  await until(
    `${name}: ${routes} attached routes, ${n}/${n} proxies programmed`,
    async () => {
      const s = (await gatewayStatus(kube, name)).status;
      const attached = s?.listeners?.[0]?.attachedRoutes;
      const prog = s?.conditions?.find(c => c.type === "Programmed");
      return attached === routes &&
        prog?.status === "True" &&
        prog.message?.startsWith(`${n}/${n} proxies`)
        ? true
        : undefined;
    },
    timeoutMs,
    500,
  );
}

interface ProxyPod {
  readonly name: string;
  readonly ip: string;
}

async function proxyPods(kube: Kube, gw: string): Promise<ProxyPod[]> {
  const list = await kube.ok<{
    items: {
      metadata: { name: string; deletionTimestamp?: string };
      status?: { podIP?: string; conditions?: { type: string; status: string }[] };
    }[];
  }>(
    "GET",
    `/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(`app.kubernetes.io/component=proxy,gateway.networking.k8s.io/gateway-name=${gw}`)}`,
  );
  return list.items
    .filter(
      p =>
        !p.metadata.deletionTimestamp &&
        p.status?.podIP &&
        p.status.conditions?.some(c => c.type === "Ready" && c.status === "True"),
    )
    .map(p => ({ name: p.metadata.name, ip: p.status!.podIP! }));
}

/**
 * Polls one proxy until `host` answers 200, with `parallel` request loops on their own
 * keep-alive connections (one loop alone manages only a few hundred requests/s here); each
 * loop starts a request at most every `gapMs`, so the poller stays under `parallel × 1000 /
 * gapMs` requests/s. Unbounded, the loops would take the cores from the controller and the
 * proxy they measure (a Bundled proxy's 404 for an unknown host is fast, so it would be polled
 * hardest; docs/bench.md, "The cluster run of 2026-11-24 evening"). Resolves with the time of
 * the first 200 and the number of requests sent.
 */
async function pollUntilServed(
  pool: Pool,
  host: string,
  timeoutMs: number,
  parallel = 1,
  gapMs = 4,
): Promise<{ t: number; polls: number }> {
  const deadline = now() + timeoutMs;
  let polls = 0;
  let served: number | undefined;
  const loop = async (i: number) => {
    // staggered, so that together the loops look every gapMs / parallel
    await sleep((gapMs * i) / parallel);
    while (served === undefined) {
      const started = now();
      polls++;
      try {
        const res = await pool.request({ path: "/", method: "GET", headers: { host } });
        await res.body.dump();
        if (res.statusCode === 200) served ??= now();
      } catch {
        // the proxy closes idle connections on reload; try again
      }
      if (now() > deadline) throw new Error(`${host} not served after ${timeoutMs} ms`);
      const wait = started + gapMs - now();
      if (served === undefined && wait > 0) await sleep(wait);
    }
  };
  await Promise.all(Array.from({ length: parallel }, (_, i) => loop(i)));
  return { t: served!, polls };
}

/** CPU time (user + system) of a process so far, in ms; 0 once it is gone. */
function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return 0;
  }
}

/** The pids of the proxy processes (Caddy) of these pods: the kubelet sets HOSTNAME to the pod's name. */
function proxyPids(pods: readonly string[]): number[] {
  const want = new Set(pods);
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8");
      if (!cmd.split("\0")[0].endsWith("/caddy")) continue;
      const host = /(?:^|\0)HOSTNAME=([^\0]*)/.exec(
        readFileSync(`/proc/${d}/environ`, "utf8"),
      )?.[1];
      if (host && want.has(host)) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The pid of the module's process (the one serving the webhook on :3000). */
function controllerPid(): number {
  const out = spawnSync("ss", ["-ltnpH", "sport = :3000"], { encoding: "utf8" }).stdout;
  const pid = /pid=(\d+)/.exec(out)?.[1];
  if (!pid) throw new Error(`no process listens on :3000 (${out})`);
  return Number(pid);
}

/** Asks the module for a heap snapshot (SIGUSR2) and waits until the file is complete. */
async function heapSnapshot(dir: string | undefined, log: (l: string) => void): Promise<void> {
  if (!dir) return;
  const list = () => readdirSync(dir).filter(f => f.endsWith(".heapsnapshot"));
  const before = new Set(list());
  process.kill(controllerPid(), "SIGUSR2");
  const deadline = Date.now() + 180_000;
  let last = -1;
  while (Date.now() < deadline) {
    await sleep(2000);
    const f = list().find(x => !before.has(x));
    if (!f) continue;
    const size = statSync(join(dir, f)).size;
    if (size > 0 && size === last) {
      log(`heap snapshot ${f} (${Math.round(size / 1048576)} MiB)`);
      return;
    }
    last = size;
  }
  log("heap snapshot: not written within 180 s");
}

/** The module's own /metrics (pepr dev serves them on :3000 with a self-signed certificate). */
const moduleAgent = new Agent({ connect: { rejectUnauthorized: false } });
async function moduleMetrics(): Promise<(name: string, labels?: string) => number> {
  const text = await request("https://127.0.0.1:3000/metrics", { dispatcher: moduleAgent })
    .then(r => r.body.text())
    .catch(() => "");
  return (name, labels = "") => {
    let sum = 0;
    for (const m of text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? ([0-9.eE+-]+)$`, "gm")))
      if ((m[1] ?? "").includes(labels)) sum += Number(m[2]);
    return sum;
  };
}

/** VmRSS of a process, in MiB. */
function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
  return Math.round((kb / 1024) * 10) / 10;
}

/** RSS of the module's process (the one serving the webhook on :3000), in MiB. */
const controllerRssMiB = (): number => rssMiB(controllerPid());

/** One reading of the module's memory (MiB): its RSS and what the RSS is made of. */
export interface MemoryReading {
  readonly routes: number;
  readonly rssMiB: number;
  readonly heapLimitMiB?: number;
  /** RssFile: mapped files, mostly the node binary's own code (shared, clean). */
  readonly fileMiB?: number;
  /** RssAnon: the V8 heap, malloc'd memory, buffers. */
  readonly anonMiB?: number;
  /** V8's heap as the module's own gauges give it (kengine_gateway_heap_bytes). */
  readonly heapUsedMiB?: number;
  readonly heapTotalMiB?: number;
  /** Set when the module ran out of heap before `routes` settled. */
  readonly heapExhausted?: HeapExhausted;
}

/**
 * Watches the module's heap while a scenario grows it: resolves `exhausted` when its heap has
 * stayed above 95 % of its limit for 30 s (V8 collecting without end: the lease is renewed
 * late, leadership is lost and regained, nothing settles), with what it held then.
 */
function heapWatch(): {
  exhausted: Promise<HeapExhausted>;
  stop: () => void;
} {
  let stopped = false;
  const exhausted = new Promise<HeapExhausted>(resolve => {
    let since: number | undefined;
    const tick = async (): Promise<void> => {
      if (stopped) return;
      const m = await moduleMetrics();
      const used = m("kengine_gateway_heap_bytes", 'kind="used"');
      const limit = m("kengine_gateway_heap_bytes", 'kind="limit"');
      if (limit > 0 && used >= 0.95 * limit) since ??= now();
      else since = undefined;
      if (since !== undefined && now() - since >= 30_000) {
        resolve({
          routesCached: m("kengine_gateway_cache_objects", 'kind="HTTPRoute"'),
          heapUsedMiB: Math.round((used / 2 ** 20) * 10) / 10,
          heapLimitMiB: Math.round((limit / 2 ** 20) * 10) / 10,
          notLeaderWrites: m("kengine_gateway_status_write_failures_total", 'reason="not_leader"'),
        });
        return;
      }
      setTimeout(() => void tick(), 2000);
    };
    void tick();
  });
  return { exhausted, stop: () => (stopped = true) };
}

/** The module ran out of heap on the way (heapWatch). */
export interface HeapExhausted {
  /** HTTPRoutes in its cache then. */
  readonly routesCached: number;
  readonly heapUsedMiB: number;
  /** V8's limit (old space and young generation). */
  readonly heapLimitMiB: number;
  /** Status writes refused because it had lost the lease meanwhile. */
  readonly notLeaderWrites: number;
}

async function controllerMemory(routes: number, heapLimitMiB: number): Promise<MemoryReading> {
  const status = readFileSync(`/proc/${controllerPid()}/status`, "utf8");
  const field = (name: string) =>
    Math.round((Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1]) / 1024) * 10) / 10;
  const m = await moduleMetrics();
  const heap = (kind: string) =>
    Math.round((m("kengine_gateway_heap_bytes", `kind="${kind}"`) / 2 ** 20) * 10) / 10;
  return {
    routes,
    rssMiB: field("VmRSS"),
    heapLimitMiB,
    fileMiB: field("RssFile"),
    anonMiB: field("RssAnon"),
    heapUsedMiB: heap("used"),
    heapTotalMiB: heap("total"),
  };
}

const PHASES = [
  "queued",
  "snapshot",
  "translate",
  "render",
  "provision",
  "push",
  "acknowledged",
  "status",
] as const;
type PhaseTotals = Record<string, { sum: number; count: number }>;

/** The module's build-phase histograms (kengine_gateway_build_phase_seconds) and propagation so far. */
async function phaseTotals(): Promise<PhaseTotals> {
  const m = await moduleMetrics();
  const h = (name: string, labels = "") => ({
    sum: m(`${name}_sum`, labels),
    count: m(`${name}_count`, labels),
  });
  return {
    ...Object.fromEntries(
      PHASES.map(p => [p, h("kengine_gateway_build_phase_seconds", `phase="${p}"`)]),
    ),
    propagation: h("kengine_gateway_propagation_seconds"),
  };
}

/** Mean ms per build of each phase between two readings (phases no build ran are left out). */
function phaseMeansMs(a: PhaseTotals, b: PhaseTotals): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(b)) {
    const n = v.count - (a[k]?.count ?? 0);
    if (n > 0) out[k] = round(((v.sum - (a[k]?.sum ?? 0)) / n) * 1000);
  }
  out.builds = b.snapshot.count - (a.snapshot?.count ?? 0);
  return out;
}

/**
 * Requests so far from the API server's apiserver_request_total: every client's (`all`), and
 * by resource and verb those only the controller makes (`controller`): writes of Gateway API
 * status, every KengineProxy request, server-side applies (verb APPLY) and patches of the
 * objects it provisions. (The local API server runs without APF and the metric names no client; the
 * controller's LIST/WATCH of its informers cannot be told apart from other clients' and do
 * not depend on the number of proxies.)
 */
async function apiRequests(kube: Kube): Promise<{
  controller: number;
  byKind: Record<string, number>;
  all: number;
}> {
  const r = await kube.call("GET", "/metrics");
  let all = 0;
  let controller = 0;
  const byKind: Record<string, number> = {};
  for (const line of r.text.split("\n")) {
    if (!line.startsWith("apiserver_request_total{")) continue;
    const n = Number(line.slice(line.lastIndexOf(" ") + 1));
    all += n;
    const label = (k: string) => new RegExp(`${k}="([^"]*)"`).exec(line)?.[1] ?? "";
    const [group, resource, sub, verb] = [
      label("group"),
      label("resource"),
      label("subresource"),
      label("verb"),
    ];
    const ours =
      (group === "gateway.networking.k8s.io" && sub === "status" && verb !== "GET") ||
      resource === "kengineproxies" ||
      // server-side apply is counted under verb APPLY, other patches under PATCH
      ((verb === "PATCH" || verb === "APPLY") &&
        sub === "" &&
        ["deployments", "services", "secrets", "configmaps"].includes(resource));
    if (!ours) continue;
    controller += n;
    const key = `${verb} ${resource}${sub ? `/${sub}` : ""}`;
    byKind[key] = (byKind[key] ?? 0) + n;
  }
  return { controller, byKind, all };
}

/* ------------------------------------------------------------------ scenarios */

export interface PropagationResult {
  flavor: ProxyFlavor;
  existingRoutes: number;
  /** From the API server's answer to the create to the proxy's first 200 for the new host. */
  p50Ms: number;
  p99Ms: number;
  /** A local Caddy's own POST /load of the same config with the new route, this flavour. */
  proxyLoadMs: number;
  samples: number[];
  pollsPerSecond: number;
  proxyLoadSamples: number[];
  controllerCpuMs: number;
  /** Mean ms per build of each phase over the samples (kengine_gateway_build_phase_seconds). */
  buildPhaseMeanMs: Record<string, number>;
}

export interface ChurnResult {
  flavor: ProxyFlavor;
  existingRoutes: number;
  changes: number;
  /** Of the changes, updates of the route the "changed" client requests. */
  changedRouteUpdates: number;
  /** Sending the changes; then until the last update is served and the Gateway programmed. */
  churnS: number;
  convergenceS: number;
  /** A GET every ~20 ms on a new connection: not a 200 is a failure (status or connection error). */
  stable: { requests: number; failures: number };
  changed: { requests: number; failures: number };
  failureSamples: { atMs: number; status: number; error?: string }[];
  /** Configs main's proxy took meanwhile: whole /loads and route-table deltas. */
  proxyLoads: number;
  proxyDeltas: number;
  controllerCpuMs: number;
  proxyCpuMs?: number;
  buildPhaseMeanMs: Record<string, number>;
}

export interface ClusterResults {
  admission?: {
    rps: number;
    p50Ms: number;
    p99Ms: number;
    requests: number;
    achievedRps: number;
    errors: number;
    denied: number;
    wrongDecisions: number;
    /** CPU time (user + system) of the module's process per request over the timed window. */
    cpuMsPerRequest: number;
    /**
     * The module's own decision time (kengine_gateway_admission_decision_seconds: ownership
     * look-ups and rules, Pepr's request handling excluded), HTTPRoute, every request the module
     * served: the histogram bucket bounds (ms) that p50 and p99 fall in.
     */
    decisionP50AtMostMs?: number;
    decisionP99AtMostMs?: number;
    /**
     * Event-loop delay of the benchmark's own process over the window (p99, max): a request's
     * latency includes any time the sender itself was not running.
     */
    driverLoopDelayP99Ms: number;
    driverLoopDelayMaxMs: number;
  };
  settle?: { routes: number; ms: number; createMs: number; afterLastCreateMs: number };
  /** Main's proxy on the Bundled flavour (route-table deltas), then on stock Caddy (/load). */
  propagation?: { bundled?: PropagationResult; caddy?: PropagationResult };
  churn?: { bundled?: ChurnResult; caddy?: ChurnResult };
  /** VmRSS of main's proxy (Caddy) with `routes` routes programmed by the controller. */
  proxyMemory?: { flavor: ProxyFlavor; routes: number; rssMiB: number; controllerRssMiB: number };
  fanout?: {
    proxies: number;
    ms: number;
    samples: number[];
    proxyCpuMs: number;
    controllerCpuMs: number;
    proxyPids: number;
  }[];
  fanoutNote?: string;
  apiRequests?: {
    proxies1: number;
    proxies20: number;
    windowS: number;
    routeChanges: number;
    byKind1: Record<string, number>;
    byKind20: Record<string, number>;
    allClients1: number;
    allClients20: number;
  };
  /** The module's RSS; heapLimitMiB: its --max-old-space-size (0: none). */
  memory?: MemoryReading[];
  /**
   * The controller killed (SIGKILL: no Lease release) and started again with every route in
   * place: from its first full snapshot ("caches filled", its own log line) to leading with
   * status current (every proxy of the Gateway known to run the current config, and a status
   * pass done) and how many proxies it reloaded (pushes; adopting needs none).
   */
  restart?: {
    routes: number;
    /** The new process's own kengine_gateway_first_snapshot_seconds (lists of every kind). */
    firstSnapshotS: number;
    /** From "snapshot synced" in its output to leader with status current. */
    afterCachesFilledS: number;
    /** From the kill to leader with status current (includes pepr dev's build). */
    totalS: number;
    /** Successful config pushes of the new process (kengine_gateway_proxy_pushes_total). */
    proxiesReloaded: number;
    proxyLoads: number;
    proxyDeltas: number;
  };
  /** When the cluster part began (it may have waited for the lock long after the run began). */
  clusterStartedAt?: string;
  /** Scenarios that failed in this run, with the reason. */
  errors?: Record<string, string>;
}

async function createRoutes(
  kube: Kube,
  objs: readonly { metadata: { name: string } }[],
): Promise<void> {
  await Kube.each(objs, 16, o => kube.create(o as never));
}

async function admissionScenario(
  kube: Kube,
  log: ClusterOptions["log"],
): Promise<ClusterResults["admission"]> {
  const cfg = await kube.ok<{ webhooks: { clientConfig: { url?: string } }[] }>(
    "GET",
    `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/pepr-${(JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf8")) as { pepr: { uuid: string } }).pepr.uuid}`,
  );
  const url = cfg.webhooks[0].clientConfig.url;
  if (!url) throw new Error("the webhook has no URL (not pepr dev?)");
  const u = new URL(url);
  const target = `https://127.0.0.1:${u.port || 443}${u.pathname}${u.search}`;
  const agent = new Agent({ connect: { rejectUnauthorized: false }, connections: 64 });
  const review = (i: number) => {
    const valid = i % 2 === 0;
    const route = httpRoute(900000 + i, { ...base, parent: MAIN }) as unknown as {
      spec: { rules: { matches: unknown[] }[] };
    };
    if (!valid) route.spec.rules[0].matches = [{ path: { type: "RegularExpression", value: "" } }];
    return {
      valid,
      body: JSON.stringify({
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        request: {
          uid: `bench-${i}`,
          kind: { group: "gateway.networking.k8s.io", version: "v1", kind: "HTTPRoute" },
          resource: { group: "gateway.networking.k8s.io", version: "v1", resource: "httproutes" },
          requestKind: { group: "gateway.networking.k8s.io", version: "v1", kind: "HTTPRoute" },
          name: (route as unknown as { metadata: { name: string } }).metadata.name,
          namespace: NS,
          operation: "CREATE",
          userInfo: { username: "bench" },
          object: route,
          dryRun: false,
        },
      }),
    };
  };
  const rps = 200;
  const seconds = 20;
  const total = rps * seconds;
  const lat: number[] = [];
  let errors = 0;
  let denied = 0;
  let wrong = 0;
  // Warm-up (connections, JIT), not measured.
  for (let i = 0; i < 50; i++) {
    const r = review(i);
    const res = await request(target, {
      method: "POST",
      body: r.body,
      headers: { "content-type": "application/json" },
      dispatcher: agent,
    });
    await res.body.dump();
  }
  const pid = controllerPid();
  const cpu0 = cpuMs(pid);
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const t0 = now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / rps;
    const wait = due - now();
    if (wait > 0) await sleep(wait);
    const r = review(i);
    inflight.push(
      (async () => {
        const start = now();
        try {
          const res = await request(target, {
            method: "POST",
            body: r.body,
            headers: { "content-type": "application/json" },
            dispatcher: agent,
          });
          const body = (await res.body.json()) as { response?: { allowed?: boolean } };
          lat.push(now() - start);
          const allowed = body.response?.allowed === true;
          if (!allowed) denied++;
          if (allowed !== r.valid) wrong++;
        } catch {
          errors++;
        }
      })(),
    );
  }
  await Promise.all(inflight);
  const elapsed = (now() - t0) / 1000;
  loop.disable();
  const driverLoopDelayP99Ms = round(loop.percentile(99) / 1e6);
  const driverLoopDelayMaxMs = round(loop.max / 1e6);
  const cpuMsPerRequest = round((cpuMs(pid) - cpu0) / total);
  // The module's decision-time histogram, from its /metrics.
  const metrics = await request(`https://127.0.0.1:${u.port || 443}/metrics`, { dispatcher: agent })
    .then(r => r.body.text())
    .catch(() => "");
  const buckets = new Map<number, number>();
  for (const m of metrics.matchAll(
    /^kengine_gateway_admission_decision_seconds_bucket\{([^}]*)\} ([0-9.eE+-]+)$/gm,
  )) {
    if (!m[1].includes('kind="HTTPRoute"')) continue;
    const le = /le="([^"]+)"/.exec(m[1])?.[1];
    const at = le === "+Inf" ? Infinity : Number(le);
    buckets.set(at, (buckets.get(at) ?? 0) + Number(m[2]));
  }
  const decisionAtMost = (q: number): number | undefined => {
    const all = buckets.get(Infinity) ?? 0;
    if (all === 0) return undefined;
    const le = [...buckets.keys()].sort((a, b) => a - b).find(b => buckets.get(b)! >= q * all);
    return le === undefined || le === Infinity ? undefined : Number((le * 1000).toPrecision(3));
  };
  await agent.close();
  log(
    `admission: ${lat.length} answered, ${errors} errors, ${denied} denied, ${wrong} wrong decisions, ${cpuMsPerRequest} ms CPU per request, decision p50 ≤ ${decisionAtMost(0.5)} ms p99 ≤ ${decisionAtMost(0.99)} ms, the sender's event-loop delay p99 ${driverLoopDelayP99Ms} ms max ${driverLoopDelayMaxMs} ms`,
  );
  return {
    cpuMsPerRequest,
    driverLoopDelayP99Ms,
    driverLoopDelayMaxMs,
    decisionP50AtMostMs: decisionAtMost(0.5),
    decisionP99AtMostMs: decisionAtMost(0.99),
    rps,
    p50Ms: round(median(lat)),
    p99Ms: round(quantile(lat, 0.99)),
    requests: total,
    achievedRps: Math.round(total / elapsed),
    errors,
    denied,
    wrongDecisions: wrong,
  };
}

export async function runCluster(opts: ClusterOptions): Promise<ClusterResults> {
  const { log, only } = opts;
  const results: ClusterResults = { clusterStartedAt: new Date().toISOString() };
  /** Runs one scenario; a failure is recorded and the next scenario still runs. */
  const step = async (name: string, fn: () => Promise<void>): Promise<boolean> => {
    try {
      await fn();
      opts.onProgress?.(results);
      return true;
    } catch (e) {
      (results.errors ??= {})[name] = e instanceof Error ? e.message.slice(0, 500) : String(e);
      log(`${name} failed: ${results.errors[name]}`);
      opts.onProgress?.(results);
      return false;
    }
  };
  const adminKube = new Kube(authFromKubeconfig(join(localDir, "kubeconfig")));
  const dir = mkdtempSync(join(tmpdir(), "kg-bench-"));
  let dev: PeprDev | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanupOnce = () => (cleaning ??= cleanup());
  // A timeout (SIGTERM) still stops the module and removes what the run created.
  process.once("SIGTERM", () => {
    log("SIGTERM: cleaning up");
    void cleanupOnce().finally(() => process.exit(143));
  });
  try {
    log("setup: controller identity, namespace, echo backend, Services, GatewayClass");
    const client = issue(dir, "controller", `/CN=${USER}/O=kengine-bench`);
    const adminAuth = authFromKubeconfig(join(localDir, "kubeconfig"));
    const kubeconfig = controllerKubeconfig(dir, adminAuth.server, client);
    for (const o of identityObjects) await adminKube.apply(o as never);
    await adminKube.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } });
    await adminKube.apply(echoDeployment(2) as never);
    for (const s of services({ ...base, services: 100 })) await adminKube.apply(s as never);
    await adminKube.apply(gatewayClass(CLASS) as never);
    await adminKube.apply(parameters(MAIN, 1) as never);
    await adminKube.apply(parameters(FAN, 1) as never);

    // The module as deployed: a heap limit (opts.heapLimitMiB, its process only: not pepr
    // dev's build) and, with --profile=DIR, a heap snapshot on SIGUSR2 (after each memory
    // measurement). (--cpu-prof is not allowed in NODE_OPTIONS; CPU profiles: docs/bench.md.)
    // Logging as a deployed module (JSON, info): pepr dev's debug + pretty-printing worker
    // costs more CPU per admission request than the whole webhook path (docs/bench.md). Its
    // output goes to a file as well, for a run that fails.
    const peprLog = join(tmpdir(), "kg-bench-pepr-dev.log");
    writeFileSync(peprLog, "");
    log(`pepr dev's output: ${peprLog}`);
    const startModule = (): Promise<PeprDev> =>
      startPeprDev({
        kubeconfig,
        kubectl: kubectlBin,
        productionLogs: true,
        echo: createWriteStream(peprLog, { flags: "a" }),
        moduleExecArgv: [
          ...(opts.heapLimitMiB > 0 ? [`--max-old-space-size=${opts.heapLimitMiB}`] : []),
          ...(opts.profileDir
            ? ["--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${opts.profileDir}`]
            : []),
        ],
      });
    dev = await startModule();
    log("pepr dev is up");
    await adminKube.apply(gateway(MAIN) as never);
    await gatewayReady(adminKube, MAIN, 0, 1);
    log("Gateway main programmed (1 proxy)");

    if (only.has("admission"))
      await step("admission", async () => {
        results.admission = await admissionScenario(adminKube, log);
      });

    const mainRoutes = (from: number, count: number) =>
      httpRoutes({
        ...base,
        routes: count,
        firstRoute: from,
        parent: MAIN,
        routeLabels: { "bench-set": MAIN },
      });
    let mainCount = 0;

    let mainReady = false;
    if (
      ["settle", "memory", "propagation", "churn", "proxyMemory", "restart"].some(x =>
        only.has(x as ClusterScenario),
      )
    )
      mainReady = await step("settle", async () => {
        const routes = mainRoutes(0, 1000);
        const settled = watchAccepted(adminKube, `bench-set=${MAIN}`, MAIN, 1000, 600_000);
        const t0 = now();
        await createRoutes(adminKube, routes);
        const tCreated = now();
        const tAccepted = await settled;
        await until(
          "attachedRoutes 1000",
          async () =>
            (await gatewayStatus(adminKube, MAIN)).status?.listeners?.[0]?.attachedRoutes === 1000
              ? true
              : undefined,
          600_000,
          20,
        );
        const tDone = Math.max(tAccepted, now());
        mainCount = 1000;
        results.settle = {
          routes: 1000,
          ms: Math.round(tDone - t0),
          createMs: Math.round(tCreated - t0),
          afterLastCreateMs: Math.round(tDone - tCreated),
        };
        log(`settle: ${JSON.stringify(results.settle)}`);
        await gatewayReady(adminKube, MAIN, mainCount, 1);
        await sleep(3000);
        results.memory = [await controllerMemory(1000, opts.heapLimitMiB)];
        await heapSnapshot(opts.profileDir, log);
      });

    /** Probes main's proxy until `host` answers 200 (a new pod, or a route just created). */
    const served = async (host: string): Promise<void> => {
      const [pod] = await proxyPods(adminKube, MAIN);
      const pool = new Pool(`http://${pod.ip}:80`, { connections: 1 });
      try {
        await pollUntilServed(pool, host, 600_000);
      } finally {
        await pool.close();
      }
    };
    // Route indices of this file's probes: propagation 500000 + (Caddy: 10000) + k; churn 700000+.
    const probeRoute = (i: number, svc = 0): KubeObject => {
      const r = httpRoute(i, { ...base, parent: MAIN, routeLabels: { "bench-set": MAIN } }, true);
      const rule = (r as unknown as { spec: { rules: { backendRefs: { name: string }[] }[] } }).spec
        .rules[0];
      rule.backendRefs[0].name = `svc${svc}`;
      return r;
    };
    const hostOf = (r: KubeObject) =>
      (r as unknown as { spec: { hostnames: string[] } }).spec.hostnames[0];

    /**
     * Puts main's proxy on `flavor`: the flavour is part of the proxy pod's template, so its
     * pod is replaced; done once the new pod serves the routes (the last one created).
     */
    let mainFlavor: ProxyFlavor = "Bundled";
    let lastRouteHost: string | undefined;
    const useFlavor = async (flavor: ProxyFlavor): Promise<void> => {
      if (flavor === mainFlavor) return;
      const before = new Set((await proxyPods(adminKube, MAIN)).map(p => p.name));
      await adminKube.apply(parameters(MAIN, 1, flavor) as never);
      mainFlavor = flavor;
      await until(
        `main's proxy pod replaced for flavour ${flavor}`,
        async () => {
          const pods = await proxyPods(adminKube, MAIN);
          return pods.length === 1 && !before.has(pods[0].name) ? true : undefined;
        },
        600_000,
        1000,
      );
      await gatewayReady(adminKube, MAIN, mainCount, 1, 900_000);
      if (lastRouteHost) await served(lastRouteHost);
      log(`main's proxy runs flavour ${flavor}`);
    };

    /**
     * 20 new routes, one at a time: from the API server's answer to the create until the proxy
     * answers 200 for the new hostname (8 back-to-back request loops on keep-alive connections).
     */
    const propagation = async (flavor: ProxyFlavor): Promise<PropagationResult> => {
      const first = 500000 + (flavor === "Bundled" ? 0 : 10000);
      const [pod] = await proxyPods(adminKube, MAIN);
      const pool = new Pool(`http://${pod.ip}:80`, {
        connections: 8,
        pipelining: 1,
        keepAliveTimeout: 60_000,
      });
      const samples: number[] = [];
      const ctl = controllerPid();
      const ctlCpu: number[] = [];
      let polls = 0;
      let pollMs = 0;
      const phases0 = await phaseTotals();
      for (let k = 0; k < 20; k++) {
        const probe = probeRoute(first + k);
        const host = hostOf(probe);
        const c0 = cpuMs(ctl);
        const served = pollUntilServed(pool, host, 60_000, 8, 8); // ≤ 1,000 polls/s, 1 ms apart
        await adminKube.create(probe as never);
        // From the API server's answer: what the controller and the proxy add.
        const t0 = now();
        const r = await served;
        samples.push(Math.max(0, r.t - t0));
        ctlCpu.push(cpuMs(ctl) - c0);
        polls += r.polls;
        pollMs += r.t - t0;
        mainCount++;
        lastRouteHost = host;
        await sleep(1500); // let status writes of the previous sample finish
      }
      const phases = phaseMeansMs(phases0, await phaseTotals());
      await pool.close();
      // The proxy's own /load of the same config (the 3,000 routes, then one more), same flavour.
      const load = await benchProxyLoad(
        { ...base, routes: 3000, firstRoute: 0, gateways: 1, endpointSlices: true, parent: "gw0" },
        httpRoute(first, { ...base, endpointSlices: true, parent: "gw0" }, true),
        7,
        flavor,
      );
      return {
        flavor,
        existingRoutes: mainCount - 20,
        p50Ms: round(median(samples)),
        p99Ms: round(quantile(samples, 0.99)),
        proxyLoadMs: load.proxyLoadMs,
        samples: samples.map(round),
        pollsPerSecond: Math.round((polls / pollMs) * 1000),
        proxyLoadSamples: load.samples,
        // CPU the controller spent from the create to the first 200 (10 ms ticks).
        controllerCpuMs: median(ctlCpu),
        buildPhaseMeanMs: phases,
      };
    };

    if (only.has("propagation") && mainReady)
      await step("propagation", async () => {
        await createRoutes(adminKube, mainRoutes(1000, 2000));
        mainCount = 3000;
        await gatewayReady(adminKube, MAIN, mainCount, 1);
        log("3,000 routes programmed on main's proxy");
        await heapSnapshot(opts.profileDir, log); // with --profile: the heap at 3,000 routes
        const bundled = await propagation("Bundled");
        results.propagation = { bundled };
        log(`propagation (Bundled): ${JSON.stringify(bundled)}`);
        await useFlavor("Caddy");
        const caddy = await propagation("Caddy");
        results.propagation = { bundled, caddy };
        log(`propagation (Caddy): ${JSON.stringify(caddy)}`);
      });

    /**
     * 1,000 route changes on main (4 rounds of 100 creates, 100 updates, 50 deletes; 16 requests
     * in flight) while two clients send a GET every ~20 ms, each on a new connection, to main's
     * proxy: one through a route no change touches, one through a route updated 10 times a round
     * (its updates are among the 100). Every answer that is not a 200 is a failure. Done when the
     * last update is served and the Gateway is programmed again; the remaining churn routes are
     * then removed.
     */
    const STABLE = 700000;
    const CHANGED = 700001;
    const churn = async (flavor: ProxyFlavor): Promise<ChurnResult> => {
      await useFlavor(flavor);
      const first = 710000 + (flavor === "Bundled" ? 0 : 10000);
      const path = (i: number) =>
        `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes/${routeName(i)}`;
      let updates = 0;
      /** An update every time: a new header value, and the backend switched. */
      const update = (i: number) => {
        updates++;
        return adminKube.ok(
          "PATCH",
          path(i),
          {
            spec: {
              rules: [
                {
                  matches: [{ path: { type: "PathPrefix", value: "/" } }],
                  filters: [
                    {
                      type: "RequestHeaderModifier",
                      requestHeaderModifier: { set: [{ name: "X-Churn", value: `u${updates}` }] },
                    },
                  ],
                  backendRefs: [{ name: `svc${updates % 2}`, port: 8080 }],
                },
              ],
            },
          },
          "application/merge-patch+json",
        );
      };
      const [pod] = await proxyPods(adminKube, MAIN);
      await served(hostOf(probeRoute(STABLE)));
      await served(hostOf(probeRoute(CHANGED)));
      const stable = steadyClient(pod.ip, hostOf(probeRoute(STABLE)));
      const changed = steadyClient(pod.ip, hostOf(probeRoute(CHANGED)));
      const pushes0 = await moduleMetrics();
      const phases0 = await phaseTotals();
      const cpu0 = cpuMs(controllerPid());
      const proxyPid = proxyPids([pod.name])[0];
      const proxyCpu0 = proxyPid ? cpuMs(proxyPid) : 0;
      const t0 = now();
      let changes = 0;
      const left: number[] = [];
      for (let round = 0; round < 4; round++) {
        const ids = Array.from({ length: 100 }, (_, j) => first + round * 100 + j);
        await Kube.each(ids, 16, i => adminKube.create(probeRoute(i) as never));
        changes += ids.length;
        // 100 updates: the changed route 10 times, 90 of this round's new routes
        const toUpdate = ids.map((i, j) => (j % 10 === 0 ? CHANGED : i));
        await Kube.each(toUpdate, 16, async i => {
          await update(i);
        });
        changes += toUpdate.length;
        const gone = ids.filter((_, j) => j % 2 === 0);
        await Kube.each(gone, 16, async i => {
          await adminKube.call("DELETE", path(i));
        });
        changes += gone.length;
        left.push(...ids.filter((_, j) => j % 2 === 1));
      }
      const churnMs = now() - t0;
      const lastUpdated = first + 3 * 100 + 99;
      await served(hostOf(probeRoute(lastUpdated)));
      await gatewayReady(adminKube, MAIN, mainCount + left.length, 1, 900_000);
      const convergenceMs = now() - t0 - churnMs;
      const [a, b] = await Promise.all([stable.stop(), changed.stop()]);
      const pushes1 = await moduleMetrics();
      const pushed = (kind: string) =>
        pushes1("kengine_gateway_proxy_pushes_by_kind_total", `kind="${kind}"`) -
        pushes0("kengine_gateway_proxy_pushes_by_kind_total", `kind="${kind}"`);
      const result: ChurnResult = {
        flavor,
        existingRoutes: mainCount,
        changes,
        changedRouteUpdates: 40,
        churnS: round(churnMs / 1000),
        convergenceS: round(convergenceMs / 1000),
        stable: { requests: a.sent, failures: a.failures.length },
        changed: { requests: b.sent, failures: b.failures.length },
        failureSamples: [...a.failures, ...b.failures].slice(0, 10),
        proxyLoads: pushed("load"),
        proxyDeltas: pushed("delta"),
        controllerCpuMs: cpuMs(controllerPid()) - cpu0,
        proxyCpuMs: proxyPid ? cpuMs(proxyPid) - proxyCpu0 : undefined,
        buildPhaseMeanMs: phaseMeansMs(phases0, await phaseTotals()),
      };
      await Kube.each(left, 16, async i => {
        await adminKube.call("DELETE", path(i));
      });
      await gatewayReady(adminKube, MAIN, mainCount, 1, 900_000);
      return result;
    };

    if (only.has("churn") && mainReady)
      await step("churn", async () => {
        await createRoutes(adminKube, [probeRoute(STABLE), probeRoute(CHANGED)]);
        mainCount += 2;
        await gatewayReady(adminKube, MAIN, mainCount, 1);
        const out: NonNullable<ClusterResults["churn"]> = {};
        // Caddy first if main's proxy already runs it (propagation ran), then Bundled.
        for (const flavor of mainFlavor === "Caddy"
          ? (["Caddy", "Bundled"] as const)
          : (["Bundled", "Caddy"] as const)) {
          out[flavor === "Bundled" ? "bundled" : "caddy"] = await churn(flavor);
          results.churn = out;
          opts.onProgress?.(results);
          log(
            `churn (${flavor}): ${JSON.stringify(out[flavor === "Bundled" ? "bundled" : "caddy"])}`,
          );
        }
      });
    // The scenarios after this one measure the Bundled flavour (the default).
    if (mainReady && mainFlavor !== "Bundled") await step("flavour", () => useFlavor("Bundled"));

    if (only.has("fanout") || only.has("apiRequests"))
      await step("fanout", async () => {
        await adminKube.apply(gateway(FAN) as never);
        await createRoutes(
          adminKube,
          httpRoutes({
            ...base,
            routes: 1000,
            firstRoute: 100000,
            parent: FAN,
            routeLabels: { "bench-set": FAN },
          }),
        );
        let fanRoutes = 1000;
        const scale = async (n: number) => {
          await adminKube.apply(parameters(FAN, n) as never);
          await until(
            `${n} ready proxies of ${FAN}`,
            async () => ((await proxyPods(adminKube, FAN)).length === n ? true : undefined),
            900_000,
            1000,
          );
          await gatewayReady(adminKube, FAN, fanRoutes, n, 900_000);
        };
        /** One change (a new route), until every proxy serves it; median of `runs`. */
        const fanout = async (n: number, runs: number) => {
          const pods = await proxyPods(adminKube, FAN);
          // About 8 request loops in all, so one proxy is polled as finely as the machine allows.
          const perProxy = Math.max(1, Math.floor(8 / pods.length));
          const pools = pods.map(
            p => new Pool(`http://${p.ip}:80`, { connections: perProxy, pipelining: 1 }),
          );
          const samples: number[] = [];
          const pids = proxyPids(pods.map(p => p.name));
          const ctl = controllerPid();
          const proxyCpu: number[] = [];
          const controllerCpu: number[] = [];
          for (let k = 0; k < runs; k++) {
            const probe = httpRoute(
              600000 + n * 100 + k,
              { ...base, parent: FAN, routeLabels: { "bench-set": FAN } },
              true,
            );
            const host = (probe as unknown as { spec: { hostnames: string[] } }).spec.hostnames[0];
            const cpu0 = pids.reduce((a, p) => a + cpuMs(p), 0);
            const ctl0 = cpuMs(ctl);
            const t0 = now();
            const all = Promise.all(pools.map(p => pollUntilServed(p, host, 120_000, perProxy)));
            await adminKube.create(probe as never);
            const ts = await all;
            samples.push(Math.max(...ts.map(x => x.t)) - t0);
            proxyCpu.push(pids.reduce((a, p) => a + cpuMs(p), 0) - cpu0);
            controllerCpu.push(cpuMs(ctl) - ctl0);
            fanRoutes++;
            await gatewayReady(adminKube, FAN, fanRoutes, n, 300_000);
            await sleep(1000);
          }
          await Promise.all(pools.map(p => p.close()));
          return {
            proxies: n,
            ms: round(median(samples)),
            samples: samples.map(round),
            // CPU the proxies (all of them, together) and the controller spent per change: on a
            // machine with `cores` cores, proxyCpuMs / cores is a floor for ms.
            proxyCpuMs: median(proxyCpu),
            controllerCpuMs: median(controllerCpu),
            proxyPids: pids.length,
          };
        };
        /** Requests of the controller while idle plus 100 route changes spread over the window. */
        type Window = { controller: number; byKind: Record<string, number>; all: number };
        let windows = 0;
        const apiWindow = async (): Promise<Window> => {
          // Each window's changes must be new hostnames: a repeated one is no change at all.
          const w = windows++;
          await sleep(5000);
          const a = await apiRequests(adminKube);
          const changes = 100;
          const t0 = now();
          for (let k = 0; k < changes; k++) {
            const due = t0 + (k * opts.apiWindowS * 1000) / changes;
            if (due > now()) await sleep(due - now());
            const name = `r${100000 + (k % 1000)}`;
            await adminKube.ok(
              "PATCH",
              `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes/${name}`,
              { spec: { hostnames: [`${name}-w${w}v${k}.bench.local`] } },
              "application/merge-patch+json",
            );
          }
          const rest = t0 + opts.apiWindowS * 1000 - now();
          if (rest > 0) await sleep(rest);
          const b = await apiRequests(adminKube);
          const byKind: Record<string, number> = {};
          for (const [k, v] of Object.entries(b.byKind))
            if (v - (a.byKind[k] ?? 0) > 0) byKind[k] = v - (a.byKind[k] ?? 0);
          return {
            controller: b.controller - a.controller,
            byKind,
            all: b.all - a.all,
          };
        };
        await scale(1);
        log("fan: 1 proxy programmed with 1,000 routes");
        const fan: NonNullable<ClusterResults["fanout"]> = [];
        if (only.has("fanout")) {
          fan.push(await fanout(1, 5));
          results.fanout = fan;
        }
        let api1: Window | undefined;
        if (only.has("apiRequests"))
          await step("apiRequests", async () => {
            api1 = await apiWindow();
            log(`apiRequests with 1 proxy: ${JSON.stringify(api1)}`);
            await scale(20);
            const api20 = await apiWindow();
            log(`apiRequests with 20 proxies: ${JSON.stringify(api20)}`);
            results.apiRequests = {
              proxies1: api1.controller,
              proxies20: api20.controller,
              windowS: opts.apiWindowS,
              routeChanges: 100,
              byKind1: api1.byKind,
              byKind20: api20.byKind,
              allClients1: api1.all,
              allClients20: api20.all,
            };
          });
        if (only.has("fanout")) {
          for (const n of opts.fanout.filter(x => x > 1)) {
            try {
              await scale(n);
              log(`fan: ${n} proxies programmed`);
              fan.push(await fanout(n, 3));
              results.fanout = fan;
              opts.onProgress?.(results);
              log(`fanout: ${JSON.stringify(fan[fan.length - 1])}`);
            } catch (e) {
              results.fanoutNote = `${n} proxies: ${String(e).slice(0, 300)}`;
              log(`fanout ${n} failed: ${results.fanoutNote}`);
              break;
            }
          }
          results.fanout = fan;
        }
        await adminKube.apply(parameters(FAN, 1) as never);
      });

    /** Up to `total` HTTPRoutes on main (workload routes r10000…), settled and programmed. */
    let nextMainRoute = 10000;
    const fillMain = async (total: number): Promise<void> => {
      const missing = total - mainCount;
      if (missing > 0) {
        const next = httpRoutes({
          ...base,
          routes: missing,
          firstRoute: nextMainRoute,
          parent: MAIN,
          routeLabels: { "bench-set": MAIN },
        });
        nextMainRoute += missing;
        const settled = watchAccepted(
          adminKube,
          `bench-set=${MAIN}`,
          MAIN,
          mainCount + missing,
          1_200_000,
        );
        await createRoutes(adminKube, next);
        mainCount += missing;
        await settled;
      }
      await gatewayReady(adminKube, MAIN, mainCount, 1, 900_000);
    };

    if (only.has("proxyMemory") && mainReady)
      await step("proxyMemory", async () => {
        // main's Bundled proxy with 5,000 routes, as the controller programmed it
        await fillMain(5000);
        if (lastRouteHost) await served(lastRouteHost);
        await sleep(5000);
        const [pod] = await proxyPods(adminKube, MAIN);
        const [pid] = proxyPids([pod.name]);
        if (!pid) throw new Error(`no Caddy process found for pod ${pod.name}`);
        results.proxyMemory = {
          flavor: mainFlavor,
          routes: mainCount,
          rssMiB: rssMiB(pid),
          controllerRssMiB: controllerRssMiB(),
        };
        log(`proxyMemory: ${JSON.stringify(results.proxyMemory)}`);
      });

    if (only.has("restart") && mainReady)
      await step("restart", async () => {
        await gatewayReady(adminKube, MAIN, mainCount, 1, 900_000);
        await dev!.kill();
        const tKilled = now();
        dev = await startModule();
        // startPeprDev returns once the output says "snapshot synced" (it polls the output every
        // 200 ms): the caches filled at most 200 ms before this.
        const tSynced = now();
        let tCurrent = 0;
        let metric: Awaited<ReturnType<typeof moduleMetrics>> | undefined;
        for (const deadline = now() + 600_000; now() < deadline; await sleep(20)) {
          metric = await moduleMetrics();
          const leading = metric("kengine_gateway_is_leader") >= 1;
          const proxies = metric("kengine_gateway_proxies");
          const programmed = metric("kengine_gateway_proxies", 'state="Programmed"');
          const statusPass =
            metric("kengine_gateway_status_writes_total") +
              metric("kengine_gateway_status_noops_total") >
            0;
          if (leading && proxies > 0 && programmed === proxies && statusPass) {
            tCurrent = now();
            break;
          }
        }
        if (!tCurrent || !metric)
          throw new Error("the restarted controller never led with status current");
        const firstSnapshotS = metric("kengine_gateway_first_snapshot_seconds");
        results.restart = {
          routes: mainCount,
          firstSnapshotS: Math.round(firstSnapshotS * 100) / 100,
          afterCachesFilledS: Math.round((tCurrent - tSynced) / 10) / 100,
          totalS: Math.round((tCurrent - tKilled) / 10) / 100,
          proxiesReloaded: metric("kengine_gateway_proxy_pushes_total", 'result="success"'),
          // of those pushes: whole configs (/load) and route-table deltas
          proxyLoads: metric("kengine_gateway_proxy_pushes_by_kind_total", 'kind="load"'),
          proxyDeltas: metric("kengine_gateway_proxy_pushes_by_kind_total", 'kind="delta"'),
        };
        log(`restart: ${JSON.stringify(results.restart)}`);
      });
    // Last: with a heap limit the module may run out of heap on the way to 10,000 routes, and
    // the scenarios after it would measure a module in trouble (restart ran before it: at 5,000).
    if (only.has("memory") && mainReady)
      await step("memory", async () => {
        // 10,000 HTTPRoutes in the cluster, all on main (one proxy) but fan's, then settle.
        const fanCount = only.has("fanout") || only.has("apiRequests") ? 1000 + 100 : 0;
        const watch = heapWatch();
        const fill = fillMain(10000 - fanCount).then(() => undefined);
        // given up on when the heap runs out: its creates and watch may still fail afterwards
        fill.catch(() => undefined);
        const outcome = await Promise.race([fill, watch.exhausted]).finally(() => watch.stop());
        if (outcome === undefined) await sleep(5000);
        const reading = await controllerMemory(10000, opts.heapLimitMiB);
        (results.memory ??= []).push(
          outcome === undefined ? reading : { ...reading, heapExhausted: outcome },
        );
        log(`memory: ${JSON.stringify(results.memory)}`);
      });
    return results;
  } finally {
    await cleanupOnce();
  }

  async function cleanup(): Promise<void> {
    log("cleanup");
    await dev?.stop();
    await adminKube.call("DELETE", `/api/v1/namespaces/${NS}`);
    await adminKube.call("DELETE", `/apis/gateway.networking.k8s.io/v1/gatewayclasses/${CLASS}`);
    for (const o of identityObjects) await adminKube.delete(o as never);
    await until(
      "namespace kg-bench gone",
      async () =>
        (await adminKube.call("GET", `/api/v1/namespaces/${NS}`)).status === 404 ? true : undefined,
      150_000,
      2000,
    ).catch(e => log(`${String(e)} (it goes on in the background)`));
    await adminKube.close();
    await watchDispatcher?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The local cluster, as jest's globalSetup brings it up for the integration tests
 * (tests/support/global-setup.ts): the peers (cached; under the peers lock), then `hack/cluster.sh
 * up` (idempotent). A cluster this process started is taken down when it exits, however it
 * exits (KG_KEEP_CLUSTER=1 keeps it); one that was running is left as it was. The caller holds
 * the cluster lock.
 */
function localCluster(log: (l: string) => void): void {
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

async function main(argv: string[]): Promise<void> {
  const arg = (name: string) => argv.find(a => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const only = new Set(
    (arg("only") ?? CLUSTER_SCENARIOS.join(","))
      .split(",")
      .filter(s => (CLUSTER_SCENARIOS as readonly string[]).includes(s)) as ClusterScenario[],
  );
  const out = arg("out");
  const log = (l: string) =>
    process.stderr.write(`[bench cluster ${new Date().toISOString().slice(11, 19)}] ${l}\n`);
  localCluster(log);
  const heapLimit = arg("heap-limit");
  const results = await runCluster({
    heapLimitMiB: heapLimit === undefined ? DEFAULT_HEAP_LIMIT_MIB : Number(heapLimit),
    only,
    apiWindowS: Number(arg("api-window") ?? 120),
    fanout: (arg("fanout") ?? "1,10,50").split(",").map(Number),
    profileDir: arg("profile"),
    log,
    onProgress: r => {
      if (out) writeFileSync(out, JSON.stringify(r, null, 2));
    },
  });
  const text = JSON.stringify(results, null, 2);
  if (out) writeFileSync(out, text);
  else process.stdout.write(text + "\n");
}

if (require.main === module)
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    e => {
      process.stderr.write(`bench cluster failed: ${e instanceof Error ? e.stack : String(e)}\n`);
      process.exit(1);
    },
  );
