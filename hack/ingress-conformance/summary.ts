/**
 * Reads the upstream Ingress conformance suite's reports: godog's cucumber JSON, one file per
 * feature (`<feature>-report.json`). A scenario passed when every step passed; it failed when a
 * step failed, and is "undefined" when the suite has no code for a step (the suite's own gap,
 * not ours). Pure: the runner (run.ts) reads the files.
 */

export type Outcome = "passed" | "failed" | "skipped" | "undefined";

export interface ScenarioResult {
  readonly feature: string;
  readonly scenario: string;
  readonly outcome: Outcome;
  /** The first failed step and its error, for a failed scenario. */
  readonly failure?: { readonly step: string; readonly error: string };
  /** The time its steps took (godog's step durations; background steps included), seconds. */
  readonly seconds: number;
}

export interface Summary {
  readonly scenarios: readonly ScenarioResult[];
  readonly passed: number;
  readonly failed: number;
  readonly other: number;
}

interface CucumberStep {
  readonly keyword?: string;
  readonly name?: string;
  readonly result?: {
    readonly status?: string;
    readonly error_message?: string;
    /** Nanoseconds. */
    readonly duration?: number;
  };
}
interface CucumberElement {
  readonly name?: string;
  readonly type?: string;
  readonly steps?: readonly CucumberStep[];
}
interface CucumberFeature {
  readonly name?: string;
  readonly elements?: readonly CucumberElement[];
}

function outcomeOf(steps: readonly CucumberStep[]): Pick<ScenarioResult, "outcome" | "failure"> {
  const failed = steps.find(s => s.result?.status === "failed");
  if (failed) {
    return {
      outcome: "failed",
      failure: {
        step: `${(failed.keyword ?? "").trim()} ${failed.name ?? ""}`.trim(),
        error: (failed.result?.error_message ?? "").trim(),
      },
    };
  }
  if (steps.some(s => s.result?.status === "undefined" || s.result?.status === "pending"))
    return { outcome: "undefined" };
  if (steps.length > 0 && steps.every(s => s.result?.status === "passed"))
    return { outcome: "passed" };
  return { outcome: "skipped" };
}

function secondsOf(steps: readonly CucumberStep[]): number {
  const ns = steps.reduce((sum, s) => sum + (s.result?.duration ?? 0), 0);
  return Math.round(ns / 1e8) / 10;
}

/** The scenarios of every report (each the parsed JSON of one `<feature>-report.json`). */
export function summarize(reports: readonly unknown[]): Summary {
  const scenarios: ScenarioResult[] = [];
  for (const report of reports) {
    if (!Array.isArray(report))
      throw new Error("a cucumber report must be a JSON array of features");
    for (const feature of report as CucumberFeature[]) {
      for (const el of feature.elements ?? []) {
        if (el.type !== undefined && el.type !== "scenario") continue;
        scenarios.push({
          feature: feature.name ?? "",
          scenario: el.name ?? "",
          ...outcomeOf(el.steps ?? []),
          seconds: secondsOf(el.steps ?? []),
        });
      }
    }
  }
  const count = (o: Outcome) => scenarios.filter(s => s.outcome === o).length;
  return {
    scenarios,
    passed: count("passed"),
    failed: count("failed"),
    other: scenarios.length - count("passed") - count("failed"),
  };
}

/** The summary as lines for a terminal: one per scenario, then the totals. */
export function formatSummary(s: Summary): string {
  const lines = s.scenarios.map(r => {
    const mark = r.outcome === "passed" ? "PASS" : r.outcome === "failed" ? "FAIL" : r.outcome;
    const why = r.failure ? `\n      ${r.failure.step}: ${r.failure.error.split("\n")[0]}` : "";
    return `  ${mark.padEnd(9)} ${`${r.seconds.toFixed(1)} s`.padStart(8)}  ${r.feature}: ${r.scenario}${why}`;
  });
  lines.push(
    `${s.scenarios.length} scenarios: ${s.passed} passed, ${s.failed} failed, ${s.other} other`,
  );
  return lines.join("\n");
}
