/**
 * The fanout and apiRequests scenarios of the cluster benchmarks (hack/bench/cluster.ts): on a
 * Gateway whose proxy count changes, how long one route change takes to reach every proxy, and
 * how many API requests the module makes while idle and under route changes.
 */
import { Pool } from "undici";
import { FAN, NS, base, createRoutes, gateway, parameters } from "./cluster-setup";
import { apiRequests, controllerPid, cpuMs, proxyPids } from "./cluster-metrics";
import { ClusterOptions, ClusterResults } from "./cluster-types";
import { gatewayReady, pollUntilServed, proxyPods, until } from "./cluster-watch";
import { Kube } from "./kube";
import { median, now, round, sleep } from "./stats";
import { httpRoute, httpRoutes } from "./workload";

/** Runs fanout and/or apiRequests (as opts.only says) on the FAN Gateway, into results. */
export async function fanoutScenario(
  adminKube: Kube,
  opts: ClusterOptions,
  results: ClusterResults,
  step: (name: string, fn: () => Promise<void>) => Promise<boolean>,
): Promise<void> {
  const { log, only } = opts;
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
}
