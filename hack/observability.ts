/**
 * The shipped dashboard and alerts (deploy/observability/, docs/operations.md §8) as data, for
 * the tests that check them: the metric-name check against the registry
 * (capabilities/metrics/observability.test.ts) and promtool's (tests/integration/promtool-rules.test.ts).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";

export const OBSERVABILITY_DIR = join(__dirname, "..", "deploy", "observability");
export const RULES_FILE = join(OBSERVABILITY_DIR, "kengine-gateway-rules.yaml");
export const RULES_TEST_FILE = join(OBSERVABILITY_DIR, "kengine-gateway-rules.test.yaml");
export const DASHBOARD_FILE = join(OBSERVABILITY_DIR, "kengine-gateway-dashboard.json");

export interface Rule {
  readonly alert?: string;
  readonly record?: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}
/** A PrometheusRule object (monitoring.coreos.com/v1): its spec is a plain Prometheus rule file. */
export interface PrometheusRule {
  readonly apiVersion: string;
  readonly kind: string;
  readonly spec: { readonly groups: readonly { name: string; rules: readonly Rule[] }[] };
}

export const readRules = (): PrometheusRule => parse(readFileSync(RULES_FILE, "utf8"));

/** Where an expression is (`rule NAME`, `panel TITLE`, `variable NAME`) and its PromQL. */
export interface Located {
  readonly where: string;
  readonly expr: string;
}

/** Every PromQL expression of the rule file and the dashboard, with where it is. */
export function observabilityExpressions(): Located[] {
  const out: Located[] = [];
  for (const g of readRules().spec.groups)
    for (const r of g.rules) out.push({ where: `rule ${r.alert ?? r.record}`, expr: r.expr });
  const dash = JSON.parse(readFileSync(DASHBOARD_FILE, "utf8"));
  const walk = (panels: { title: string; targets?: { expr: string }[]; panels?: [] }[]) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) out.push({ where: `panel ${p.title}`, expr: t.expr });
      walk(p.panels ?? []);
    }
  };
  walk(dash.panels);
  for (const v of dash.templating.list)
    if (v.type === "query") {
      // Grafana's label_values(metric, label): only the first argument is PromQL
      const m = /^label_values\((.*),\s*\w+\s*\)$/.exec(v.query);
      out.push({ where: `variable ${v.name}`, expr: m ? m[1] : v.query });
    }
  return out;
}
