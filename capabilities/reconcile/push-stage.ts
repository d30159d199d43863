/**
 * The push stage: the plans' configs handed to the fleet, which pushes each proxy's new config
 * at once (its own queue per proxy, latest config wins), before and without waiting for
 * provisioning or status writes. It keeps which Gateway each proxy serves, so the fleet's
 * events (`observe`) become metrics, Events on the Gateway, culprit searches and new builds.
 */
import { fleetMetrics } from "../metrics/fleet";
import type { Fleet, FleetEvent, ProxyEndpoint, Target } from "../proxies";
import type { Snapshot } from "../snapshot";
import type { BuildTimings } from "./build-timings";
import { EventRecorder, GatewayObjectRef, PushEvents } from "./events";
import type { Isolation } from "./isolation";
import { lastGoodCurrent } from "./last-good";
import type { LastGoodWriter } from "./last-good-writer";
import type { Logger } from "./logger";
import type { GatewayPlan } from "./plan";

/** What the stage reads of the fleet. */
export type FleetState = Pick<Fleet, "state">;

export interface PushStageDeps {
  readonly log: Logger;
  /** Stores each Gateway's last accepted config, off the build path (last-good-writer.ts). */
  readonly lastGood: Pick<LastGoodWriter, "observe" | "accepted">;
  readonly timings: Pick<BuildTimings, "sent" | "acknowledged">;
  readonly isolation: Pick<Isolation, "observe">;
  readonly events: Pick<EventRecorder, "record">;
  /** Every push-engine event, first (metrics, tests). */
  readonly onFleetEvent?: (event: FleetEvent) => void;
  /** A proxy's state changed: Programmed status follows what proxies run. */
  readonly notify: () => void;
}

export interface PushInput {
  readonly plans: readonly GatewayPlan[];
  readonly snapshot: Snapshot;
  readonly fleet: Pick<Fleet, "update" | "state">;
  /** When the first change this build follows was received (build-timings.ts). */
  readonly receivedAt: number | undefined;
}

/** A proxy whose traffic is read, and its Gateway ("namespace/name"). */
export interface TrafficTarget {
  readonly gateway: string;
  readonly target: Target;
}

export interface PushOutput {
  /** Proxies sent a new config. */
  readonly pushed: number;
  /** Every proxy pushed to, with its Gateway (traffic.ts reads their /metrics). */
  readonly traffic: readonly TrafficTarget[];
}

export class PushStage {
  /** Push failures and recoveries as Events on the Gateway (deduplicated). */
  readonly #pushEvents = new PushEvents();
  /** The Gateway of each proxy ("namespace/pod") the fleet pushes to. */
  #proxyGateway = new Map<string, GatewayObjectRef>();
  /** The endpoint of each proxy the fleet pushes to (culprit searches validate there). */
  #fleetTargets = new Map<string, ProxyEndpoint>();

  constructor(private readonly d: PushStageDeps) {}

  push(input: PushInput): PushOutput {
    const { plans, snapshot, fleet } = input;
    this.d.lastGood.observe(plans.flatMap(p => (p.lastGood ? [p.lastGood] : [])));
    const proxyGateway = new Map(
      plans.flatMap(p => {
        const [namespace, name] = p.key.split("/") as [string, string];
        const uid = snapshot.objects.Gateway.get(p.key)?.metadata.uid;
        return p.targets.map(t => [t.endpoint.name, { namespace, name, uid }] as const);
      }),
    );
    // proxies forgotten by this update still need their Gateway (metrics, events)
    this.#proxyGateway = new Map([...this.#proxyGateway, ...proxyGateway]);
    const targets = plans.flatMap(p => p.targets);
    fleet.update(targets);
    const pushed = this.d.timings.sent(
      targets.map(t => ({ name: t.endpoint.name, hash: t.config.hash })),
      input.receivedAt,
    );
    // A config some proxy of the Gateway runs (pushed, or found running) is the last known good
    // one; the writer stores it off the build path (a build follows every push result).
    for (const p of plans) {
      const config = p.lastGood?.config;
      if (
        config &&
        p.targets.some(t => {
          const s = fleet.state(t.endpoint.name);
          return s?.phase === "Programmed" && s.hash === config.hash;
        })
      )
        this.d.lastGood.accepted(p.key, p.lastGood!.key, config);
    }
    this.#fleetTargets = new Map(targets.map(t => [t.endpoint.name, t.endpoint] as const));
    this.#proxyGateway = proxyGateway;
    return {
      pushed,
      traffic: plans.flatMap(p => p.targets.map(target => ({ gateway: p.key, target }))),
    };
  }

  /** A push-engine event: metrics, the Gateway's Events (leader only), a log line, a build. */
  observe(e: FleetEvent, leader: boolean): void {
    this.d.onFleetEvent?.(e);
    const event = this.#pushEvents.observe(e);
    const gateway = this.#proxyGateway.get(e.name);
    if (leader)
      this.d.isolation.observe(
        e,
        gateway && `${gateway.namespace}/${gateway.name}`,
        this.#fleetTargets.get(e.name),
      );
    if (gateway) {
      const gw = `${gateway.namespace}/${gateway.name}`;
      const pod = e.name.slice(e.name.indexOf("/") + 1);
      if (e.type === "pushed")
        fleetMetrics.push(gw, pod, "success", e.durationMs / 1000, e.kind ?? "load");
      else if (e.type === "failed") fleetMetrics.push(gw, pod, e.error.kind);
      else if (e.type === "forgotten") fleetMetrics.forgetProxy(gw, pod);
    }
    if (event && gateway && leader) this.d.events.record(gateway, event);
    if (e.type === "pushed") this.d.timings.acknowledged(e.name, e.hash);
    if (e.type === "skipped" || e.type === "withheld") return;
    const level = e.type === "failed" ? "warn" : "debug";
    const { type, name } = e;
    this.d.log[level]("proxy " + type, {
      proxy: name,
      ...(e.type === "failed"
        ? { error: e.error.message, attempts: e.attempts, retryInMs: e.retryInMs }
        : {}),
      ...(e.type === "pushed"
        ? { hash: e.hash.slice(0, 12), ms: e.durationMs, kind: e.kind ?? "load" }
        : {}),
    });
    // Programmed status follows what proxies run.
    if (e.type !== "forgotten") this.d.notify();
  }
}

/**
 * Whether every managed proxy runs its Gateway's config made under the current admin CA, and
 * how many managed proxies there are (the CA's rotation steps on: pki/admin-ca.ts).
 */
export function managedFleetCurrent(
  plans: readonly GatewayPlan[],
  fleet: FleetState,
): { readonly current: boolean; readonly proxies: number } {
  const managed = plans.filter(p => !p.channel);
  const current = managed.every(
    p =>
      p.desiredHash !== undefined &&
      p.targets.every(t => {
        const s = fleet.state(t.endpoint.name);
        return s?.phase === "Programmed" && s.hash === p.desiredHash;
      }) &&
      // a pod (re)starting from the last-good Secret must trust the CA of this step too
      (p.targets.length === 0 || lastGoodCurrent(p.desiredHash, p.lastGood?.stored)),
  );
  return { current, proxies: managed.reduce((n, p) => n + p.targets.length, 0) };
}
