/**
 * Scenario "incremental": the controller's own work for one route changed among 3,000 (issue
 * 16, items 1 and 3), in this process, phase by phase as a build does it (reconcile/reconciler.ts):
 * the watch event into the snapshot, translation, rendering and sealing each Gateway's config
 * (plan.ts), and computing status against the stored one. Two ways, alternating on the same
 * changes: `full` renders every Gateway each build (the IR is new each build, so the sealed-
 * config cache misses: the controller before IR reuse) and computes every object's status,
 * `incremental` keeps unchanged Gateways' IR (reconcile/reuse.ts) so only the changed Gateway
 * is rendered, and skips objects whose status was found in place (status/compute.ts StatusMemo). Two layouts: all
 * routes on one Gateway (the propagation scenario's) and over 10 Gateways. CPU is the
 * process's user + system time (process.cpuUsage); medians of the samples after a warm-up.
 */
import { podManagementSpec } from "../../capabilities/workload";
import { fragmentCounts } from "../../capabilities/caddy/render-memo";
import { newAuthority } from "../../capabilities/pki/rotation";
import { sealGatewayConfig, sealedFor, sealedRenders } from "../../capabilities/reconcile/plan";
import { IncrementalTranslator } from "../../capabilities/reconcile/reuse";

import {
  CONTROLLER_NAME,
  KubeObject,
  Snapshot,
  apply,
  applyAll,
  snapshotOf,
} from "../../capabilities/snapshot";
import {
  StatusKind,
  StatusMemo,
  StoredObject,
  StoredSource,
  computeStatusUpdates,
} from "../../capabilities/status";
import { translate } from "../../capabilities/translate";
import { median, now, round } from "./stats";
import { snapshotObjects } from "./workload";

export type Mode = "full" | "incremental";
/**
 * Changed-route builds before the measured ones: a controller runs its change paths compiled,
 * and fewer warm-up builds measured the JIT rather than the code (docs/bench.md, "incremental").
 */
const WARM_UP = 20;
const PHASES = ["snapshot", "translate", "render", "status"] as const;
type Phase = (typeof PHASES)[number];

export interface IncrementalSample {
  readonly routes: number;
  readonly gateways: number;
  readonly mode: Mode;
  /** Median wall time of each phase (ms). */
  readonly phaseMs: Record<Phase, number>;
  /** Median CPU time of each phase (ms; user + system): less moved by other processes' load. */
  readonly phaseCpuMs: Record<Phase, number>;
  /** Median controller CPU of one build (user + system, ms). */
  readonly cpuMs: number;
  /** Median Gateways rendered per build. */
  readonly rendered: number;
  /**
   * Median route entries rendered and reused per build (caddy/render-memo.ts: an entry the
   * translator kept is not rendered again).
   */
  readonly entries: { readonly rendered: number; readonly reused: number };
  readonly samples: number;
}

const cpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/**
 * The stored objects, as the controller's snapshot holds them once the watch delivered our
 * status writes (each write applied as an upsert): `current` reads them, and the memo is told
 * which changed (the snapshot's lineage; the writer's own answers arrive at once here).
 */
export class Stored {
  #snapshot: Snapshot;
  constructor(objects: readonly KubeObject[]) {
    this.#snapshot = snapshotOf(objects);
  }
  current = (kind: StatusKind, ns: string | undefined, name: string): StoredObject | undefined =>
    this.#snapshot.objects[kind].get(ns ? `${ns}/${name}` : name);
  source = (): StoredSource => ({
    routes: {
      HTTPRoute: this.#snapshot.objects.HTTPRoute,
      GRPCRoute: this.#snapshot.objects.GRPCRoute,
      TLSRoute: this.#snapshot.objects.TLSRoute,
      TCPRoute: this.#snapshot.objects.TCPRoute,
      UDPRoute: this.#snapshot.objects.UDPRoute,
    },
    version: 0,
    writtenSince: () => new Set(),
  });
  written(updates: ReturnType<typeof computeStatusUpdates>): void {
    this.#snapshot = applyAll(
      this.#snapshot,
      updates.flatMap(u => {
        const o = this.current(u.kind, u.namespace, u.name);
        return o
          ? [
              {
                type: "upsert" as const,
                kind: u.kind,
                object: { ...o, status: u.status } as KubeObject,
              },
            ]
          : [];
      }),
    ).snapshot;
  }
}

export function benchIncremental(
  layouts: readonly { routes: number; gateways: number }[] = [
    { routes: 3000, gateways: 1 },
    { routes: 3000, gateways: 10 },
  ],
  changes = 30,
): IncrementalSample[] {
  const spec = podManagementSpec(newAuthority(Date.now()).certificatePem);
  const out: IncrementalSample[] = [];
  for (const layout of layouts) {
    const opts = { routes: layout.routes, gateways: layout.gateways };
    const objects = snapshotObjects(opts);
    const routes = objects.filter(o => o.kind === "HTTPRoute");
    for (const mode of ["full", "incremental"] as const) {
      let snapshot: Snapshot = snapshotOf(objects);
      const translator = new IncrementalTranslator();
      const stored = new Stored(objects);
      const memo = mode === "incremental" ? new StatusMemo() : undefined;
      const phases: Record<Phase, number[]> = {
        snapshot: [],
        translate: [],
        render: [],
        status: [],
      };
      const phaseCpus: Record<Phase, number[]> = {
        snapshot: [],
        translate: [],
        render: [],
        status: [],
      };
      const cpus: number[] = [];
      const rendered: number[] = [];
      const entriesRendered: number[] = [];
      const entriesReused: number[] = [];
      // The first build and WARM_UP builds of one changed route each (not measured: the code
      // paths of a change are compiled by then), then one changed route per build.
      for (let k = -WARM_UP - 1; k < changes; k++) {
        const c0 = cpu();
        let t = now();
        let c = c0;
        const ms: Partial<Record<Phase, number>> = {};
        const cpuMs: Partial<Record<Phase, number>> = {};
        const lap = (p: Phase) => {
          const n = now();
          const nc = cpu();
          ms[p] = n - t;
          cpuMs[p] = nc - c;
          t = n;
          c = nc;
        };
        if (k >= -WARM_UP) {
          // one route changed: route k*197 gets another hostname (its config and status change)
          const before = routes[
            (((k * 197) % routes.length) + routes.length) % routes.length
          ]! as KubeObject & {
            spec: object;
          };
          const changed = {
            ...before,
            spec: { ...before.spec, hostnames: [`changed${k}.${mode}.bench.local`] },
          } as KubeObject;
          snapshot = apply(snapshot, {
            type: "upsert",
            kind: "HTTPRoute",
            object: changed,
          }).snapshot;
        }
        lap("snapshot");
        const gateways =
          mode === "full"
            ? translate(snapshot, { controllerName: CONTROLLER_NAME })
            : translator.translate(snapshot, { controllerName: CONTROLLER_NAME }).result;
        lap("translate");
        const renders = sealedRenders();
        const fragments = fragmentCounts();
        for (const ir of gateways.gateways)
          if (mode === "full") sealGatewayConfig(ir, spec);
          else sealedFor(ir, spec);
        const n = mode === "full" ? gateways.gateways.length : sealedRenders() - renders;
        lap("render");
        const fragmentsAfter = fragmentCounts();
        stored.written(
          computeStatusUpdates({
            results: gateways.statuses,
            current: stored.current,
            controllerName: CONTROLLER_NAME,
            now: "2026-11-24T00:00:00Z",
            ...(memo && { memo, stored: stored.source() }),
          }),
        );
        lap("status");
        if (k < 0) continue;
        cpus.push(cpu() - c0);
        rendered.push(n);
        entriesRendered.push(fragmentsAfter.rendered - fragments.rendered);
        entriesReused.push(fragmentsAfter.reused - fragments.reused);
        for (const p of PHASES) {
          phases[p].push(ms[p]!);
          phaseCpus[p].push(cpuMs[p]!);
        }
      }
      out.push({
        ...layout,
        mode,
        phaseMs: Object.fromEntries(PHASES.map(p => [p, round(median(phases[p]))])) as Record<
          Phase,
          number
        >,
        phaseCpuMs: Object.fromEntries(PHASES.map(p => [p, round(median(phaseCpus[p]))])) as Record<
          Phase,
          number
        >,
        cpuMs: round(median(cpus)),
        rendered: median(rendered),
        entries: { rendered: median(entriesRendered), reused: median(entriesReused) },
        samples: changes,
      });
    }
  }
  return out;
}
