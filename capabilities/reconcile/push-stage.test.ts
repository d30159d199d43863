/**
 * The push stage with a fake fleet, last-good writer, timings, isolation and Event recorder:
 * plans → the fleet's targets; a config a proxy runs becomes the last known good; the fleet's
 * events are told apart by the Gateway they concern and the replica's leadership.
 */
import type { FleetEvent, ProxyState, Target } from "../proxies";
import { KubeObject, snapshotOf } from "../snapshot";
import type { GatewayPlan } from "./plan";
import { PushStage, managedFleetCurrent } from "./push-stage";

const target = (pod: string, hash: string): Target =>
  ({
    endpoint: { name: `apps/${pod}`, address: "10.0.0.1", port: 19443, serverName: pod },
    config: { hash, bytes: Buffer.from("{}") },
  }) as unknown as Target;

const plan = (name: string, targets: Target[], extra: Partial<GatewayPlan> = {}): GatewayPlan =>
  ({
    key: `apps/${name}`,
    targets,
    desiredHash: targets[0]?.config.hash,
    lastGood: {
      key: "k1",
      config: targets[0]?.config,
      ref: { namespace: "apps", name },
      stored: undefined,
    },
    ...extra,
  }) as unknown as GatewayPlan;

const snapshot = snapshotOf([
  {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "Gateway",
    metadata: { namespace: "apps", name: "edge", uid: "g1" },
    spec: { gatewayClassName: "kengine", listeners: [] },
  },
] as unknown as KubeObject[]);

function setup() {
  const calls = {
    updated: [] as string[][],
    observed: 0,
    accepted: [] as string[],
    recorded: [] as string[],
    isolation: [] as (string | undefined)[],
    acknowledged: [] as string[],
    notified: 0,
  };
  const states = new Map<string, ProxyState>();
  const fleet = {
    update: (targets: readonly Target[]) =>
      void calls.updated.push(targets.map(t => t.endpoint.name)),
    state: (name: string) => states.get(name),
  };
  const stage = new PushStage({
    log: { info() {}, warn() {}, error() {}, debug() {} },
    lastGood: {
      observe: () => void calls.observed++,
      accepted: (gateway, _key, config) => void calls.accepted.push(`${gateway}@${config.hash}`),
    },
    timings: {
      sent: targets => targets.length,
      acknowledged: (proxy, hash) => void calls.acknowledged.push(`${proxy}@${hash}`),
    },
    isolation: { observe: (_e, gateway) => void calls.isolation.push(gateway) },
    events: { record: (gw, e) => void calls.recorded.push(`${gw.name}:${e.reason}`) },
    notify: () => void calls.notified++,
  });
  return { stage, fleet, states, calls };
}

describe("push stage", () => {
  it("hands every plan's targets to the fleet and names each proxy's Gateway", () => {
    const { stage, fleet, calls } = setup();
    const out = stage.push({
      plans: [plan("edge", [target("p-a", "h1"), target("p-b", "h1")]), plan("other", [])],
      snapshot,
      fleet,
      receivedAt: undefined,
    });
    expect(calls.updated).toEqual([["apps/p-a", "apps/p-b"]]);
    expect(calls.observed).toBe(1);
    expect(out.pushed).toBe(2);
    expect(out.traffic.map(t => `${t.gateway} ${t.target.endpoint.name}`)).toEqual([
      "apps/edge apps/p-a",
      "apps/edge apps/p-b",
    ]);
    // nothing runs the config yet: not the last known good
    expect(calls.accepted).toEqual([]);
  });

  it("a config some proxy runs is the Gateway's last known good", () => {
    const { stage, fleet, states, calls } = setup();
    states.set("apps/p-b", { phase: "Programmed", hash: "h1" } as ProxyState);
    stage.push({
      plans: [plan("edge", [target("p-a", "h1"), target("p-b", "h1")])],
      snapshot,
      fleet,
      receivedAt: undefined,
    });
    expect(calls.accepted).toEqual(["apps/edge@h1"]);
  });

  it("fleet events: the Gateway's Events and culprit searches on the leader only", () => {
    const { stage, fleet, calls } = setup();
    stage.push({ plans: [plan("edge", [target("p-a", "h1")])], snapshot, fleet, receivedAt: 0 });
    const failed: FleetEvent = {
      type: "failed",
      name: "apps/p-a",
      hash: "h1",
      error: { kind: "rejected", status: 400, message: "bad" },
      attempts: 1,
      retryInMs: 100,
    };
    stage.observe(failed, false);
    expect(calls.isolation).toEqual([]);
    expect(calls.recorded).toEqual([]);
    stage.observe({ ...failed, error: { kind: "rejected", status: 400, message: "worse" } }, true);
    expect(calls.isolation).toEqual(["apps/edge"]);
    expect(calls.recorded).toEqual(["edge:PushFailed"]);
    stage.observe({ type: "pushed", name: "apps/p-a", hash: "h2", durationMs: 5 }, true);
    expect(calls.recorded).toEqual(["edge:PushFailed", "edge:PushRecovered"]);
    expect(calls.acknowledged).toEqual(["apps/p-a@h2"]);
    expect(calls.notified).toBe(3);
    // a proxy of no Gateway: no Event
    stage.observe({ type: "forgotten", name: "apps/stray" }, true);
    expect(calls.notified).toBe(3);
    expect(calls.isolation).toEqual(["apps/edge", "apps/edge", undefined]);
  });

  it("the admin CA steps on once every managed proxy runs the current config", () => {
    const states = new Map<string, ProxyState>();
    const fleet = { state: (n: string) => states.get(n) };
    const stored = { hash: "h1" };
    const plans = [
      plan("edge", [target("p-a", "h1")], {
        lastGood: { stored } as unknown as GatewayPlan["lastGood"],
      }),
      plan("byo", [target("p-x", "h9")], { channel: {} as GatewayPlan["channel"] }),
    ];
    expect(managedFleetCurrent(plans, fleet)).toEqual({ current: false, proxies: 1 });
    states.set("apps/p-a", { phase: "Programmed", hash: "h1" } as ProxyState);
    expect(managedFleetCurrent(plans, fleet)).toEqual({ current: true, proxies: 1 });
  });
});
