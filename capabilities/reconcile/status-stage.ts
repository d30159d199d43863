/**
 * The build's status stage: the translator's results with Programmed and addresses decided by
 * the fleet (status/programmed.ts), handed to the status queue (status-queue.ts) as two jobs:
 * the KengineProxy objects, and every Gateway API object's status computed (status/compute.ts)
 * against the freshest copy of each object when the job runs.
 */
import { statusMetrics } from "../metrics";
import { fleetMetrics } from "../metrics/fleet";
import { CONTROLLER_NAME } from "../ownership";
import type { Snapshot } from "../snapshot";
import type { KubeClient } from "../kube/client";
import {
  BUNDLE_VERSION_ANNOTATION,
  GatewayAddress,
  PARENT_STATUS_INTERVAL_MS,
  StatusApi,
  StatusKind,
  StatusMemo,
  StatusWriter,
  WriteReport,
  computeStatusUpdates,
  failedWritesSummary,
} from "../status";
import { FleetResults, FleetView, PlannedGateway, fleetResults } from "../status/programmed";
import type { Condition, StatusResults } from "../translate";
import type { Logger } from "./logger";
import type { GatewayPlan } from "./plan";
import type { FleetState } from "./push-stage";
import type { KengineProxyWrites, StatusQueue } from "./status-queue";

export interface StatusStageDeps {
  readonly api: StatusApi;
  readonly isLeader: () => boolean;
  readonly log: Logger;
  /** Status and KengineProxy writes run here, off the build path. */
  readonly queue: Pick<StatusQueue, "offer">;
  readonly proxyWrites: Pick<KengineProxyWrites, "write">;
}

export interface StatusInput {
  readonly plans: readonly GatewayPlan[];
  /** The translator's results (build-stage.ts). */
  readonly statuses: StatusResults;
  /** Why a Gateway could not be planned, by `namespace/name`. */
  readonly planFailures: ReadonlyMap<string, string>;
  /** The snapshot the plans were made from. */
  readonly snapshot: Snapshot;
  /** Each proxy's state as the fleet knows it. */
  readonly fleet: FleetState;
  /** The installed Gateway API CRDs' bundle-version (undefined: could not be read). */
  readonly bundleVersion: string | undefined;
  /** Kinds the API server does not serve. */
  readonly missingKinds: readonly string[];
  readonly now: Date;
}

export class StatusStage {
  /** Writes the status updates, rate-limited per parent object (status/writer.ts). */
  readonly writer: StatusWriter;
  /** Objects whose status was found in place, skipped while they and their result stay the same. */
  readonly #memo = new StatusMemo();
  /** The last build's results: a conflicting write is computed again from them. */
  #last: FleetResults | undefined;

  constructor(private readonly d: StatusStageDeps) {
    this.writer = new StatusWriter({
      api: d.api,
      isLeader: d.isLeader,
      observer: statusMetrics,
      // 32 writes in flight: 1,000 new routes settle in ~1.4 s here (8: 4.8-6.0 s).
      concurrency: 32,
      // A burst of route changes rewrites each Gateway (attachedRoutes) at most every 250 ms.
      minIntervalMs: kind =>
        kind === "Gateway" || kind === "ListenerSet" || kind === "GatewayClass"
          ? PARENT_STATUS_INTERVAL_MS
          : 0,
      onDeferredReport: r => this.#report(r),
      recompute: (fresh, stale) => {
        const last = this.#last;
        if (!last) return undefined;
        return computeStatusUpdates({
          results: last.results,
          current: (k, ns, n) =>
            k === stale.kind && ns === stale.namespace && n === stale.name ? fresh : undefined,
          controllerName: CONTROLLER_NAME,
          addresses: last.addresses,
          now: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
        })[0];
      },
    });
  }

  /** Decides the status of the build and queues its writes; returns what it decided. */
  run(input: StatusInput): FleetResults {
    const { plans, snapshot, fleet, now } = input;
    const { results, addresses } = (this.#last = fleetResults({
      statuses: input.statuses,
      bundleVersion: input.bundleVersion,
      missingKinds: input.missingKinds,
      planned: new Map(plans.map(p => [p.key, planned(p, snapshot, fleet)])),
      planFailures: input.planFailures,
      parentOf: ls => {
        const p = snapshot.objects.ListenerSet.get(`${ls.namespace}/${ls.name}`)?.spec?.parentRef;
        return p && `${p.namespace ?? ls.namespace}/${p.name}`;
      },
    }));
    fleetMetrics.gateways(
      plans.map(p => ({
        gateway: p.key,
        configBytes: p.configBytes,
        phases: p.targets.flatMap(t => {
          const s = fleet.state(t.endpoint.name);
          return s ? [s.phase] : [];
        }),
      })),
    );
    this.d.queue.offer("proxies", () => this.d.proxyWrites.write(plans, now));
    this.d.queue.offer(
      "objects",
      objectStatusJob({
        results,
        addresses,
        snapshot,
        now,
        writer: this.writer,
        memo: this.#memo,
        report: r => this.#report(r),
      }),
    );
    return { results, addresses };
  }

  close(): void {
    this.writer.close();
  }

  #report(report: WriteReport): void {
    if (report.failed.length) {
      this.d.log.warn("status writes failed", failedWritesSummary(report.failed));
    }
    if (report.written || report.conflicts)
      this.d.log.debug("status written", { written: report.written, conflicts: report.conflicts });
  }
}

/** A plan as its Gateway's status sees it: its proxies' states and the stored Programmed. */
export function planned(plan: GatewayPlan, snapshot: Snapshot, fleet: FleetState): PlannedGateway {
  const proxies = plan.targets.flatMap(t => {
    const state = fleet.state(t.endpoint.name);
    // the pod's name (the Gateway's namespace goes without saying)
    return state ? [{ ...state, name: t.endpoint.name.split("/").pop() }] : [];
  });
  const stored = (
    snapshot.objects.Gateway.get(plan.key) as { status?: { conditions?: Condition[] } } | undefined
  )?.status?.conditions?.find(c => c.type === "Programmed");
  const view: FleetView = {
    proxies,
    desiredHash: plan.desiredHash,
    configProblem: plan.configProblem,
    serviceExists: plan.serviceExists,
    noServiceMessage: plan.noServiceMessage,
    addressProblem: plan.addressProblem,
    addressAssignment: plan.addressAssignment,
    stored,
  };
  return { view, addresses: plan.addresses };
}

export interface ObjectStatusInput {
  readonly results: StatusResults;
  readonly addresses: ReadonlyMap<string, readonly GatewayAddress[]>;
  /** The snapshot the results were made from. */
  readonly snapshot: Snapshot;
  readonly now: Date;
  readonly writer: Pick<StatusWriter, "freshest" | "version" | "writtenSince" | "write">;
  /** Objects whose status was found in place, skipped while they and their result stay the same. */
  readonly memo: StatusMemo;
  readonly report: (report: WriteReport) => void;
}

/** The job that writes the build's status (read against the writer when it runs, not now). */
export const objectStatusJob = (input: ObjectStatusInput) => async (): Promise<void> => {
  const { snapshot, writer } = input;
  const stored = (kind: StatusKind, ns: string | undefined, name: string) =>
    writer.freshest(kind, ns, name, snapshot.objects[kind].get(ns ? `${ns}/${name}` : name));
  const updates = computeStatusUpdates({
    results: input.results,
    current: stored,
    controllerName: CONTROLLER_NAME,
    addresses: input.addresses,
    now: input.now.toISOString().replace(/\.\d{3}Z$/, "Z"),
    onUnchanged: kind => statusMetrics.unchanged(kind, 1),
    memo: input.memo,
    // What `stored` reads: unchanged routes found in place are skipped unread.
    stored: {
      routes: {
        HTTPRoute: snapshot.objects.HTTPRoute,
        GRPCRoute: snapshot.objects.GRPCRoute,
        TLSRoute: snapshot.objects.TLSRoute,
        TCPRoute: snapshot.objects.TCPRoute,
        UDPRoute: snapshot.objects.UDPRoute,
      },
      version: writer.version,
      writtenSince: v => writer.writtenSince(v),
    },
  });
  // Always handed over, even empty: pending rate-limited updates no longer wanted are dropped.
  input.report(await writer.write(updates));
};

/** The installed Gateway API CRDs' bundle-version ("" when unset; undefined: could not be read). */
export const readBundleVersion = (
  kube: Pick<KubeClient, "request">,
  log: Pick<Logger, "debug">,
): Promise<string | undefined> =>
  kube
    .request<{ metadata: { annotations?: Record<string, string> } }>(
      "GET",
      "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gateways.gateway.networking.k8s.io",
    )
    .then(crd => crd.metadata.annotations?.[BUNDLE_VERSION_ANNOTATION] ?? "")
    .catch(e => {
      log.debug("cannot read the Gateway CRD's bundle-version", { error: String(e) });
      return undefined;
    });
