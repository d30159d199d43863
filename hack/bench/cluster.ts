/**
 * The scenarios that need the local cluster: the module runs under `pepr dev` (as a user of
 * its own, so the API server's metrics can tell its requests apart), the proxies are real
 * Caddy pods on the local node, the backends real echo-basic pods, requests
 * go to the proxy pods' addresses. Run it under the cluster lock (index.ts does):
 *
 *   flock /tmp/kg-cluster.lock npx tsx hack/bench/cluster.ts --only=settle,memory --out=FILE
 */
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { KubeObject } from "../../capabilities/snapshot";
import { steadyClient } from "../../tests/support/traffic";
import { PeprDev, startPeprDev } from "../pepr-dev";
import { admissionScenario } from "./cluster-admission";
import { SETTLE_SAMPLES, settleSamples } from "./cluster-settle";
import { fanoutScenario } from "./cluster-fanout";
import { restartResult } from "./cluster-restart";
import {
  controllerMemory,
  controllerPid,
  controllerRssMiB,
  cpuMs,
  heapSnapshot,
  heapWatch,
  moduleMetrics,
  phaseMeansMs,
  phaseTotals,
  proxyPids,
  rssMiB,
} from "./cluster-metrics";
import {
  CLASS,
  FAN,
  MAIN,
  NS,
  USER,
  base,
  controllerKubeconfig,
  createRoutes,
  echoDeployment,
  gateway,
  identityObjects,
  issue,
  kubectlBin,
  localDir,
  parameters,
  localCluster,
} from "./cluster-setup";
import {
  CLUSTER_SCENARIOS,
  ChurnResult,
  ClusterOptions,
  ClusterResults,
  ClusterScenario,
  PropagationResult,
  deployedNodeFlags,
  heapLimitOf,
  withHeapLimit,
} from "./cluster-types";
import {
  gatewayReady,
  pollUntilServed,
  proxyPods,
  until,
  watchAccepted,
  closeWatchAgent,
} from "./cluster-watch";
import { benchProxyLoad } from "./config-load";
import { Kube, authFromKubeconfig } from "./kube";
import { median, now, quantile, round, sleep } from "./stats";
import { gatewayClass, httpRoute, httpRoutes, routeName, services } from "./workload";
import { Pool } from "undici";

export { CLUSTER_SCENARIOS } from "./cluster-types";
export type {
  ChurnResult,
  ClusterOptions,
  ClusterResults,
  ClusterScenario,
  HeapExhausted,
  MemoryReading,
  PropagationResult,
} from "./cluster-types";

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

    // The module as deployed: its V8 flags (opts.moduleFlags, its process only: not pepr
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
          ...opts.moduleFlags,
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
        results.settle = await settleSamples(adminKube, mainRoutes(0, 1000), SETTLE_SAMPLES, log);
        mainCount = 1000;
        log(`settle: ${JSON.stringify(results.settle)}`);
        await gatewayReady(adminKube, MAIN, mainCount, 1);
        await sleep(3000);
        results.memory = [await controllerMemory(1000, opts.moduleFlags)];
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
      await step("fanout", () => fanoutScenario(adminKube, opts, results, step));

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
        results.restart = await restartResult(mainCount, tKilled, tSynced);
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
        const reading = await controllerMemory(10000, opts.moduleFlags);
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
    await closeWatchAgent();
    rmSync(dir, { recursive: true, force: true });
  }
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
  const deployed = deployedNodeFlags(join(__dirname, "..", "..", "package.json"));
  // --module-flags="…" replaces the deployed flags (a comparison run); --heap-limit only the limit
  const given = arg("module-flags");
  const base = given === undefined ? deployed : given.split(/\s+/).filter(Boolean);
  const moduleFlags = heapLimit === undefined ? base : withHeapLimit(base, Number(heapLimit));
  log(
    `the module's V8 flags: ${moduleFlags.join(" ") || "(none)"} (old space ${heapLimitOf(moduleFlags) || "V8's default"})`,
  );
  const results = await runCluster({
    moduleFlags,
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
