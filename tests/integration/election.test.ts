/**
 * Leader election against the real API server: one leader at a time, hand-over on release,
 * and a partitioned leader stops leading before anyone else starts.
 */
import {
  ElectionConfig,
  LeaderElector,
  LeaseStore,
  kubeLeaseStore,
} from "../../capabilities/election";
import { createNamespace, deleteNamespace, eventually, kubectlOk } from "../support/kube";

const timing = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 250 };

/** A real store behind a switch that cuts this replica off from the API server. */
function partitionable(store: LeaseStore) {
  let cut = false;
  const guard = <T>(f: () => Promise<T>) => (cut ? Promise.reject(new Error("partitioned")) : f());
  return {
    cut: () => (cut = true),
    store: {
      get: () => guard(() => store.get()),
      create: r => guard(() => store.create(r)),
      update: (r, rv) => guard(() => store.update(r, rv)),
    } as LeaseStore,
  };
}

describe("leader election on a Lease", () => {
  let ns: string;
  const log: string[] = [];
  const electors: LeaderElector[] = [];

  const elector = (identity: string, leaseName: string, store?: LeaseStore) => {
    const cfg: ElectionConfig = { namespace: ns, name: leaseName, identity, ...timing };
    const e = new LeaderElector(store ?? kubeLeaseStore(ns, leaseName), cfg, {
      onStartedLeading: () => log.push(`${leaseName}:${identity}:start`),
      onStoppedLeading: () => log.push(`${leaseName}:${identity}:stop`),
    });
    electors.push(e);
    return e;
  };

  beforeAll(() => {
    ns = createNamespace("election");
  });
  afterAll(async () => {
    await Promise.all(electors.map(e => e.stop()));
    deleteNamespace(ns);
  });

  it("elects exactly one of two replicas that start together", async () => {
    const a = elector("a", "race");
    const b = elector("b", "race");
    a.start();
    b.start();
    await eventually("a leader", () => (a.isLeader() || b.isLeader() ? true : undefined));
    expect([a.isLeader(), b.isLeader()].filter(Boolean)).toHaveLength(1);
    const holder = kubectlOk([
      "get",
      "lease",
      "race",
      "-n",
      ns,
      "-o",
      "jsonpath={.spec.holderIdentity}",
    ]);
    expect(holder).toBe(a.isLeader() ? "a" : "b");
    const follower = a.isLeader() ? b : a;
    await eventually("the follower to see the leader", () => follower.leader() ?? undefined);
    expect(follower.leader()).toBe(holder);
  });

  it("a replica started after its leader died takes the Lease on its first look, by renewTime", async () => {
    // What a killed leader leaves: a Lease renewed 60 s ago for 30 s, never released.
    const renewed = new Date(Date.now() - 60_000).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
    kubectlOk(
      ["apply", "-f", "-"],
      `apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: dead, namespace: ${ns}}
spec: {holderIdentity: gone, leaseDurationSeconds: 30, acquireTime: "${renewed}", renewTime: "${renewed}", leaseTransitions: 2}
`,
    );
    const fresh = elector("fresh", "dead");
    // One attempt, no waiting: judged by its own first look it would follow "gone" for 30 s.
    expect(await fresh.tryAcquireOrRenew()).toBe(true);
    expect(
      kubectlOk([
        "get",
        "lease",
        "dead",
        "-n",
        ns,
        "-o",
        "jsonpath={.spec.holderIdentity} {.spec.leaseTransitions}",
      ]),
    ).toBe("fresh 3");
  });

  it("hands over when the leader releases on shutdown", async () => {
    const a = elector("a", "handover");
    a.start();
    await eventually("a to lead", () => (a.isLeader() ? true : undefined));
    const b = elector("b", "handover");
    b.start();
    await eventually("b to follow a", () => (b.leader() === "a" ? true : undefined));
    await a.stop();
    expect(a.isLeader()).toBe(false);
    await eventually("b to lead", () => (b.isLeader() ? true : undefined));
    expect(
      kubectlOk([
        "get",
        "lease",
        "handover",
        "-n",
        ns,
        "-o",
        "jsonpath={.spec.holderIdentity}/{.spec.leaseTransitions}",
      ]),
    ).toBe("b/1");
  });

  it("a partitioned leader stops leading before another replica starts", async () => {
    const p = partitionable(kubeLeaseStore(ns, "partition"));
    const a = elector("a", "partition", p.store);
    a.start();
    await eventually("a to lead", () => (a.isLeader() ? true : undefined));
    const b = elector("b", "partition");
    b.start();
    await eventually("b to follow a", () => (b.leader() === "a" ? true : undefined));
    p.cut();
    await eventually("b to lead", () => (b.isLeader() ? true : undefined), 20_000);
    const events = log.filter(l => l.startsWith("partition:"));
    expect(events).toContain("partition:a:stop");
    expect(events.indexOf("partition:a:stop")).toBeLessThan(events.indexOf("partition:b:start"));
    expect(a.isLeader()).toBe(false);
  });
});
