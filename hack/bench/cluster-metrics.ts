/**
 * What the cluster benchmarks (hack/bench/cluster.ts) measure of the processes: CPU time and
 * memory of the module and the proxies, heap snapshots, the module's build-phase histograms and
 * the API server's request counts.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { HeapExhausted, MemoryReading, heapLimitOf } from "./cluster-types";
import { Kube } from "./kube";
import { now, round, sleep } from "./stats";
import { Agent, request } from "undici";

/** CPU time (user + system) of a process so far, in ms; 0 once it is gone. */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return 0;
  }
}

/** The pids of the proxy processes (Caddy) of these pods: the kubelet sets HOSTNAME to the pod's name. */
export function proxyPids(pods: readonly string[]): number[] {
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
export function controllerPid(): number {
  const out = spawnSync("ss", ["-ltnpH", "sport = :3000"], { encoding: "utf8" }).stdout;
  const pid = /pid=(\d+)/.exec(out)?.[1];
  if (!pid) throw new Error(`no process listens on :3000 (${out})`);
  return Number(pid);
}

/** Asks the module for a heap snapshot (SIGUSR2) and waits until the file is complete. */
export async function heapSnapshot(
  dir: string | undefined,
  log: (l: string) => void,
): Promise<void> {
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
export async function moduleMetrics(): Promise<(name: string, labels?: string) => number> {
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
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
  return Math.round((kb / 1024) * 10) / 10;
}

/** RSS of the module's process (the one serving the webhook on :3000), in MiB. */
export const controllerRssMiB = (): number => rssMiB(controllerPid());

/**
 * Watches the module's heap while a scenario grows it: resolves `exhausted` when its heap has
 * stayed above 95 % of its limit for 30 s (V8 collecting without end: the lease is renewed
 * late, leadership is lost and regained, nothing settles), with what it held then.
 */
export function heapWatch(): {
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

export async function controllerMemory(
  routes: number,
  moduleFlags: readonly string[],
): Promise<MemoryReading> {
  const status = readFileSync(`/proc/${controllerPid()}/status`, "utf8");
  const field = (name: string) =>
    Math.round((Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1]) / 1024) * 10) / 10;
  const m = await moduleMetrics();
  const heap = (kind: string) =>
    Math.round((m("kengine_gateway_heap_bytes", `kind="${kind}"`) / 2 ** 20) * 10) / 10;
  return {
    routes,
    rssMiB: field("VmRSS"),
    heapLimitMiB: heapLimitOf(moduleFlags),
    nodeFlags: moduleFlags.join(" "),
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
export async function phaseTotals(): Promise<PhaseTotals> {
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
export function phaseMeansMs(a: PhaseTotals, b: PhaseTotals): Record<string, number> {
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
export async function apiRequests(kube: Kube): Promise<{
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
