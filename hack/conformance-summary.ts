/**
 * Pure summary of the Gateway API conformance suite's own report (ConformanceReport,
 * sigs.k8s.io/gateway-api/conformance/apis/v1 at v1.6.1) and of the suite's log when it
 * produced no report. No I/O: hack/conformance.ts reads the files and prints the result.
 *
 * Report shape (YAML keys as the suite writes them; Statistics has no JSON tags, hence the
 * capitalised Passed/Failed/Skipped):
 *   profiles:
 *   - name: GATEWAY-HTTP
 *     summary: Core tests failed with 3 test failures. ...
 *     core:     { result, statistics: {Passed, Failed, Skipped}, skippedTests?, failedTests? }
 *     extended: { result, statistics, skippedTests?, failedTests?, supportedFeatures?, unsupportedFeatures? }  (optional)
 */
import { parse } from "yaml";

export interface StatusSummary {
  readonly result: string;
  readonly passed: number;
  readonly failed: number;
  readonly skipped: number;
  readonly failedTests: readonly string[];
  readonly skippedTests: readonly string[];
}

export interface ProfileSummary {
  readonly name: string;
  readonly summary: string;
  readonly core: StatusSummary;
  /** Absent when the profile ran no extended test (the suite then omits `extended`). */
  readonly extended?: StatusSummary & {
    readonly supportedFeatures: readonly string[];
    readonly unsupportedFeatures: readonly string[];
  };
}

export interface ReportSummary {
  readonly implementation: { organization: string; project: string; version: string };
  readonly gatewayAPIVersion: string;
  readonly gatewayAPIChannel: string;
  readonly mode: string;
  readonly date: string;
  readonly profiles: readonly ProfileSummary[];
  /** Every failed test, core and extended, across profiles, deduplicated and sorted. */
  readonly failedTests: readonly string[];
  readonly totalFailed: number;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string =>
  typeof v === "string" ? v : v === undefined || v === null ? "" : String(v);
const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map(str) : []);

function status(v: unknown): StatusSummary {
  const s = isObj(v) ? v : {};
  const stats = isObj(s.statistics) ? s.statistics : {};
  return {
    result: str(s.result),
    passed: num(stats.Passed),
    failed: num(stats.Failed),
    skipped: num(stats.Skipped),
    failedTests: strings(s.failedTests),
    skippedTests: strings(s.skippedTests),
  };
}

/** Summarises a parsed ConformanceReport. Throws when it is not one. */
export function summarizeReport(report: unknown): ReportSummary {
  if (!isObj(report) || report.kind !== "ConformanceReport") {
    throw new Error("not a Gateway API ConformanceReport (kind: ConformanceReport expected)");
  }
  const impl = isObj(report.implementation) ? report.implementation : {};
  const profiles: ProfileSummary[] = (Array.isArray(report.profiles) ? report.profiles : [])
    .filter(isObj)
    .map(p => {
      const ext = isObj(p.extended) ? p.extended : undefined;
      return {
        name: str(p.name),
        summary: str(p.summary),
        core: status(p.core),
        ...(ext && {
          extended: {
            ...status(ext),
            supportedFeatures: strings(ext.supportedFeatures),
            unsupportedFeatures: strings(ext.unsupportedFeatures),
          },
        }),
      };
    })
    // The suite emits profiles in map order; sort for a stable table.
    .sort((a, b) => a.name.localeCompare(b.name));
  const failed = new Set<string>();
  let totalFailed = 0;
  for (const p of profiles) {
    for (const t of p.core.failedTests) failed.add(t);
    for (const t of p.extended?.failedTests ?? []) failed.add(t);
    totalFailed += p.core.failed + (p.extended?.failed ?? 0);
  }
  return {
    implementation: {
      organization: str(impl.organization),
      project: str(impl.project),
      version: str(impl.version),
    },
    gatewayAPIVersion: str(report.gatewayAPIVersion),
    gatewayAPIChannel: str(report.gatewayAPIChannel),
    mode: str(report.mode),
    date: str(report.date),
    profiles,
    failedTests: [...failed].sort(),
    totalFailed,
  };
}

export function summarizeReportYaml(text: string): ReportSummary {
  return summarizeReport(parse(text));
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map(r => r[i].length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i]))
      .join("  ")
      .trimEnd();
  return [
    line(rows[0]),
    widths.map(w => "-".repeat(w)).join("  "),
    ...rows.slice(1).map(line),
  ].join("\n");
}

/**
 * The table printed after a run: per profile, core passed/failed/skipped and the extended
 * features supported (of the profile's extended features) with extended tests passed/failed.
 */
export function formatSummary(s: ReportSummary): string {
  const rows = [
    [
      "profile",
      "core",
      "passed",
      "failed",
      "skipped",
      "ext features",
      "ext passed",
      "ext failed",
      "ext skipped",
    ],
  ];
  for (const p of s.profiles) {
    const e = p.extended;
    const featureTotal = e ? e.supportedFeatures.length + e.unsupportedFeatures.length : 0;
    rows.push([
      p.name,
      p.core.result,
      String(p.core.passed),
      String(p.core.failed),
      String(p.core.skipped),
      e ? `${e.supportedFeatures.length}/${featureTotal}` : "-",
      e ? String(e.passed) : "-",
      e ? String(e.failed) : "-",
      e ? String(e.skipped) : "-",
    ]);
  }
  const out = [
    `Gateway API ${s.gatewayAPIVersion} (${s.gatewayAPIChannel}), ${s.implementation.project} ${s.implementation.version}, mode ${s.mode}, ${s.date}`,
    table(rows),
  ];
  if (s.failedTests.length > 0) {
    out.push(`failed tests (${s.failedTests.length}):`, ...s.failedTests.map(t => `  ${t}`));
  } else {
    out.push("failed tests: none");
  }
  const skipped = new Set<string>();
  for (const p of s.profiles)
    for (const t of [...p.core.skippedTests, ...(p.extended?.skippedTests ?? [])]) skipped.add(t);
  if (skipped.size > 0)
    out.push(`skipped tests (${skipped.size}): ${[...skipped].sort().join(", ")}`);
  return out.join("\n");
}

/**
 * When the suite wrote no report: the lines of its log that say why. The suite logs, while
 * waiting, lines such as "Pod ns/name not ready yet" or "ns/name Gateway not Programmed yet",
 * and on giving up a testify "Error:" block. Returns the last distinct waiting messages and
 * the error messages, in log order, at most `max` lines.
 */
export function diagnoseLog(log: string, max = 20): string[] {
  const lines = log.split(/\r?\n/);
  const waiting =
    /(not ready yet|expected observedGeneration|not Accepted yet|not Programmed yet|No pods deployed yet|GatewayClass.*(generation|condition)|has an empty status\.supportedFeatures|cannot read GatewayClass|is not accepted:)/;
  const found: string[] = [];
  let inError = false;
  for (const raw of lines) {
    const line = raw.replace(/^\s+/, "");
    // testify: "Error:      \tmessage" then continuation lines indented, until "Test:" / "Messages:".
    const err = /^Error:\s+(.*)$/.exec(line);
    if (err) {
      found.push(`error: ${err[1].trim()}`);
      inError = true;
      continue;
    }
    const msg = /^Messages:\s+(.*)$/.exec(line);
    if (msg) {
      found.push(`error: ${msg[1].trim()}`);
      inError = false;
      continue;
    }
    if (inError) {
      if (/^(Test|Error Trace):/.test(line) || line === "") {
        inError = false;
      } else if (!/^[-=]{3} /.test(line)) {
        found.push(`error: ${line.trim()}`);
      }
      continue;
    }
    const m = waiting.exec(line);
    if (m) {
      // Drop the suite's "helpers.go:123: 2026-...: " prefix so repeats compare equal.
      found.push(line.replace(/^\S+\.go:\d+:\s*/, "").replace(/^\d{4}-\d\d-\d\dT\S+:\s*/, ""));
    }
  }
  // Keep the last occurrence of each message, in order of last occurrence.
  const lastIndex = new Map<string, number>();
  found.forEach((l, i) => lastIndex.set(l, i));
  const distinct = [...lastIndex.entries()].sort((a, b) => a[1] - b[1]).map(([l]) => l);
  return distinct.slice(-max);
}

/**
 * The first error of each failed test, from the suite's `go test -v` log: lines belong to the
 * test named by the latest `=== RUN|CONT|NAME|PAUSE  TestConformance/<test>[/sub]` header;
 * the first testify `Error:` (with its continuation lines) and `Messages:` of a test are its
 * reason. Without one (the suite's request helpers fail with a plain t.Fatalf), the test's
 * last two distinct log messages before its cleanup are its reason; with one, the test's last
 * log message is appended (a status wait logs what it saw). Otherwise "".
 */
export function failureReasons(log: string, tests: readonly string[]): Map<string, string> {
  const wanted = new Set(tests);
  const reasons = new Map<string, string[]>();
  const lastLogs = new Map<string, string[]>();
  let current = "";
  let collecting = false;
  for (const raw of log.split(/\r?\n/)) {
    const header = /^=== (?:RUN|CONT|NAME|PAUSE)\s+TestConformance\/([^/\s]+)/.exec(raw);
    if (header) {
      current = header[1];
      collecting = false;
      continue;
    }
    if (!wanted.has(current)) continue;
    const line = raw.trim();
    const logged = /^\S+\.go:\d+: (?:\d{4}-\d\d-\d\dT\S+: )?(.*)$/.exec(line);
    if (logged && !/^apply\.go:/.test(line) && logged[1].trim() !== "") {
      const msg = logged[1].replace(/ \(after [^)]*\)$/, "").trim();
      const prev = lastLogs.get(current) ?? [];
      if (prev[prev.length - 1] !== msg) lastLogs.set(current, [...prev, msg].slice(-2));
    }
    const got = reasons.get(current);
    if (got && !collecting) continue; // first error only
    const err = /^Error:\s+(.*)$/.exec(line);
    if (err) {
      reasons.set(current, [err[1].trim()]);
      collecting = true;
      continue;
    }
    if (!collecting) continue;
    const msg = /^Messages:\s+(.*)$/.exec(line);
    if (msg) {
      got?.push(msg[1].trim());
      collecting = false;
    } else if (/^(Test|Error Trace):/.test(line) || line === "" || /^[-=]{3} /.test(line)) {
      if (/^Test:/.test(line)) continue;
      collecting = false;
    } else {
      got?.push(line);
    }
  }
  const out = new Map<string, string>();
  for (const t of tests) {
    const err = reasons.get(t);
    const logs = lastLogs.get(t) ?? [];
    // A status wait's last poll says what was seen instead ("... expected Status False").
    const r = err
      ? [...err, ...(logs.length ? [`(last logged: ${logs[logs.length - 1]})`] : [])]
      : logs;
    out.set(t, r.join(" ").replace(/\s+/g, " ").slice(0, 500));
  }
  return out;
}
