/**
 * The build's plan stage: every translated Gateway planned on its own (an exception fails that
 * Gateway alone, contain.ts), then each proxy pod claimed by the oldest Gateway that selects it.
 * Failures come back as the message their Gateway's Programmed condition gives.
 */
import type { GatewayIR } from "../ir";
import { claimProxies, each, planFailure } from "./contain";
import type { Logger } from "./logger";
import type { GatewayPlan } from "./plan";

export interface PlanStageInput<P extends GatewayPlanLike> {
  readonly gateways: readonly GatewayIR[];
  /** Plans one Gateway (plan.ts planGateway with the build's CA, settings and clock). */
  readonly plan: (ir: GatewayIR) => P;
  /** A Gateway's creationTimestamp by `namespace/name` (the oldest keeps a shared pod). */
  readonly createdAt: (key: string) => string;
  readonly log: Pick<Logger, "warn" | "error">;
}

/** What the stage reads of a plan (GatewayPlan has it all). */
export type GatewayPlanLike = Pick<
  GatewayPlan,
  "key" | "targets" | "proxies" | "configProblem" | "settingsProblems"
>;

export interface PlanStageOutput<P> {
  /** The plans, in translation order, each with the pods it keeps. */
  readonly plans: P[];
  /** Why a Gateway could not be planned, by `namespace/name` (the Programmed message). */
  readonly failures: Map<string, string>;
}

export function planStage<P extends GatewayPlanLike>(input: PlanStageInput<P>): PlanStageOutput<P> {
  const planned = each(
    input.gateways,
    ir => `${ir.namespace}/${ir.name}`,
    ir => {
      const plan = input.plan(ir);
      for (const problem of plan.settingsProblems)
        input.log.warn("proxy settings", { gateway: `${ir.namespace}/${ir.name}`, problem });
      return plan;
    },
  );
  const failures = new Map<string, string>();
  for (const r of planned)
    if (!r.ok) {
      failures.set(r.key, planFailure(r.error));
      input.log.error("cannot plan gateway", { gateway: r.key, error: r.error });
    }
  const plans = claimProxies(
    planned.flatMap(r => (r.ok ? [r.value] : [])),
    input.createdAt,
  );
  return { plans, failures };
}
