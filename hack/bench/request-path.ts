/**
 * Scenario "requestPath": the Bundled proxy's request path, measured by the Go benchmarks of
 * our route-table handler (proxy/routetable/bench_test.go) through its ServeHTTP: a request for
 * a host no route names among 3,000 hosts (the target), a known host, a wildcard host, and for
 * comparison stock Caddy's shape (one host-matched subroute per host, walked in a line).
 * `go test -bench` in proxy/ (no cgo, no race detector), each benchmark `count` times; the
 * median ns/op is recorded.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { median } from "./stats";

const BENCHMARKS = {
  unknownHost: "UnknownHost3000",
  knownHost: "KnownHost3000",
  wildcardHost: "WildcardHost3000",
  linearUnknownHost: "UnknownHost3000LinearForComparison",
} as const;
type Name = keyof typeof BENCHMARKS;

export interface RequestPathResult {
  readonly hosts: 3000;
  /** Median ns/op of each benchmark. */
  readonly ns: Readonly<Record<Name, number>>;
  readonly samples: Readonly<Record<Name, readonly number[]>>;
  readonly benchtime: string;
  readonly go: string;
}

/** ns/op of every `Benchmark<Name>[-procs]  N  X ns/op` line, by benchmark name. */
export function parseGoBench(text: string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const m of text.matchAll(/^Benchmark(\w+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns\/op/gm)) {
    const list = out.get(m[1]) ?? [];
    list.push(Number(m[2]));
    out.set(m[1], list);
  }
  return out;
}

export function benchRequestPath(count = 3, benchtime = "1s"): RequestPathResult {
  const proxyDir = join(__dirname, "..", "..", "proxy");
  const names = Object.values(BENCHMARKS).join("|");
  const run = (args: string[]) =>
    spawnSync("go", args, {
      cwd: proxyDir,
      env: { ...process.env, CGO_ENABLED: "0" },
      encoding: "utf8",
      maxBuffer: 16 << 20,
    });
  const r = run([
    "test",
    "-run",
    "^$",
    "-bench",
    `^Benchmark(${names})$`,
    `-benchtime=${benchtime}`,
    `-count=${count}`,
    "./routetable/",
  ]);
  if (r.status !== 0)
    throw new Error(`go test -bench failed (${r.status}): ${(r.stderr + r.stdout).slice(-2000)}`);
  const parsed = parseGoBench(r.stdout);
  const samples = {} as Record<Name, number[]>;
  const ns = {} as Record<Name, number>;
  for (const [key, bench] of Object.entries(BENCHMARKS) as [Name, string][]) {
    const s = parsed.get(bench);
    if (!s?.length) throw new Error(`no result for Benchmark${bench} in:\n${r.stdout}`);
    samples[key] = s;
    ns[key] = median(s);
  }
  return { hosts: 3000, ns, samples, benchtime, go: run(["version"]).stdout.trim() };
}
