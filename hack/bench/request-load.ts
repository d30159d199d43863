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
 * Targets alternate in rounds (ours, minimal, stock, direct, ours, …) so the machine's noise
 * falls on all alike; each target gets a throughput run (`conns` connections) and a latency run
 * (one connection: the added latency per request, without queueing) per round. Ratios and
 * differences are taken within a round, then the median over rounds.
 */
import { ChildProcess, spawn, spawnSync } from "node:child_process";
import { loadavg } from "node:os";
import { sealGatewayConfig } from "../../capabilities/reconcile/plan";
import { KubeObject, snapshotOf } from "../../capabilities/snapshot";
import { translate } from "../../capabilities/translate";
import { CONTROLLER_NAME } from "../../capabilities/ownership";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { peerBin } from "../peers";
import { Caddy, startCaddy } from "../../tests/support/caddy";
import { startManagedCaddy, ManagedCaddy } from "../../tests/support/managed-caddy";
import { withProxyFlavor } from "../../tests/support/flavor";
import { withLoopbackEndpoints } from "../../tests/support/loopback";
import { freePort } from "../../tests/support/ports";
import { median, sleep } from "./stats";
import { httpRoute, routeHost, snapshotObjects } from "./workload";

export const TARGETS = ["ours", "minimal", "stock", "direct"] as const;
export type Target = (typeof TARGETS)[number];

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
}

export interface LoadCase {
  /** e.g. "1 route", "3,000 routes, known host". */
  readonly name: string;
  readonly routes: number;
  readonly host: string;
  /** The status every answer must have (404 for a host no route names). */
  readonly status: number;
  /** Per target: requests/s, p50/p99 (µs) of the throughput runs, p50/p99 of the one-connection runs; medians over rounds. */
  readonly targets: Partial<
    Record<
      Target,
      { rps: number; p50us: number; p99us: number; latencyP50us: number; latencyP99us: number }
    >
  >;
  /** ours / minimal requests/s, median of the per-round ratios. */
  readonly throughputRatio: number;
  /** ours − minimal one-connection p50 (µs), median of the per-round differences. */
  readonly addedP50us: number;
  readonly addedP99us: number;
  /** stock / minimal requests/s and stock − minimal p50, likewise (undefined: not run). */
  readonly stockRatio?: number;
  readonly stockAddedP50us?: number;
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
}

/** The route every known-host request goes to: PathPrefix / to one Service, no filter. */
const PROBE = 0;
const ECHO_PATH = "/health";

/** The workload of `routes` routes on one Gateway, route PROBE made simple, endpoints on loopback. */
async function objectsFor(routes: number, echoPort: number): Promise<KubeObject[]> {
  const opts = { routes, gateways: 1 };
  const objects = snapshotObjects(opts).map(o =>
    o.kind === "HTTPRoute" && o.metadata.name === `r${PROBE}` ? httpRoute(PROBE, opts, true) : o,
  );
  return withLoopbackEndpoints(objects, async () => echoPort);
}

/** Loads the sealed config the controller would push to a proxy of `flavor`; returns its HTTP port. */
async function loadOurs(
  proxy: ManagedCaddy,
  objects: readonly KubeObject[],
  flavor: ProxyFlavor,
): Promise<number> {
  const t = translate(snapshotOf(withProxyFlavor(objects, flavor)), {
    controllerName: CONTROLLER_NAME,
  });
  if (t.gateways.length !== 1) throw new Error(`expected one Gateway, got ${t.gateways.length}`);
  const port = await freePort("127.0.0.1");
  const sealed = sealGatewayConfig(t.gateways[0], proxy.spec, {
    bindHost: "127.0.0.1",
    portOffset: port - 80,
  });
  if (!sealed.ok) throw new Error(`seal: ${JSON.stringify(sealed.error)}`);
  await mustLoad(proxy.caddy, sealed.value.bytes.toString("utf8"));
  return port;
}

/** A hand-written config doing the same routing: the hosts → the echo server, else 404. */
export function minimalConfig(
  adminAddress: string,
  port: number,
  hosts: readonly string[],
  echoPort: number,
): object {
  return {
    admin: { listen: adminAddress, config: { persist: false } },
    apps: {
      http: {
        servers: {
          bench: {
            listen: [`127.0.0.1:${port}`],
            automatic_https: { disable: true },
            routes: [
              {
                match: [{ host: hosts }],
                handle: [
                  { handler: "reverse_proxy", upstreams: [{ dial: `127.0.0.1:${echoPort}` }] },
                ],
                terminal: true,
              },
              { handle: [{ handler: "static_response", status_code: 404 }] },
            ],
          },
        },
      },
    },
  };
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

export async function benchRequestLoad(
  options: RequestLoadOptions = {},
  log: (line: string) => void = () => {},
): Promise<RequestLoadResult> {
  const rounds = options.rounds ?? 3;
  const conns = options.conns ?? 16;
  const seconds = options.seconds ?? 2;
  const start = loadavg().map(r1);
  const echo = await startEcho();
  const started: { stop(): Promise<void> }[] = [];
  const cases: LoadCase[] = [];
  try {
    const ours = await startManagedCaddy("rl-ours");
    started.push(ours);
    const stock = await startManagedCaddy("rl-stock");
    started.push(stock);
    const minimal = await startCaddy({ name: "rl-minimal" });
    started.push(minimal);
    const plan = [
      { name: "1 route", routes: 1, unknown: false },
      { name: "3,000 routes, known host", routes: 3000, unknown: false },
      { name: "3,000 routes, unknown host", routes: 3000, unknown: true },
    ].filter(c => !options.filter || c.name.includes(options.filter));
    let loaded = 0;
    let ports: Record<Exclude<Target, "direct">, number> | undefined;
    for (const c of plan) {
      if (loaded !== c.routes) {
        const objects = await objectsFor(c.routes, echo.port);
        const minimalPort = await freePort("127.0.0.1");
        const hosts = Array.from({ length: c.routes }, (_, i) => routeHost(i));
        await mustLoad(minimal, minimalConfig(minimal.adminAddress, minimalPort, hosts, echo.port));
        ports = {
          ours: await loadOurs(ours, objects, "Bundled"),
          stock: await loadOurs(stock, objects, "Caddy"),
          minimal: minimalPort,
        };
        loaded = c.routes;
      }
      const host = c.unknown ? "unknown.bench.local" : routeHost(PROBE);
      const status = c.unknown ? 404 : 200;
      // The backend answers every host: the floor only means something for a known one.
      const targets = TARGETS.filter(t => !(c.unknown && t === "direct"));
      const portOf = (t: Target) => (t === "direct" ? echo.port : ports![t]);
      const runs: Record<string, { load: LoadRun; one: LoadRun }[]> = {};
      log(`requestLoad: ${c.name}: ${rounds} rounds of ${targets.join(", ")}`);
      for (let k = 0; k < rounds; k++)
        for (const t of targets) {
          const load = runLoad(portOf(t), host, conns, seconds);
          const one = runLoad(portOf(t), host, 1, seconds);
          for (const run of [load, one]) {
            const bad = Object.keys(run.statuses).filter(s => s !== String(status));
            if (run.errors > 0 || bad.length > 0 || run.requests === 0)
              throw new Error(
                `${c.name}, ${t}: ${run.errors} errors (${run.firstError ?? ""}), statuses ${JSON.stringify(run.statuses)}, expected ${status}`,
              );
          }
          (runs[t] ??= []).push({ load, one });
        }
      const summary: LoadCase["targets"] = {};
      for (const t of targets) {
        const rs = runs[t]!;
        summary[t] = {
          rps: Math.round(median(rs.map(r => r.load.rps))),
          p50us: r1(median(rs.map(r => r.load.p50us))),
          p99us: r1(median(rs.map(r => r.load.p99us))),
          latencyP50us: r1(median(rs.map(r => r.one.p50us))),
          latencyP99us: r1(median(rs.map(r => r.one.p99us))),
        };
      }
      const paired = (
        t: Target,
        f: (a: { load: LoadRun; one: LoadRun }, b: { load: LoadRun; one: LoadRun }) => number,
      ) => median(runs[t]!.map((r, k) => f(r, runs.minimal![k]!)));
      cases.push({
        name: c.name,
        routes: c.routes,
        host,
        status,
        targets: summary,
        throughputRatio: r3(paired("ours", (a, b) => a.load.rps / b.load.rps)),
        addedP50us: r1(paired("ours", (a, b) => a.one.p50us - b.one.p50us)),
        addedP99us: r1(paired("ours", (a, b) => a.one.p99us - b.one.p99us)),
        stockRatio: r3(paired("stock", (a, b) => a.load.rps / b.load.rps)),
        stockAddedP50us: r1(paired("stock", (a, b) => a.one.p50us - b.one.p50us)),
      });
    }
  } finally {
    for (const s of started.reverse()) await s.stop().catch(() => undefined);
    echo.child.kill();
  }
  return { rounds, conns, seconds, loadAverage: { start, end: loadavg().map(r1) }, cases };
}
