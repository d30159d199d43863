/**
 * `npm run bench`: every scenario of the benchmark, a table of targets (met or not) and
 * reports/bench.json. Pure scenarios run in this process; the cluster scenarios run in a child
 * that holds the cluster lock (`flock /tmp/kg-cluster.lock`) only while it runs.
 *
 *   npm run bench                                  # everything (the cluster part takes a while)
 *   npm run bench -- --only=translate,configLoad   # a selection (written to reports/bench.partial.json)
 *   npm run bench -- --only=apiRequests --merge    # a selection replacing its scenarios in reports/bench.json
 *   npm run bench -- --api-window=300              # apiRequests window per proxy count (s)
 *   flock /tmp/kg-cluster.lock npm run bench -- --locked   # the caller holds the lock
 *   npm run bench -- --profile=/tmp/prof           # module CPU profile + heap snapshots there
 *   npm run bench -- --heap-limit=256              # the module's --max-old-space-size (MiB; 0: none)
 *   npm run bench -- --module-flags="--max-old-space-size=320"   # the module's V8 flags instead
 *        # of the deployed ones (package.json pepr.env.NODE_OPTIONS, the default)
 *   npm run bench -- --only=requestLoad --request-rounds=5   # request path on loopback, rounds of alternation
 *   npm run bench -- --only=requestLoad --request-variants --request-profile=/tmp/prof
 *        # also each feature of our config taken out, and a CPU profile of ours per case
 *   npm run bench -- --report                      # no measurement: bench.json's table again
 *
 * The cluster part starts the local cluster (hack/cluster.sh up, peers from hack/build-peers.sh)
 * when none runs, and takes it down after.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { benchConfigLoad } from "./config-load";
import { benchDeltaAck } from "./delta-ack";
import { CLUSTER_SCENARIOS, ClusterResults } from "./cluster";
import { Row, evaluate, renderTable } from "./report";
import { benchIncremental } from "./incremental";
import { benchRequestLoad } from "./request-load";
import { benchRequestPath } from "./request-path";
import { benchTranslate } from "./translate";

const PURE = [
  "translate",
  "configLoad",
  "incremental",
  "requestPath",
  "requestLoad",
  "deltaAck",
] as const;
const ALL = [...PURE, ...CLUSTER_SCENARIOS] as const;
const repoRoot = join(__dirname, "..", "..");
const LOCK = "/tmp/kg-cluster.lock";

const log = (l: string) =>
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${l}\n`);

async function main(argv: string[]): Promise<void> {
  const arg = (name: string) => argv.find(a => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const requested = (arg("only") ?? ALL.join(",")).split(",").filter(Boolean);
  const unknown = requested.filter(s => !(ALL as readonly string[]).includes(s));
  if (unknown.length > 0) {
    process.stderr.write(`unknown scenario(s): ${unknown.join(", ")}; known: ${ALL.join(", ")}\n`);
    process.exit(2);
  }
  const only = new Set(requested);
  const full = ALL.every(s => only.has(s));
  const benchJson = join(repoRoot, "reports", "bench.json");
  if (argv.includes("--report")) {
    // no measurement: reports/bench.json's targets evaluated again and printed
    const saved = JSON.parse(readFileSync(benchJson, "utf8")) as Record<string, unknown>;
    saved.targets = evaluate(saved);
    writeFileSync(benchJson, JSON.stringify(saved, null, 2) + "\n");
    process.stdout.write(renderTable(saved.targets as Row[]) + "\n");
    return;
  }
  const report: Record<string, unknown> = {
    date: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      node: process.version,
      loadAverageAtStart: (await import("node:os")).loadavg().map(x => Math.round(x * 100) / 100),
    },
  };

  if (only.has("translate")) {
    log("translate: 100, 1,000, 10,000 routes over 10 Gateways");
    report.translate = benchTranslate();
  }
  if (only.has("incremental")) {
    log(
      "incremental: one route changed among 3,000 (1 and 10 Gateways), full vs incremental build",
    );
    report.incremental = benchIncremental();
  }
  if (only.has("configLoad")) {
    log("configLoad: 3,000 routes, ours vs naive, real Caddy, median of 5");
    report.configLoad = await benchConfigLoad();
  }
  if (only.has("requestPath")) {
    log("requestPath: Go benchmarks of the Bundled proxy's route table, 3,000 hosts");
    report.requestPath = benchRequestPath();
  }
  if (only.has("requestLoad")) {
    log("requestLoad: requests through ours, a minimal config, stock Caddy's config, direct");
    const rounds = Number(arg("request-rounds") ?? 3);
    report.requestLoad = await benchRequestLoad(
      {
        rounds,
        variants: argv.includes("--request-variants"),
        profileDir: arg("request-profile"),
        filter: arg("request-case"),
      },
      log,
    );
  }
  if (only.has("deltaAck")) {
    log("deltaAck: one-route deltas among 3,000 routes on a real Bundled proxy over mTLS");
    report.deltaAck = await benchDeltaAck();
  }
  const cluster = CLUSTER_SCENARIOS.filter(s => only.has(s));
  if (cluster.length > 0) {
    const dir = mkdtempSync(join(tmpdir(), "kg-bench-out-"));
    const out = join(dir, "cluster.json");
    log(`cluster scenarios (${cluster.join(", ")}): waiting for ${LOCK}`);
    // --locked: the caller already holds the lock (flock is per open file: taking it again here
    // would wait for ourselves).
    const locked = argv.includes("--locked");
    const r = spawnSync(
      locked ? "env" : "flock",
      [
        ...(locked ? [] : [LOCK]),
        // Never hold the lock forever: after 75 minutes the run cleans up and stops.
        "timeout",
        "-s",
        "TERM",
        "4500",
        join(repoRoot, "node_modules", ".bin", "tsx"),
        join(__dirname, "cluster.ts"),
        `--only=${cluster.join(",")}`,
        `--out=${out}`,
        ...argv.filter(a => /^--(api-window|fanout|profile|heap-limit|module-flags)=/.test(a)),
      ],
      { stdio: ["ignore", "inherit", "inherit"], cwd: repoRoot, env: process.env },
    );
    if (existsSync(out))
      Object.assign(report, JSON.parse(readFileSync(out, "utf8")) as ClusterResults);
    rmSync(dir, { recursive: true, force: true });
    if (r.status !== 0) log(`the cluster part failed (exit ${r.status}); its results are missing`);
  }

  // --merge: a selection replaces its scenarios in reports/bench.json (the rest of the file, from
  // earlier runs, is kept; each merged scenario records when it was measured).
  const merge = argv.includes("--merge") && !full;
  let out: Record<string, unknown> = report;
  // every scenario the run measured (settle also reads memory at 1,000 routes)
  const measured = ALL.filter(
    x => (only.has(x) || (x === "memory" && only.has("settle"))) && report[x] !== undefined,
  );
  const when = (s: string) =>
    ((CLUSTER_SCENARIOS as readonly string[]).includes(s) ? report.clusterStartedAt : undefined) ??
    report.date;
  if (merge && existsSync(benchJson)) {
    out = JSON.parse(readFileSync(benchJson, "utf8")) as Record<string, unknown>;
    for (const s of measured)
      out[s] =
        typeof report[s] === "object" && !Array.isArray(report[s])
          ? { ...(report[s] as object), measuredAt: when(s) }
          : report[s];
  }
  out.measuredAt = {
    ...(merge ? (out.measuredAt as Record<string, string> | undefined) : {}),
    ...Object.fromEntries(measured.map(s => [s, when(s)])),
  };
  const rows: Row[] = evaluate(out);
  out.targets = rows;
  const file =
    arg("out") ??
    (merge ? benchJson : join(repoRoot, "reports", full ? "bench.json" : "bench.partial.json"));
  writeFileSync(file, JSON.stringify(out, null, 2) + "\n");
  process.stdout.write(renderTable(rows) + "\n");
  log(`written ${file}`);
}

main(process.argv.slice(2)).catch(e => {
  process.stderr.write(`bench failed: ${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
