/**
 * The dashboard and alerts in deploy/observability/ refer only to metrics the controller
 * registers: every PromQL expression in both files is tokenised, its metric names extracted and
 * each checked against the registry (the modules that register metrics are imported, and a
 * scan of capabilities/ checks that none is missed). Function names are checked against
 * PromQL's own list, so a misspelt metric or function fails here, not on a blank panel.
 */
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { DASHBOARD_FILE, observabilityExpressions, readRules } from "../../hack/observability";
import "../acme/metrics";
import "./build";
import "./fleet";
import { METRIC_PREFIX, registry } from "./index";

const ROOT = join(__dirname, "..", "..");

/** PromQL functions (prometheus/promql/parser/functions.go) and aggregation operators. */
const FUNCTIONS = new Set(
  (
    "abs absent absent_over_time acos acosh asin asinh atan atanh avg_over_time ceil changes clamp " +
    "clamp_max clamp_min cos cosh count_over_time days_in_month day_of_month day_of_week day_of_year " +
    "deg delta deriv exp floor histogram_avg histogram_count histogram_fraction histogram_quantile " +
    "histogram_sum histogram_stddev histogram_stdvar holt_winters double_exponential_smoothing hour " +
    "idelta increase irate label_join label_replace last_over_time ln log10 log2 mad_over_time " +
    "max_over_time min_over_time minute month pi predict_linear present_over_time quantile_over_time " +
    "rad rate resets round scalar sgn sin sinh sort sort_desc sort_by_label sort_by_label_desc sqrt " +
    "stddev_over_time stdvar_over_time sum_over_time tan tanh time timestamp vector year " +
    "sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio"
  ).split(" "),
);
const KEYWORDS = new Set(
  "and or unless by without on ignoring group_left group_right bool offset atan2 inf nan".split(
    " ",
  ),
);
/** Keywords whose parenthesised list holds label names, not expressions. */
const LABEL_LISTS = /\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g;

export interface PromqlNames {
  readonly metrics: string[];
  readonly functions: string[];
}

/**
 * The metric and function names of one PromQL expression: strings, label matchers (`{…}`),
 * ranges and subqueries (`[…]`), label lists (`by (…)`) and numbers are removed; an identifier
 * followed by `(` is a function, any other that is not a keyword is a metric.
 */
export function promqlNames(expr: string): PromqlNames {
  let s = expr
    .replace(/#.*$/gm, " ")
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^{}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(LABEL_LISTS, " ")
    .replace(/\boffset\s+-?[0-9a-z]+/g, " ");
  s = s.replace(/(^|[^\w:.])(0x[0-9a-f]+|[0-9]*\.?[0-9]+(e[+-]?[0-9]+)?)(?![\w:])/gi, "$1 ");
  const metrics: string[] = [];
  const functions: string[] = [];
  for (const m of s.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?/g)) {
    const [, name, call] = m;
    if (call) functions.push(name!);
    else if (!KEYWORDS.has(name!.toLowerCase())) metrics.push(name!);
  }
  return { metrics, functions };
}

/** Every series name the registry exposes: histograms as _bucket, _sum and _count. */
async function registered(): Promise<Set<string>> {
  // admission registers one histogram; importing it sets up Pepr's capability, which logs
  process.env.LOG_LEVEL ??= "warn";
  await import("../admission");
  const names = new Set<string>();
  for (const m of await registry.getMetricsAsJSON()) {
    if (String(m.type) === "histogram")
      for (const suffix of ["_bucket", "_sum", "_count"]) names.add(m.name + suffix);
    else names.add(m.name);
  }
  return names;
}

const sources = (dir: string): string[] =>
  readdirSync(dir).flatMap(name => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") && !name.endsWith(".test.ts") ? [path] : [];
  });

describe("promqlNames", () => {
  it("finds metrics and functions, not labels, strings, durations or numbers", () => {
    expect(
      promqlNames(
        'sum by (gateway, le) (rate(a_total{x="b c", y=~"$g"}[$__rate_interval] offset 5m)) / on(gateway) group_left(code) b > 14 * 86400 and c unless absent(d:e)',
      ),
    ).toEqual({ metrics: ["a_total", "b", "c", "d:e"], functions: ["sum", "rate", "absent"] });
    expect(promqlNames("histogram_quantile(0.99, x_bucket) > 1e3").metrics).toEqual(["x_bucket"]);
  });
});

describe("deploy/observability", () => {
  const all = observabilityExpressions();

  it("has expressions in both files", () => {
    expect(all.filter(e => e.where.startsWith("rule")).length).toBeGreaterThan(5);
    expect(all.filter(e => e.where.startsWith("panel")).length).toBeGreaterThan(10);
  });

  it("every alert has a unique name, a severity, a summary and a duration; every panel a unique id", () => {
    const rules = readRules();
    expect(rules).toMatchObject({ apiVersion: "monitoring.coreos.com/v1", kind: "PrometheusRule" });
    const alerts = rules.spec.groups.flatMap(g => g.rules);
    const names = alerts.map(r => r.alert);
    expect(new Set(names).size).toBe(names.length);
    for (const r of alerts)
      expect(r).toEqual(
        expect.objectContaining({
          alert: expect.stringMatching(/^Kengine[A-Za-z]+$/),
          expr: expect.any(String),
          for: expect.stringMatching(/^\d+[smh]$/),
          labels: { severity: expect.stringMatching(/^(warning|critical)$/) },
          annotations: expect.objectContaining({ summary: expect.any(String) }),
        }),
      );
    const dash = JSON.parse(readFileSync(DASHBOARD_FILE, "utf8"));
    const ids = dash.panels.map((p: { id: number }) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("the registry holds every metric the code defines", async () => {
    const names = await registered();
    const defined = sources(join(ROOT, "capabilities")).flatMap(f =>
      [...readFileSync(f, "utf8").matchAll(/name: `\$\{METRIC_PREFIX\}(\w+)`/g)].map(
        m => METRIC_PREFIX + m[1],
      ),
    );
    expect(defined.length).toBeGreaterThan(20);
    const missing = defined.filter(n => !names.has(n) && !names.has(`${n}_count`));
    expect(missing).toEqual([]);
  });

  it("refers only to metrics the controller registers and to PromQL functions", async () => {
    const names = await registered();
    const problems: string[] = [];
    for (const { where, expr } of all) {
      const stripped = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
      for (const [open, close] of ["()", "{}", "[]"])
        if (stripped.split(open!).length !== stripped.split(close!).length)
          problems.push(`${where}: unbalanced ${open}${close} in ${expr}`);
      const found = promqlNames(expr);
      if (found.metrics.length === 0) problems.push(`${where}: no metric in ${expr}`);
      for (const m of found.metrics)
        if (!names.has(m)) problems.push(`${where}: unknown metric ${m}`);
      for (const f of found.functions)
        if (!FUNCTIONS.has(f)) problems.push(`${where}: unknown function ${f}`);
    }
    expect(problems).toEqual([]);
  });
});
