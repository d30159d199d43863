/**
 * Scenario "configLoad": the time a real Caddy takes to POST /load our config of the
 * 3,000-route workload vs a naive config of the same routes (one Caddy route per rule match,
 * each with its own matchers and its own reverse_proxy: toCaddyConfig's `dispatch:
 * "per-route"`), on the same proxy, alternating, median of 5. Before each measured load the
 * proxy runs a near-empty config, so every sample is "load this config from (almost) nothing".
 *
 * Also `proxyLoadMs`, used by propagation: loading the config with one route more while the
 * config without it runs (what a proxy reloading its whole config does for a new route), as
 * rendered for a proxy flavour (the local Caddy is the Bundled build: stock Caddy 2.11.9 plus
 * modules the stock flavour's config does not use).
 */
import { readFileSync } from "node:fs";
import { CaddyOptions, toCaddyConfig } from "../../capabilities/caddy";
import { KubeObject, snapshotOf } from "../../capabilities/snapshot";
import { translate } from "../../capabilities/translate";
import { DEFAULT_PROXY_FLAVOR, ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { Caddy, startCaddy } from "../../tests/support/caddy";
import { withProxyFlavor } from "../../tests/support/flavor";
import { freePort } from "../../tests/support/ports";
import { median, now, round } from "./stats";
import { httpRoute, snapshotObjects, WorkloadOptions } from "./workload";

export interface ConfigLoadResult {
  readonly routes: number;
  readonly oursMs: number;
  readonly naiveMs: number;
  /** CPU time Caddy spent per load (user + system, 10 ms ticks): less sensitive to a busy machine. */
  readonly oursCpuMs: number;
  readonly naiveCpuMs: number;
  readonly oursBytes: number;
  readonly naiveBytes: number;
  readonly samples: { readonly ours: number[]; readonly naive: number[] };
}

/** Caddy JSON of the single Gateway in `objects`, for a local Caddy. */
export function localConfig(
  objects: readonly KubeObject[],
  caddy: Caddy,
  portOffset: number,
  dispatch?: CaddyOptions["dispatch"],
): string {
  const result = translate(snapshotOf(objects));
  if (result.gateways.length !== 1)
    throw new Error(`expected one Gateway, got ${result.gateways.length}`);
  // Compact, as the push engine sends it (sealConfig re-serialises without indentation).
  return JSON.stringify(
    toCaddyConfig(result.gateways[0], {
      bindHost: "127.0.0.1",
      portOffset,
      management: { adminListen: caddy.adminAddress },
      ...(dispatch && { dispatch }),
    }),
  );
}

/** The pid of the Caddy process. */
export function caddyPid(caddy: Caddy): number {
  return caddy.pid;
}

/** CPU time (user + system) a process used so far, in ms (clock ticks of 10 ms). */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * 10;
}

const cpuSamples = new WeakMap<Caddy, number[]>();

/** Wall time of one POST /load; the CPU time Caddy spent on it is kept in cpuSamples. */
async function timedLoad(caddy: Caddy, config: string): Promise<number> {
  const pid = caddyPid(caddy);
  const c0 = cpuMs(pid);
  const t = now();
  const res = await caddy.load(config);
  const ms = now() - t;
  let list = cpuSamples.get(caddy);
  if (!list) cpuSamples.set(caddy, (list = []));
  list.push(cpuMs(pid) - c0);
  if (res.status !== 200)
    throw new Error(`Caddy refused the config (${res.status}): ${res.text.slice(0, 500)}`);
  return ms;
}

export const workload3000: WorkloadOptions = { routes: 3000, gateways: 1 };

export async function benchConfigLoad(
  opts: WorkloadOptions = workload3000,
  runs = 5,
): Promise<ConfigLoadResult> {
  const caddy = await startCaddy({ name: "bench-load" });
  try {
    const offset = (await freePort()) - 80;
    const objects = snapshotObjects(opts);
    const ours = localConfig(objects, caddy, offset);
    const naive = localConfig(objects, caddy, offset, "per-route");
    const empty = localConfig(snapshotObjects({ ...opts, routes: 1 }), caddy, offset);
    const samples = { ours: [] as number[], naive: [] as number[] };
    const cpu = { ours: [] as number[], naive: [] as number[] };
    const lastCpu = () => cpuSamples.get(caddy)!.at(-1)!;
    // Warm-up of both, then alternate.
    for (const c of [ours, empty, naive, empty]) await timedLoad(caddy, c);
    for (let k = 0; k < runs; k++) {
      samples.ours.push(await timedLoad(caddy, ours));
      cpu.ours.push(lastCpu());
      await timedLoad(caddy, empty);
      samples.naive.push(await timedLoad(caddy, naive));
      cpu.naive.push(lastCpu());
      await timedLoad(caddy, empty);
    }
    return {
      routes: opts.routes,
      oursMs: round(median(samples.ours)),
      naiveMs: round(median(samples.naive)),
      oursCpuMs: median(cpu.ours),
      naiveCpuMs: median(cpu.naive),
      oursBytes: ours.length,
      naiveBytes: naive.length,
      samples: { ours: samples.ours.map(round), naive: samples.naive.map(round) },
    };
  } finally {
    await caddy.stop();
  }
}

/**
 * The proxy's own /load time for a new route at `opts.routes` existing ones: the config with
 * the probe route loaded over the config without it (and back, not measured), median of runs.
 */
export async function benchProxyLoad(
  opts: WorkloadOptions,
  probe: KubeObject,
  runs = 7,
  /** The config the controller renders for this proxy flavour (KengineParameters). */
  flavor: ProxyFlavor = DEFAULT_PROXY_FLAVOR,
): Promise<{ proxyLoadMs: number; samples: number[] }> {
  const caddy = await startCaddy({ name: "bench-proxyload" });
  try {
    const offset = (await freePort()) - 80;
    const objects = withProxyFlavor(snapshotObjects(opts), flavor);
    const before = localConfig(objects, caddy, offset);
    const after = localConfig([...objects, probe], caddy, offset);
    const samples: number[] = [];
    await timedLoad(caddy, before);
    await timedLoad(caddy, after);
    for (let k = 0; k < runs; k++) {
      await timedLoad(caddy, before);
      samples.push(await timedLoad(caddy, after));
    }
    return { proxyLoadMs: round(median(samples)), samples: samples.map(round) };
  } finally {
    await caddy.stop();
  }
}

export { httpRoute };
