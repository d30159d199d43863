/**
 * The targets of issue 9 as data: each row names the target, what was measured and whether
 * it is met. One place decides "met", for the printed table, bench.json and the README.
 */
export interface Row {
  readonly scenario: string;
  readonly target: string;
  readonly measured: string;
  /** undefined: not measured in this run. */
  readonly met?: boolean;
}

type R = Record<string, unknown>;
const fmt = (ms: number): string => (ms >= 10000 ? `${(ms / 1000).toFixed(1)} s` : `${ms} ms`);

export function evaluate(report: R): Row[] {
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
  const p = report.propagation as { p50Ms: number; p99Ms: number; proxyLoadMs: number } | undefined;
  if (p)
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
        target: `one route changed among ${s.routes} (${s.gateways} Gateway${s.gateways > 1 ? "s" : ""}): controller CPU ≤ 5 ms`,
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
  const s = report.settle as { ms: number; afterLastCreateMs: number } | undefined;
  if (s)
    rows.push({
      scenario: "settle",
      target: "1,000 routes Accepted ≤ 1 s",
      measured: `${fmt(s.ms)} from the first create (${fmt(s.afterLastCreateMs)} after the last)`,
      met: s.ms <= 1000,
    });
  const f = report.fanout as { proxies: number; ms: number }[] | undefined;
  if (f && f.length > 0) {
    const one = f.find(x => x.proxies === 1);
    const most = f.reduce((a, b) => (b.proxies > a.proxies ? b : a));
    rows.push({
      scenario: "fanout",
      target: "50 proxies ≤ 2 × one proxy",
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
  const m = report.memory as { routes: number; rssMiB: number }[] | undefined;
  for (const x of m ?? [])
    rows.push({
      scenario: "memory",
      target: `RSS at ${x.routes} routes ≤ ${x.routes <= 1000 ? 150 : 450} MiB`,
      measured: `${x.rssMiB} MiB`,
      met: x.rssMiB <= (x.routes <= 1000 ? 150 : 450),
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
      target: "leader, status current, no proxy reloaded ≤ 5 s after caches fill",
      measured: `${r.afterCachesFilledS} s after caches filled (lists ${r.firstSnapshotS} s), ${r.proxiesReloaded} proxies reloaded, ${r.routes} routes`,
      met: r.afterCachesFilledS <= 5 && r.proxiesReloaded === 0,
    });
  return rows;
}

export function renderTable(rows: readonly Row[]): string {
  const head = ["scenario", "target", "measured", "met"];
  const cells = rows.map(r => [
    r.scenario,
    r.target,
    r.measured,
    r.met === undefined ? "n/a" : r.met ? "yes" : "NO",
  ]);
  const w = head.map((h, i) => Math.max(h.length, ...cells.map(c => c[i].length)));
  const line = (c: string[]) => `| ${c.map((x, i) => x.padEnd(w[i])).join(" | ")} |`;
  return [line(head), `|${w.map(n => "-".repeat(n + 2)).join("|")}|`, ...cells.map(line)].join(
    "\n",
  );
}
