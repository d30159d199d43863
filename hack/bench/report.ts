/**
 * The benchmark targets as data: each row names the target, what was measured and whether
 * it is met. One place decides "met", for the printed table, bench.json and the README.
 */
export interface Row {
  readonly scenario: string;
  readonly target: string;
  readonly measured: string;
  /** undefined: not measured in this run. */
  readonly met?: boolean;
  /** When the row's scenario was measured (UTC, to the minute). */
  readonly date?: string;
}

type R = Record<string, unknown>;
const fmt = (ms: number): string => (ms >= 10000 ? `${(ms / 1000).toFixed(1)} s` : `${ms} ms`);

/** The watcher's RSS target: 150 MiB at 1,000 routes, 400 MiB at 10,000. */
const memoryTargetMiB = (routes: number): number => (routes <= 1000 ? 150 : 400);

/** The benchmark targets: each is a row, measured or not. */
const T = {
  PROPAGATION_BUNDLED: "3,000 routes, Bundled: p50 ≤ 50 ms, p99 ≤ 150 ms (API answer → first 200)",
  PROPAGATION_CADDY: "3,000 routes, stock Caddy: p50 ≤ its own /load + 30 ms",
  SETTLE: "1,000 routes all Accepted ≤ 1 s after the last create (median of 5 samples)",
  FANOUT: "50 proxies ≤ 2 × one proxy (Bundled)",
  RESTART: "leader, status current, no proxy reloaded ≤ 5 s after caches fill",
  PROXY_MEMORY: "Bundled proxy RSS ≤ 100 MiB with 5,000 routes",
  REQUEST_PATH: "Bundled proxy, 3,000 routes: unknown host ≤ 10 µs (Go benchmark)",
  REQUEST_LOAD: (name: string) =>
    `${name}: ours ≥ 0.95× a minimal config's requests/s, p50 ≤ +50 µs (loopback)`,
  CHURN: (flavor: string) => `0 failed requests during 1,000 route changes (${flavor})`,
  MEMORY: (routes: number) => `watcher RSS at ${routes} routes ≤ ${memoryTargetMiB(routes)} MiB`,
  INCREMENTAL: (routes: number, gateways: number) =>
    `one route changed among ${routes} (${gateways} Gateway${gateways > 1 ? "s" : ""}): controller CPU ≤ 5 ms`,
};
const ISSUE16: readonly (readonly [string, string])[] = [
  ["propagation", T.PROPAGATION_BUNDLED],
  ["propagation", T.PROPAGATION_CADDY],
  ["settle", T.SETTLE],
  ["fanout", T.FANOUT],
  ["incremental", T.INCREMENTAL(3000, 1)],
  ["memory", T.MEMORY(1000)],
  ["memory", T.MEMORY(10000)],
  ["restart", T.RESTART],
  ["churn", T.CHURN("Bundled")],
  ["churn", T.CHURN("stock Caddy")],
  ["proxyMemory", T.PROXY_MEMORY],
  ["requestPath", T.REQUEST_PATH],
  ["requestLoad", T.REQUEST_LOAD("1 route")],
  ["requestLoad", T.REQUEST_LOAD("3,000 routes, known host")],
  ["requestLoad", T.REQUEST_LOAD("3,000 routes, unknown host")],
  ["requestLoad", T.REQUEST_LOAD("1 route, TLS")],
  ["requestLoad", T.REQUEST_LOAD("1 route, HTTP/2")],
  ["requestLoad", T.REQUEST_LOAD("1 route, header filter")],
];

/**
 * When each scenario was measured: `measuredAt[scenario]` (merged runs record it), else the
 * scenario's own `measuredAt`, else the report's date.
 */
function measuredAt(report: R, scenario: string): string | undefined {
  const iso =
    (report.measuredAt as Record<string, string> | undefined)?.[scenario] ??
    (report[scenario] as { measuredAt?: string } | undefined)?.measuredAt ??
    (report.date as string | undefined);
  return iso ? `${iso.slice(0, 16).replace("T", " ")} UTC` : undefined;
}

export function evaluate(report: R): Row[] {
  const measured = rows(report).map(r => ({ ...r, date: measuredAt(report, r.scenario) }));
  const missing = ISSUE16.filter(([, target]) => !measured.some(r => r.target === target)).map(
    ([scenario, target]): Row => ({ scenario, target, measured: "not measured" }),
  );
  return [...measured, ...missing];
}

function rows(report: R): Row[] {
  const rows: Row[] = [];
  const t = report.translate as
    | { routes: number; ms: number; jsonRoundTripMs: number }[]
    | undefined;
  if (t) {
    for (const s of t)
      rows.push({
        scenario: "translate",
        target: `${s.routes} routes: ms ≤ 3 × JSON round trip`,
        measured: `${s.ms} ms vs ${s.jsonRoundTripMs} ms (${(s.ms / s.jsonRoundTripMs).toFixed(1)}×)`,
        met: s.ms <= 3 * s.jsonRoundTripMs,
      });
    const k1 = t.find(s => s.routes === 1000);
    const k10 = t.find(s => s.routes === 10000);
    if (k1 && k10)
      rows.push({
        scenario: "translate",
        target: "10,000 routes ≤ 12 × 1,000 routes (linear)",
        measured: `${(k10.ms / k1.ms).toFixed(1)}×`,
        met: k10.ms <= 12 * k1.ms,
      });
  }
  type Prop = { p50Ms: number; p99Ms: number; proxyLoadMs: number; controllerCpuMs?: number };
  // { bundled, caddy }; a report from before both flavours were measured holds one Prop
  const p = report.propagation as ({ bundled?: Prop; caddy?: Prop } & Partial<Prop>) | undefined;
  const cpu = (x: Prop) =>
    x.controllerCpuMs !== undefined ? `, controller CPU ${x.controllerCpuMs} ms/change` : "";
  if (p?.bundled)
    rows.push({
      scenario: "propagation",
      target: T.PROPAGATION_BUNDLED,
      measured: `p50 ${p.bundled.p50Ms} ms, p99 ${p.bundled.p99Ms} ms${cpu(p.bundled)} (its /load: ${p.bundled.proxyLoadMs} ms)`,
      met: p.bundled.p50Ms <= 50 && p.bundled.p99Ms <= 150,
    });
  if (p?.caddy)
    rows.push({
      scenario: "propagation",
      target: T.PROPAGATION_CADDY,
      measured: `p50 ${p.caddy.p50Ms} ms, p99 ${p.caddy.p99Ms} ms, /load ${p.caddy.proxyLoadMs} ms${cpu(p.caddy)}`,
      met: p.caddy.p50Ms <= p.caddy.proxyLoadMs + 30,
    });
  if (p && !p.bundled && !p.caddy && p.p50Ms !== undefined && p.proxyLoadMs !== undefined)
    rows.push({
      scenario: "propagation",
      target: "p50 ≤ proxyLoadMs + 30 ms (3,000 routes)",
      measured: `p50 ${p.p50Ms} ms, p99 ${p.p99Ms} ms, proxy /load ${p.proxyLoadMs} ms`,
      met: p.p50Ms <= p.proxyLoadMs + 30,
    });
  const inc = report.incremental as
    | { routes: number; gateways: number; mode: string; cpuMs: number; rendered: number }[]
    | undefined;
  for (const s of inc ?? [])
    if (s.mode === "incremental")
      rows.push({
        scenario: "incremental",
        target: T.INCREMENTAL(s.routes, s.gateways),
        measured: `${s.cpuMs} ms CPU (full build: ${inc!.find(f => f.mode === "full" && f.gateways === s.gateways)?.cpuMs ?? "?"} ms), ${s.rendered} Gateway(s) rendered`,
        met: s.cpuMs <= 5,
      });
  const c = report.configLoad as { oursMs: number; naiveMs: number } | undefined;
  if (c)
    rows.push({
      scenario: "configLoad",
      target: "ours ≤ naive / 3 (3,000 routes)",
      measured: `${c.oursMs} ms vs ${c.naiveMs} ms (${(c.naiveMs / c.oursMs).toFixed(1)}× faster)`,
      met: c.oursMs <= c.naiveMs / 3,
    });
  const s = report.settle as
    | {
        ms: number;
        afterLastCreateMs: number;
        maxAfterLastCreateMs?: number;
        samples?: { afterLastCreateMs: number }[];
      }
    | undefined;
  if (s)
    rows.push({
      scenario: "settle",
      target: T.SETTLE,
      measured: s.samples
        ? `median ${fmt(s.afterLastCreateMs)} after the last create over ${s.samples.length} samples ` +
          `(${s.samples.map(x => fmt(x.afterLastCreateMs)).join(", ")}; ${fmt(s.ms)} from the first)`
        : `${fmt(s.afterLastCreateMs)} after the last create (${fmt(s.ms)} from the first)`,
      met: s.afterLastCreateMs <= 1000,
    });
  const f = report.fanout as { proxies: number; ms: number }[] | undefined;
  if (f && f.length > 0) {
    const one = f.find(x => x.proxies === 1);
    const most = f.reduce((a, b) => (b.proxies > a.proxies ? b : a));
    rows.push({
      scenario: "fanout",
      target: T.FANOUT,
      measured: f.map(x => `${x.proxies}: ${fmt(x.ms)}`).join(", "),
      met: one && most.proxies === 50 ? most.ms <= 2 * one.ms : undefined,
    });
  }
  const a = report.apiRequests as
    | { proxies1: number; proxies20: number; invalid?: string }
    | undefined;
  if (a)
    rows.push({
      scenario: "apiRequests",
      target: "1 vs 20 proxies equal within 5 %",
      measured: `${a.proxies1} vs ${a.proxies20}${a.invalid ? ` (invalid: ${a.invalid})` : ""}`,
      met: a.invalid
        ? undefined
        : Math.abs(a.proxies20 - a.proxies1) <= 0.05 * Math.max(a.proxies1, 1),
    });
  const ad = report.admission as
    | { p50Ms: number; p99Ms: number; achievedRps: number; cpuMsPerRequest?: number }
    | undefined;
  if (ad)
    rows.push({
      scenario: "admission",
      target: "p99 ≤ 10 ms at 200 requests/s",
      measured: `p50 ${ad.p50Ms} ms, p99 ${ad.p99Ms} ms (${ad.achievedRps} req/s sent${ad.cpuMsPerRequest !== undefined ? `, ${ad.cpuMsPerRequest} ms CPU/request` : ""})`,
      met: ad.p99Ms <= 10,
    });
  const m = report.memory as
    | {
        routes: number;
        rssMiB: number;
        heapLimitMiB?: number;
        nodeFlags?: string;
        fileMiB?: number;
        heapUsedMiB?: number;
        heapTotalMiB?: number;
        heapExhausted?: { routesCached: number; heapUsedMiB: number; heapLimitMiB: number };
      }[]
    | undefined;
  for (const x of m ?? [])
    rows.push({
      scenario: "memory",
      target: T.MEMORY(x.routes),
      measured:
        (x.heapExhausted
          ? `not reached: heap exhausted at ${x.heapExhausted.routesCached} routes cached (${x.heapExhausted.heapUsedMiB} of ${x.heapExhausted.heapLimitMiB} MiB for 30 s); then `
          : "") +
        `${x.rssMiB} MiB` +
        (x.nodeFlags !== undefined
          ? ` (${x.nodeFlags || "no V8 flags"})`
          : x.heapLimitMiB
            ? ` (heap limit ${x.heapLimitMiB} MiB)`
            : x.heapLimitMiB === 0
              ? " (no heap limit)"
              : "") +
        (x.heapTotalMiB !== undefined
          ? `: V8 heap ${x.heapUsedMiB} used of ${x.heapTotalMiB}, mapped files ${x.fileMiB}`
          : ""),
      met: !x.heapExhausted && x.rssMiB <= memoryTargetMiB(x.routes),
    });
  const r = report.restart as
    | {
        routes: number;
        afterCachesFilledS: number;
        firstSnapshotS: number;
        proxiesReloaded: number;
      }
    | undefined;
  if (r)
    rows.push({
      scenario: "restart",
      target: T.RESTART,
      measured: `${r.afterCachesFilledS} s after caches filled (lists ${r.firstSnapshotS} s), ${r.proxiesReloaded} proxies reloaded, ${r.routes} routes`,
      met: r.afterCachesFilledS <= 5 && r.proxiesReloaded === 0,
    });
  type Churn = {
    changes: number;
    stable: { requests: number; failures: number };
    changed: { requests: number; failures: number };
    proxyLoads: number;
    proxyDeltas: number;
  };
  const ch = report.churn as { bundled?: Churn; caddy?: Churn } | undefined;
  for (const [flavor, x] of [
    ["Bundled", ch?.bundled],
    ["stock Caddy", ch?.caddy],
  ] as const)
    if (x) {
      const failed = x.stable.failures + x.changed.failures;
      rows.push({
        scenario: "churn",
        target: T.CHURN(flavor),
        measured: `${failed} failed of ${x.stable.requests + x.changed.requests} (stable route ${x.stable.failures}, changed route ${x.changed.failures}); ${x.proxyLoads} reloads, ${x.proxyDeltas} deltas`,
        met: failed === 0 && x.changes >= 1000,
      });
    }
  const pm = report.proxyMemory as { flavor: string; routes: number; rssMiB: number } | undefined;
  if (pm)
    rows.push({
      scenario: "proxyMemory",
      target: T.PROXY_MEMORY,
      measured: `${pm.rssMiB} MiB with ${pm.routes} routes (${pm.flavor})`,
      met: pm.flavor === "Bundled" && pm.routes >= 5000 && pm.rssMiB <= 100,
    });
  const rp = report.requestPath as
    | { ns: { unknownHost: number; knownHost: number; linearUnknownHost: number } }
    | undefined;
  if (rp)
    rows.push({
      scenario: "requestPath",
      target: T.REQUEST_PATH,
      measured: `${rp.ns.unknownHost} ns/op (known host ${rp.ns.knownHost} ns; walked in a line ${(rp.ns.linearUnknownHost / 1e6).toFixed(2)} ms)`,
      met: rp.ns.unknownHost <= 10_000,
    });
  const rl = report.requestLoad as
    | {
        cases: {
          name: string;
          throughputRatio: number;
          cpuRatio?: number;
          addedP50us: number;
          stock?: { throughputRatio: number };
          targets: { ours?: { rps: number }; minimal?: { rps: number } };
        }[];
      }
    | undefined;
  for (const c of rl?.cases ?? [])
    rows.push({
      scenario: "requestLoad",
      target: T.REQUEST_LOAD(c.name),
      measured:
        `${c.targets.ours?.rps} vs ${c.targets.minimal?.rps} req/s (${c.throughputRatio}×), p50 ` +
        `${c.addedP50us >= 0 ? "+" : ""}${c.addedP50us} µs` +
        (c.cpuRatio !== undefined ? `, CPU/request ${c.cpuRatio}×` : "") +
        (c.stock ? `; stock Caddy's config ${c.stock.throughputRatio}×` : ""),
      met: c.throughputRatio >= 0.95 && c.addedP50us <= 50,
    });
  return rows;
}

export function renderTable(rows: readonly Row[]): string {
  const dated = rows.some(r => r.date !== undefined);
  const head = ["scenario", "target", "measured", "met", ...(dated ? ["date"] : [])];
  const cells = rows.map(r => [
    r.scenario,
    r.target,
    r.measured,
    r.met === undefined ? "n/a" : r.met ? "yes" : "NO",
    ...(dated ? [r.date ?? ""] : []),
  ]);
  const w = head.map((h, i) => Math.max(h.length, ...cells.map(c => c[i].length)));
  const line = (c: string[]) => `| ${c.map((x, i) => x.padEnd(w[i])).join(" | ")} |`;
  return [line(head), `|${w.map(n => "-".repeat(n + 2)).join("|")}|`, ...cells.map(line)].join(
    "\n",
  );
}
