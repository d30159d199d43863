/**
 * The build's per-phase timings (reconcile/build-timings.ts): how long each step from a watched
 * change to the proxies running it took, and how much each build redid. How operators see a
 * slow controller: a phase whose histogram grows is where the time goes.
 */
import { Counter, Histogram } from "prom-client";
import { METRIC_PREFIX, registry } from "./index";

/** The steps of a build, in order (README "Status, leader election and metrics"). */
export const BUILD_PHASES = [
  "queued", // first change of a batch received → its build starts (batching, previous build)
  "snapshot", // applying the batch's watch events to the snapshot
  "translate", // snapshot → IR and status results (0 when nothing translate() reads changed)
  "render", // IR → Caddy JSON, sealed, per Gateway (0 for Gateways whose IR is unchanged)
  "provision", // handing each Gateway's objects to the provisioning queue (not awaited; after the push)
  "push", // handing the sealed configs to the push engine (before provisioning)
  "acknowledged", // push handed over → the proxy answered that it runs the config
  "status", // computing status and handing its writes to the status queue (not awaited)
] as const;
export type BuildPhase = (typeof BUILD_PHASES)[number];

/** What one build redid, by stage (counts of Gateways or proxies). */
export type BuildStage = "translated" | "reused" | "rendered" | "pushed";

const phaseSeconds = new Histogram({
  name: `${METRIC_PREFIX}build_phase_seconds`,
  help: "Time of each phase of a build: queued, snapshot, translate, render, provision, push, acknowledged (push sent → proxy answered), status.",
  labelNames: ["phase"],
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});
const propagation = new Histogram({
  name: `${METRIC_PREFIX}propagation_seconds`,
  help: "Time from a watched change's arrival to the first proxy answering that it runs the config built from it.",
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});
const stageGateways = new Counter({
  name: `${METRIC_PREFIX}build_gateways_total`,
  help: "Gateways handled by builds, by stage: translated (IR made), reused (IR equal to the previous build's: not rendered again), rendered (Caddy JSON made and sealed), pushed (proxies handed a new config).",
  labelNames: ["stage"],
  registers: [registry],
});

export interface BuildObserver {
  phase(phase: BuildPhase, seconds: number): void;
  propagation(seconds: number): void;
  stage(stage: BuildStage, count: number): void;
}

export const buildMetrics: BuildObserver = {
  phase: (phase, seconds) => phaseSeconds.observe({ phase }, seconds),
  propagation: seconds => propagation.observe(seconds),
  stage: (stage, count) => count > 0 && stageGateways.inc({ stage }, count),
};
