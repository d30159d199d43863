/**
 * The admission scenario of the cluster benchmarks (hack/bench/cluster.ts): HTTPRoute
 * admission requests at a fixed rate against the module's webhook, latency and decisions.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { controllerPid, cpuMs } from "./cluster-metrics";
import { MAIN, NS, base } from "./cluster-setup";
import { ClusterOptions, ClusterResults } from "./cluster-types";
import { Kube } from "./kube";
import { median, now, quantile, round, sleep } from "./stats";
import { httpRoute } from "./workload";
import { Agent, request } from "undici";

export async function admissionScenario(
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
