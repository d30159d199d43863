/**
 * The shipped alerts and dashboard (deploy/observability/, docs/operations.md §8) checked by
 * Prometheus's own promtool (a peer of hack/build-peers.sh), not by our reading of PromQL:
 * - `promtool check rules` parses and lints the PrometheusRule's rules (its spec, written out as
 *   the plain rule file promtool reads);
 * - `promtool test rules` runs kengine-gateway-rules.test.yaml, which must fire every alert, with
 *   its labels and annotations, and also keep every alert quiet on healthy series;
 * - every dashboard query, with Grafana's variables given values, parses as a recording rule.
 * Needs no cluster; the metric names themselves are checked in capabilities/metrics/observability.test.ts.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { parse, stringify } from "yaml";
import {
  DASHBOARD_FILE,
  RULES_TEST_FILE,
  observabilityExpressions,
  readRules,
} from "../../hack/observability";
import { peerBin } from "../../hack/peers";

/** The rule file the unit tests name: the PrometheusRule's spec. */
const RULE_FILE = "kengine-gateway.rules.yaml";

interface AlertTest {
  eval_time: string;
  alertname: string;
  exp_alerts?: { exp_labels?: Record<string, string> }[];
}
interface RulesTests {
  rule_files: string[];
  tests: { name: string; alert_rule_test?: AlertTest[] }[];
}

let promtool = "";
let dir = "";

/** Runs promtool; its exit code and everything it printed. */
function run(...args: string[]): { code: number | null; out: string } {
  const r = spawnSync(promtool, args, { cwd: dir, encoding: "utf8", timeout: 120_000 });
  if (r.error) throw r.error;
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

beforeAll(() => {
  promtool = peerBin("promtool");
  dir = mkdtempSync(join(tmpdir(), "kg-promtool-"));
  writeFileSync(join(dir, RULE_FILE), stringify(readRules().spec));
  copyFileSync(RULES_TEST_FILE, join(dir, basename(RULES_TEST_FILE)));
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("promtool on deploy/observability", () => {
  const rules = readRules();
  const alerts = rules.spec.groups.flatMap(g => g.rules.map(r => r.alert ?? r.record ?? ""));
  const tests: RulesTests = parse(readFileSync(RULES_TEST_FILE, "utf8"));

  it("check rules: every rule parses and passes the lints", () => {
    const { code, out } = run("check", "rules", "--lint=all", "--lint-fatal", RULE_FILE);
    expect({ code, out }).toEqual({
      code: 0,
      out: expect.stringContaining(`SUCCESS: ${alerts.length} rules found`),
    });
  });

  it("the unit tests fire every alert and keep every alert quiet on healthy series", () => {
    expect(tests.rule_files).toEqual([RULE_FILE]);
    const cases = tests.tests.flatMap(t => t.alert_rule_test ?? []);
    const fired = new Set(cases.filter(c => (c.exp_alerts ?? []).length > 0).map(c => c.alertname));
    const quiet = new Set(
      cases.filter(c => (c.exp_alerts ?? []).length === 0).map(c => c.alertname),
    );
    expect({
      neverFired: alerts.filter(a => !fired.has(a)),
      neverQuiet: alerts.filter(a => !quiet.has(a)),
      unknown: cases.map(c => c.alertname).filter(a => !alerts.includes(a)),
    }).toEqual({ neverFired: [], neverQuiet: [], unknown: [] });
  });

  it("test rules: every case passes", () => {
    const { code, out } = run("test", "rules", "--diff", basename(RULES_TEST_FILE));
    expect({ code, out }).toEqual({ code: 0, out: expect.stringContaining("SUCCESS") });
    expect(out).not.toMatch(/FAILED/);
  });

  it("every dashboard query parses", () => {
    const dash = JSON.parse(readFileSync(DASHBOARD_FILE, "utf8"));
    // Grafana's built-in intervals, and each template variable at its "All" value
    const values = new Map<string, string>([
      ["__rate_interval", "1m"],
      ["__interval", "1m"],
      ["__range", "1h"],
    ]);
    for (const v of dash.templating.list as { name: string; allValue?: string }[])
      values.set(v.name, v.allValue ?? ".*");
    const queries = observabilityExpressions().filter(e => !e.where.startsWith("rule"));
    expect(queries.length).toBeGreaterThan(10);
    const unknown: string[] = [];
    const groups = [
      {
        name: "dashboard",
        rules: queries.map((q, i) => ({
          record: `dashboard:query_${i}`,
          expr: q.expr.replace(/\$\{(\w+)\}|\$(\w+)/g, (all, a?: string, b?: string) => {
            const value = values.get((a ?? b)!);
            if (value === undefined) unknown.push(`${q.where}: ${all}`);
            return value ?? all;
          }),
        })),
      },
    ];
    expect(unknown).toEqual([]);
    writeFileSync(join(dir, "dashboard.rules.yaml"), stringify({ groups }));
    const { code, out } = run("check", "rules", "dashboard.rules.yaml");
    expect({ code, out }).toEqual({
      code: 0,
      out: expect.stringContaining(`SUCCESS: ${queries.length} rules found`),
    });
  });

  it("check rules refuses an expression that does not parse (the check is not vacuous)", () => {
    const broken = { groups: [{ name: "x", rules: [{ record: "x:y", expr: "sum by (a (b)" }] }] };
    writeFileSync(join(dir, "broken.rules.yaml"), stringify(broken));
    const { code, out } = run("check", "rules", "broken.rules.yaml");
    expect(code).not.toBe(0);
    expect(out).toMatch(/parse error/);
  });
});
