/**
 * Ingress status.loadBalancer with a fake API and the manual clock: leader-only, bounded
 * passes at the configured rate, new Ingresses written as they arrive, all of them after an
 * address change, the static list winning, never cleared, an Ingress that left the class left
 * alone; and the fault case: leadership moves while the addresses change and every Ingress ends
 * with the new addresses.
 */
import type { V1Ingress } from "@kubernetes/client-node";
import type { GatewayAddress } from "../status";
import { IngressStatus, IngressStatusDeps } from "./ingress-status";
import { ManualClock } from "./testing/manual-clock";

/** The API server's Ingresses: each write bumps the resourceVersion, stale versions conflict. */
class FakeApi {
  readonly objects = new Map<string, V1Ingress>();
  readonly writes: { by: string; key: string; addresses: string }[] = [];
  #rv = 100;

  add(name: string): void {
    this.objects.set(`team/${name}`, {
      metadata: { namespace: "team", name, resourceVersion: String(this.#rv++) },
      spec: {},
    });
  }

  patcher(by: string): IngressStatusDeps["patch"] {
    return (namespace, name, rv, status) => {
      const key = `${namespace}/${name}`;
      const o = this.objects.get(key);
      if (!o) return Promise.reject(Object.assign(new Error("not found"), { status: 404 }));
      if (rv && rv !== o.metadata!.resourceVersion)
        return Promise.reject(Object.assign(new Error("conflict"), { status: 409 }));
      this.objects.set(key, {
        ...o,
        metadata: { ...o.metadata, resourceVersion: String(this.#rv++) },
        status: status as V1Ingress["status"],
      });
      this.writes.push({ by, key, addresses: JSON.stringify(status.loadBalancer.ingress) });
      return Promise.resolve();
    };
  }

  /** What a replica's snapshot holds once every event arrived. */
  input(addresses: readonly GatewayAddress[], only?: readonly string[]) {
    return {
      ingresses: [...this.objects.values()]
        .filter(i => !only || only.includes(i.metadata!.name!))
        .map(ingress => ({ ingress, gateway: "apps/edge" })),
      addresses: new Map([["apps/edge", addresses]]),
    };
  }

  shown(): string[] {
    return [...this.objects.values()].map(i =>
      JSON.stringify(i.status?.loadBalancer?.ingress ?? []),
    );
  }
}

const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise(r => setImmediate(r));
};
const X: GatewayAddress[] = [{ type: "IPAddress", value: "192.0.2.1" }];
const Y: GatewayAddress[] = [{ type: "Hostname", value: "lb.example.net" }];

function replica(
  api: FakeApi,
  clock: ManualClock,
  name: string,
  leading: { now: string },
  fixed?: string[],
) {
  return new IngressStatus({
    isLeader: () => leading.now === name,
    patch: api.patcher(name),
    clock,
    batch: 2,
    intervalMs: 1_000,
    staticAddresses: fixed,
  });
}

describe("Ingress status.loadBalancer", () => {
  it("writes every Ingress in bounded, rate-limited passes, only while leading", async () => {
    const api = new FakeApi();
    for (const n of ["a", "b", "c", "d", "e"]) api.add(n);
    const clock = new ManualClock();
    const leading = { now: "nobody" };
    const r = replica(api, clock, "r1", leading);
    r.update(api.input(X));
    clock.advance(5_000);
    await settle();
    expect(api.writes).toEqual([]); // a follower writes nothing
    leading.now = "r1";
    r.update(api.input(X));
    clock.advance(0);
    await settle();
    expect(api.writes.length).toBe(2);
    clock.advance(999);
    await settle();
    expect(api.writes.length).toBe(2); // at most one pass a second
    clock.advance(1);
    await settle();
    expect(api.writes.length).toBe(4);
    clock.advance(1_000);
    await settle();
    expect(api.writes.length).toBe(5);
    expect(new Set(api.shown())).toEqual(new Set(['[{"ip":"192.0.2.1"}]']));
    // Echoes of our writes change nothing: no more writes.
    r.update(api.input(X));
    clock.advance(10_000);
    await settle();
    expect(api.writes.length).toBe(5);
  });

  it("a new Ingress is written as it arrives; one that left the class is not touched", async () => {
    const api = new FakeApi();
    api.add("a");
    const clock = new ManualClock();
    const leading = { now: "r1" };
    const r = replica(api, clock, "r1", leading);
    r.update(api.input(X));
    clock.advance(0);
    await settle();
    api.add("new");
    api.add("gone");
    r.update(api.input(X, ["a", "new"]));
    clock.advance(1_000);
    await settle();
    expect(api.writes.map(w => w.key)).toEqual(["team/a", "team/new"]);
    r.update(api.input(Y, ["a", "new"]));
    clock.advance(5_000);
    await settle();
    expect(api.objects.get("team/gone")?.status).toBeUndefined();
  });

  it("the static list wins; no known address never clears", async () => {
    const api = new FakeApi();
    api.add("a");
    const clock = new ManualClock();
    const leading = { now: "r1" };
    const r = replica(api, clock, "r1", leading, ["203.0.113.9", "ingress.example.org"]);
    r.update(api.input(X));
    clock.advance(0);
    await settle();
    expect(api.shown()).toEqual(['[{"hostname":"ingress.example.org"},{"ip":"203.0.113.9"}]']);
    const plain = replica(api, clock, "r2", { now: "r2" });
    plain.update(api.input([]));
    clock.advance(5_000);
    await settle();
    expect(api.shown()).toEqual(['[{"hostname":"ingress.example.org"},{"ip":"203.0.113.9"}]']);
  });

  it("fault: leadership moves while the addresses change; every Ingress ends with the new ones", async () => {
    const api = new FakeApi();
    const names = ["a", "b", "c", "d", "e", "f", "g"];
    for (const n of names) api.add(n);
    const clock = new ManualClock();
    const leading = { now: "r1" };
    const r1 = replica(api, clock, "r1", leading);
    const r2 = replica(api, clock, "r2", leading);
    r1.update(api.input(X));
    r2.update(api.input(X));
    clock.advance(0);
    await settle();
    expect(api.writes.filter(w => w.by === "r1").length).toBe(2);
    // The addresses change; r1 has started its next pass when it loses the lease to r2.
    r1.update(api.input(Y));
    clock.advance(1_000);
    leading.now = "r2";
    await settle();
    r1.update(api.input(Y));
    r2.update(api.input(Y));
    for (let t = 0; t < 10; t++) {
      clock.advance(1_000);
      await settle();
      // each replica's snapshot catches up with the API server between passes
      r1.update(api.input(Y));
      r2.update(api.input(Y));
    }
    const y = JSON.stringify([{ hostname: "lb.example.net" }]);
    expect(api.shown()).toEqual(names.map(() => y));
    const afterLoss = api.writes.findIndex(w => w.by === "r2");
    expect(api.writes.slice(afterLoss).every(w => w.by === "r2")).toBe(true);
    // Leadership comes back while the addresses flip back: r1 must not trust its memory.
    leading.now = "r1";
    r2.update(api.input(X));
    r1.update(api.input(X));
    for (let t = 0; t < 10; t++) {
      clock.advance(1_000);
      await settle();
      r1.update(api.input(X));
    }
    expect(api.shown()).toEqual(names.map(() => JSON.stringify([{ ip: "192.0.2.1" }])));
  });
});
