/**
 * Scenario "requestLoad": what a request through our proxy costs against plain Caddy, with no
 * cluster. One echo backend (echo-basic's `/health`) and, side by side on loopback, as plain
 * processes of this machine:
 *
 * - `ours`: the Bundled proxy (hack/build-peers.sh `caddy`) with the config the controller
 *   pushes for the scenario (translate → `sealGatewayConfig`: route table, shared dispatch,
 *   traffic metrics, readiness server, the mTLS management listener), every backend pointed at
 *   the echo server;
 * - `minimal`: the same binary with a hand-written config doing the same routing (the
 *   scenario's hostnames → the echo server, anything else → 404);
 * - `stock`: the same binary with the config the controller renders for the stock Caddy flavour
 *   (none of our modules; as the cluster bench runs "stock Caddy");
 * - `direct`: the echo server itself, the floor (also shows the load generator is not the
 *   limit).
 *
 * The load generator is hack/peers/loadgen (Go, keep-alive connections in a closed loop).
 * Cases: 1 route and 3,000 routes (a known and an unknown host) over plain HTTP/1.1; then one
 * route over TLS (HTTP/1.1), over HTTP/2 (TLS, ALPN h2) and with a header filter (the route sets
 * a request header and adds a response header; the minimal config's `headers` handler does the
 * same, the response header deferred so that it follows the backend's own, as Gateway API's
 * "add" appends). TLS cases use one certificate for `*.bench.local`, from a Secret on the Gateway's
 * HTTPS listener (ours, stock) or loaded as PEM (minimal); the backend answers plain HTTP, so
 * `direct` has no TLS case.
 *
 * Targets alternate in rounds (ours, minimal, stock, direct, ours, …) so the machine's noise
 * falls on all alike; each target gets a throughput run (`conns` connections) and a latency run
 * (one connection: the added latency per request, without queueing) per round. Ratios and
 * differences are taken within a round, then the median over rounds.
 */
import { ChildProcess, spawn, spawnSync } from "node:child_process";
import { get as httpGet } from "node:http";
import { loadavg } from "node:os";
import { join } from "node:path";
import { sealGatewayConfig } from "../../capabilities/reconcile/plan";
import { KubeObject, snapshotOf } from "../../capabilities/snapshot";
import { translate } from "../../capabilities/translate";
import { CONTROLLER_NAME } from "../../capabilities/ownership";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { peerBin } from "../peers";
import { Caddy, startCaddy } from "../../tests/support/caddy";
import { startManagedCaddy, ManagedCaddy } from "../../tests/support/managed-caddy";
import { withProxyFlavor } from "../../tests/support/flavor";
import { freePort } from "../../tests/support/ports";
import { cpuMs } from "./config-load";
import {
  ECHO_PATH,
  PROBE,
  Shape,
  benchCertificate,
  listenerPort,
  minimalConfig,
  objectsFor,
} from "./request-load-configs";
import { median, sleep } from "./stats";
import { routeHost } from "./workload";

/** How a target's proxy is configured. */
type Setup =
  | {
      readonly kind: "ours";
      readonly flavor: ProxyFlavor;
      readonly render?: { readonly routeTable?: boolean; readonly dispatch?: "per-route" };
      /** Changes the sealed config before it is loaded (a feature taken out). */
      readonly edit?: (config: Json) => void;
    }
  | { readonly kind: "minimal"; readonly metrics?: boolean }
  | { readonly kind: "direct" };

type Json = Record<string, unknown>;

export { minimalConfig } from "./request-load-configs";

export const TARGETS = ["ours", "minimal", "stock", "direct"] as const;

const BASE: Readonly<Record<(typeof TARGETS)[number], Setup>> = {
  ours: { kind: "ours", flavor: "Bundled" },
  minimal: { kind: "minimal" },
  stock: { kind: "ours", flavor: "Caddy" },
  direct: { kind: "direct" },
};

const trafficServers = (config: Json): Json[] => {
  const servers = ((config.apps as Json).http as Json).servers as Record<string, Json>;
  return Object.entries(servers)
    .filter(([name]) => !name.startsWith("kengine-"))
    .map(([, server]) => server);
};

/**
 * Per-request features of our config, each measured as two targets: `with` (ours, or the minimal
 * config with the feature added) and `without`. A variant target is a proxy of its own.
 */
export const FEATURES: readonly {
  readonly feature: string;
  readonly with: string;
  readonly without: string;
}[] = [
  {
    feature: "traffic metrics (apps.http.metrics, host route)",
    with: "ours",
    without: "ours-metrics",
  },
  { feature: "kengine-http listener", with: "ours", without: "ours-listener" },
  {
    feature: "metrics host route first (where sealing put it before), not last",
    with: "ours-hostfirst",
    without: "ours",
  },
  { feature: "route table (vs linear routes)", with: "ours", without: "ours-table" },
  {
    feature: "shared dispatch (vs reverse_proxy per route)",
    with: "ours",
    without: "ours-dispatch",
  },
  {
    feature: "backends in the route table (vs top-level vars routes, the shape before)",
    with: "ours",
    without: "ours-outerdispatch",
  },
  { feature: "traffic metrics on the minimal config", with: "minimal+metrics", without: "minimal" },
];

const VARIANTS: Readonly<Record<string, Setup>> = {
  "ours-metrics": {
    kind: "ours",
    flavor: "Bundled",
    edit: c => {
      delete ((c.apps as Json).http as Json).metrics;
      // and the route sealing adds that only names the hosts (seal.ts withTrafficMetrics)
      for (const server of trafficServers(c))
        server.routes = (server.routes as Json[]).filter(r => r.handle !== undefined);
    },
  },
  "ours-listener": {
    kind: "ours",
    flavor: "Bundled",
    edit: c => {
      for (const server of trafficServers(c))
        server.listen = (server.listen as string[]).map(a => a.replace(/^kengine-http\//, ""));
    },
  },
  "ours-hostfirst": {
    kind: "ours",
    flavor: "Bundled",
    edit: c => {
      for (const server of trafficServers(c)) {
        const routes = server.routes as Json[];
        server.routes = [
          ...routes.filter(r => r.handle === undefined),
          ...routes.filter(r => r.handle !== undefined),
        ];
      }
    },
  },
  "ours-table": { kind: "ours", flavor: "Bundled", render: { routeTable: false } },
  "ours-dispatch": { kind: "ours", flavor: "Bundled", render: { dispatch: "per-route" } },
  "ours-outerdispatch": {
    kind: "ours",
    flavor: "Bundled",
    edit: c => {
      // The route table's backends as server routes after it, each matched by its variable.
      for (const server of trafficServers(c)) {
        const routes = server.routes as Json[];
        const at = routes.findIndex(r =>
          (r.handle as Json[] | undefined)?.some(h => h.handler === "kengine_route_table"),
        );
        const h = at < 0 ? undefined : (routes[at].handle as Json[])[0];
        const backends = (h?.backends ?? {}) as Record<string, Json>;
        if (h) delete h.backends;
        const outer = Object.entries(backends).map(([id, handler]) => ({
          match: [{ vars: { kengine_backend: [id] } }],
          handle: [handler],
          terminal: true,
        }));
        routes.splice(at + 1, 0, ...outer);
      }
    },
  },
  "minimal+metrics": { kind: "minimal", metrics: true },
};

/** One run of the load generator (hack/peers/loadgen's JSON line). */
export interface LoadRun {
  readonly requests: number;
  readonly errors: number;
  readonly statuses: Record<string, number>;
  readonly rps: number;
  readonly p50us: number;
  readonly p90us: number;
  readonly p99us: number;
  readonly firstError?: string;
  /** Every answer, warm-up included. */
  readonly all: number;
  /** CPU time (user + system) the target's process spent per answer, µs (10 ms ticks). */
  cpuUsPerRequest?: number;
}

interface TargetSummary {
  /** Requests/s and p50/p99 (µs) of the throughput runs; medians over rounds. */
  readonly rps: number;
  readonly p50us: number;
  readonly p99us: number;
  /** p50/p99 (µs) of the one-connection runs; medians over rounds. */
  readonly latencyP50us: number;
  readonly latencyP99us: number;
  /** The target process's CPU per request in the throughput runs (µs); median over rounds. */
  readonly cpuUs: number;
}

/** `a` against `b`: a/b requests/s and a − b one-connection p50, p99 (µs); medians of per-round values. */
export interface Paired {
  readonly throughputRatio: number;
  /**
   * a/b CPU per request of the target's process in the throughput runs: what the throughput
   * ratio would be, inverted, were both bound by their own CPU; far less noisy on a shared machine.
   */
  readonly cpuRatio: number;
  readonly addedP50us: number;
  readonly addedP99us: number;
}

export interface LoadCase extends Paired {
  /** e.g. "1 route", "3,000 routes, known host". */
  readonly name: string;
  readonly routes: number;
  readonly host: string;
  /** The status every answer must have (404 for a host no route names). */
  readonly status: number;
  readonly targets: Readonly<Record<string, TargetSummary>>;
  /** (the Paired fields: ours against minimal) stock Caddy's config against minimal. */
  readonly stock: Paired;
  /** Each feature's cost (with against without), when variants ran. */
  readonly features?: readonly ({ readonly feature: string } & Paired)[];
}

export interface RequestLoadResult {
  readonly rounds: number;
  readonly conns: number;
  readonly seconds: number;
  readonly loadAverage: { readonly start: number[]; readonly end: number[] };
  readonly cases: readonly LoadCase[];
}

export interface RequestLoadOptions {
  readonly rounds?: number;
  /** Connections of the throughput runs (default 16). */
  readonly conns?: number;
  /** Seconds of each measured run (default 2). */
  readonly seconds?: number;
  /** Only the cases whose name includes this. */
  readonly filter?: string;
  /** Also the variants of FEATURES (each feature of ours taken out). */
  readonly variants?: boolean;
  /** A CPU profile of ours under load per case, written to this directory (Caddy's /debug/pprof). */
  readonly profileDir?: string;
}

/**
 * Loads the sealed config the controller would push to a proxy of `setup.flavor` (changed by
 * `setup.edit`); returns its HTTP port.
 */
async function loadOurs(
  proxy: ManagedCaddy,
  objects: readonly KubeObject[],
  setup: Extract<Setup, { kind: "ours" }>,
  shape: Shape,
): Promise<number> {
  const t = translate(snapshotOf(withProxyFlavor(objects, setup.flavor)), {
    controllerName: CONTROLLER_NAME,
  });
  if (t.gateways.length !== 1) throw new Error(`expected one Gateway, got ${t.gateways.length}`);
  const port = await freePort("127.0.0.1");
  const sealed = sealGatewayConfig(t.gateways[0], proxy.spec, {
    bindHost: "127.0.0.1",
    portOffset: port - listenerPort(shape),
    ...setup.render,
  });
  if (!sealed.ok) throw new Error(`seal: ${JSON.stringify(sealed.error)}`);
  let text = sealed.value.bytes.toString("utf8");
  if (setup.edit) {
    const config = JSON.parse(text) as Json;
    setup.edit(config);
    text = JSON.stringify(config);
  }
  await mustLoad(proxy.caddy, text);
  return port;
}

/** The header filter case measures nothing unless the filter runs: one request shows it does. */
async function mustFilter(port: number, host: string, target: string): Promise<void> {
  const added = await new Promise<string | undefined>((resolve, reject) =>
    httpGet({ host: "127.0.0.1", port, path: ECHO_PATH, headers: { host }, agent: false }, res => {
      res.resume();
      res.on("end", () => resolve(res.headers["x-served-by"] as string | undefined));
    }).on("error", reject),
  );
  if (added !== "kengine")
    throw new Error(`header filter case, ${target}: X-Served-By is ${added ?? "absent"}`);
}

async function mustLoad(caddy: Caddy, config: object | string): Promise<void> {
  const r = await caddy.load(config);
  if (r.status !== 200)
    throw new Error(`Caddy refused the config (${r.status}): ${r.text.slice(0, 500)}`);
}

async function startEcho(): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort("127.0.0.1");
  const child = spawn(peerBin("echo-basic"), [], {
    stdio: "ignore",
    env: { ...process.env, HTTP_PORT: String(port), H2C_PORT: String(await freePort("127.0.0.1")) },
  });
  for (let i = 0; i < 100; i++) {
    const r = await fetch(`http://127.0.0.1:${port}${ECHO_PATH}`).catch(() => undefined);
    if (r?.ok) return { port, child };
    await sleep(50);
  }
  child.kill();
  throw new Error("echo-basic did not start");
}

/** One load generator run (blocking: nothing else of ours should run meanwhile). */
export function runLoad(
  port: number,
  host: string,
  conns: number,
  seconds: number,
  extra: readonly string[] = [],
): LoadRun {
  const r = spawnSync(
    peerBin("loadgen"),
    [
      "-addr",
      `127.0.0.1:${port}`,
      "-host",
      host,
      "-path",
      ECHO_PATH,
      "-c",
      String(conns),
      "-d",
      `${seconds}s`,
      ...extra,
    ],
    { encoding: "utf8", timeout: (seconds + 30) * 1000 },
  );
  if (r.status !== 0) throw new Error(`loadgen failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as LoadRun;
}

const r1 = (x: number) => Math.round(x * 10) / 10;
const r3 = (x: number) => Math.round(x * 1000) / 1000;

type Pair = { load: LoadRun; one: LoadRun };

const pidOf = (p: ManagedCaddy | Caddy): number => ("caddy" in p ? p.caddy.pid : p.pid);

/** `a` against `b`, round by round (the same round of the alternation), medians. */
function pairedOf(a: readonly Pair[], b: readonly Pair[]): Paired {
  const m = (f: (x: Pair, y: Pair) => number) => median(a.map((x, k) => f(x, b[k]!)));
  return {
    throughputRatio: r3(m((x, y) => x.load.rps / y.load.rps)),
    cpuRatio: r3(m((x, y) => x.load.cpuUsPerRequest! / y.load.cpuUsPerRequest!)),
    addedP50us: r1(m((x, y) => x.one.p50us - y.one.p50us)),
    addedP99us: r1(m((x, y) => x.one.p99us - y.one.p99us)),
  };
}

/** A CPU profile of the Caddy behind `adminSocket` while `port` is under load. */
async function profileUnderLoad(
  adminSocket: string,
  file: string,
  port: number,
  host: string,
  conns: number,
  seconds: number,
  client: readonly string[],
): Promise<void> {
  const curl = spawn(
    "curl",
    [
      "-sf",
      "--unix-socket",
      adminSocket,
      "-o",
      file,
      `http://127.0.0.1/debug/pprof/profile?seconds=${seconds}`,
    ],
    { stdio: "ignore" },
  );
  const done = new Promise<number | null>(resolve => curl.on("exit", resolve));
  await sleep(200);
  runLoad(port, host, conns, seconds + 1, client);
  const code = await done;
  if (code !== 0) throw new Error(`pprof: curl exited ${code}`);
}

export async function benchRequestLoad(
  options: RequestLoadOptions = {},
  log: (line: string) => void = () => {},
): Promise<RequestLoadResult> {
  const rounds = options.rounds ?? 3;
  const conns = options.conns ?? 16;
  const seconds = options.seconds ?? 2;
  const start = loadavg().map(r1);
  const echo = await startEcho();
  const setups: Record<string, Setup> = { ...BASE, ...(options.variants ? VARIANTS : {}) };
  const proxies = new Map<string, ManagedCaddy | Caddy>();
  const cases: LoadCase[] = [];
  try {
    for (const [name, setup] of Object.entries(setups))
      if (setup.kind === "ours") proxies.set(name, await startManagedCaddy(`rl-${name}`));
      else if (setup.kind === "minimal")
        proxies.set(name, await startCaddy({ name: `rl-${name}` }));
    const certificate = benchCertificate();
    const plan: readonly {
      name: string;
      routes: number;
      unknown: boolean;
      shape: Shape;
      /** Load generator flags. */
      client?: readonly string[];
    }[] = [
      { name: "1 route", routes: 1, unknown: false, shape: {} },
      { name: "3,000 routes, known host", routes: 3000, unknown: false, shape: {} },
      { name: "3,000 routes, unknown host", routes: 3000, unknown: true, shape: {} },
      { name: "1 route, TLS", routes: 1, unknown: false, shape: { tls: true }, client: ["-tls"] },
      { name: "1 route, HTTP/2", routes: 1, unknown: false, shape: { tls: true }, client: ["-h2"] },
      { name: "1 route, header filter", routes: 1, unknown: false, shape: { filter: true } },
    ].filter(c => !options.filter || c.name.includes(options.filter));
    let loaded = "";
    const ports: Record<string, number> = { direct: echo.port };
    for (const c of plan) {
      const key = JSON.stringify([c.routes, c.shape]);
      if (loaded !== key) {
        const objects = await objectsFor(c.routes, echo.port, c.shape, certificate);
        const hosts = Array.from({ length: c.routes }, (_, i) => routeHost(i));
        for (const [name, setup] of Object.entries(setups)) {
          const proxy = proxies.get(name);
          if (setup.kind === "ours")
            ports[name] = await loadOurs(proxy as ManagedCaddy, objects, setup, c.shape);
          else if (setup.kind === "minimal") {
            const caddy = proxy as Caddy;
            ports[name] = await freePort("127.0.0.1");
            await mustLoad(
              caddy,
              minimalConfig(
                caddy.adminAddress,
                ports[name],
                hosts,
                echo.port,
                setup.metrics,
                c.shape,
                certificate,
              ),
            );
          }
        }
        loaded = key;
      }
      const host = c.unknown ? "unknown.bench.local" : routeHost(PROBE);
      const status = c.unknown ? 404 : 200;
      // The backend answers every host, over plain HTTP only: the floor means something for a
      // known host without TLS.
      const targets = Object.keys(setups).filter(
        t => !((c.unknown || c.shape.tls) && t === "direct"),
      );
      if (c.shape.filter)
        for (const t of targets.filter(x => x !== "direct")) await mustFilter(ports[t]!, host, t);
      const runs: Record<string, Pair[]> = {};
      log(`requestLoad: ${c.name}: ${rounds} rounds of ${targets.join(", ")}`);
      for (let k = 0; k < rounds; k++)
        for (const t of targets) {
          const pid = t === "direct" ? echo.child.pid! : pidOf(proxies.get(t)!);
          const c0 = cpuMs(pid);
          // TLS reaches the proxies only; the backend is plain HTTP.
          const client = t === "direct" ? [] : (c.client ?? []);
          const load: LoadRun = runLoad(ports[t]!, host, conns, seconds, client);
          load.cpuUsPerRequest = r1(((cpuMs(pid) - c0) * 1000) / load.all);
          const one = runLoad(ports[t]!, host, 1, seconds, client);
          for (const run of [load, one]) {
            const bad = Object.keys(run.statuses).filter(s => s !== String(status));
            if (run.errors > 0 || bad.length > 0 || run.requests === 0)
              throw new Error(
                `${c.name}, ${t}: ${run.errors} errors (${run.firstError ?? ""}), statuses ${JSON.stringify(run.statuses)}, expected ${status}`,
              );
          }
          (runs[t] ??= []).push({ load, one });
        }
      if (options.profileDir) {
        const file = join(options.profileDir, `ours-${c.name.replace(/[^a-z0-9]+/gi, "-")}.pprof`);
        log(`requestLoad: ${c.name}: CPU profile of ours under load → ${file}`);
        const ours = proxies.get("ours") as ManagedCaddy;
        await profileUnderLoad(
          ours.caddy.adminSocket,
          file,
          ports.ours!,
          host,
          conns,
          10,
          c.client ?? [],
        );
      }
      const summary: Record<string, TargetSummary> = {};
      for (const t of targets) {
        const rs = runs[t]!;
        summary[t] = {
          rps: Math.round(median(rs.map(r => r.load.rps))),
          p50us: r1(median(rs.map(r => r.load.p50us))),
          p99us: r1(median(rs.map(r => r.load.p99us))),
          latencyP50us: r1(median(rs.map(r => r.one.p50us))),
          latencyP99us: r1(median(rs.map(r => r.one.p99us))),
          cpuUs: r1(median(rs.map(r => r.load.cpuUsPerRequest!))),
        };
      }
      cases.push({
        name: c.name,
        routes: c.routes,
        host,
        status,
        targets: summary,
        ...pairedOf(runs.ours!, runs.minimal!),
        stock: pairedOf(runs.stock!, runs.minimal!),
        ...(options.variants && {
          features: FEATURES.map(f => ({
            feature: f.feature,
            ...pairedOf(runs[f.with]!, runs[f.without]!),
          })),
        }),
      });
    }
  } finally {
    for (const p of [...proxies.values()].reverse()) await p.stop().catch(() => undefined);
    echo.child.kill();
  }
  return { rounds, conns, seconds, loadAverage: { start, end: loadavg().map(r1) }, cases };
}
