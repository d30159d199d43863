/**
 * A failure in one Gateway affects that Gateway alone: per-Gateway planning, one owner per
 * proxy pod, and translate()'s per-Gateway IR (an exception injected into one Gateway's
 * translation leaves the others translated).
 */
import fc from "fast-check";
import { KubeObject, snapshotOf } from "../snapshot";
import * as hostnames from "../translate/hostnames";
import { translate } from "../translate";
import { ClaimingPlan, claimProxies, each } from "./contain";

// one function translate() uses per Gateway, made injectable (the rest stays real)
jest.mock("../translate/hostnames", () => {
  const actual = jest.requireActual<typeof hostnames>("../translate/hostnames");
  return { ...actual, compareHostSpecificity: jest.fn(actual.compareHostSpecificity) };
});

const target = (pod: string) =>
  ({ endpoint: { name: `ns/${pod}` } }) as unknown as ClaimingPlan["targets"][number];
const plan = (key: string, pods: readonly string[]): ClaimingPlan => ({
  key,
  targets: pods.map(target),
  proxies: pods.map(p => ({ name: `ns/${p}`, pod: p, address: "10.0.0.1" })),
  configProblem: undefined,
});

describe("each", () => {
  it("fails exactly the items that throw, keeps every other result", () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { maxLength: 20 }), throws => {
        const out = each(
          throws.map((t, i) => ({ t, i })),
          x => `k${x.i}`,
          x => {
            if (x.t) throw new Error(`boom ${x.i}`);
            return x.i * 2;
          },
        );
        expect(out).toEqual(
          throws.map((t, i) =>
            t
              ? { ok: false, key: `k${i}`, error: `boom ${i}` }
              : { ok: true, key: `k${i}`, value: i * 2 },
          ),
        );
      }),
    );
  });
});

describe("claimProxies", () => {
  it("gives every pod to one Gateway, the oldest; the others are told which pod and who keeps it", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.uniqueArray(fc.constantFrom("a", "b", "c", "d", "e"), { maxLength: 4 }),
            fc.integer({ min: 0, max: 9 }),
          ),
          { minLength: 1, maxLength: 5 },
        ),
        specs => {
          const plans = specs.map(([pods], i) => plan(`ns/gw${i}`, pods));
          const age = new Map(specs.map(([, created], i) => [`ns/gw${i}`, `2026-01-0${created}`]));
          const out = claimProxies(plans, k => age.get(k)!);
          // every pod is targeted by at most one Gateway
          const owners = new Map<string, string[]>();
          for (const p of out)
            for (const t of p.targets)
              owners.set(t.endpoint.name, [...(owners.get(t.endpoint.name) ?? []), p.key]);
          for (const keys of owners.values()) expect(keys).toHaveLength(1);
          for (const [i, p] of out.entries()) {
            const before = plans[i]!;
            const lostPods = before.targets.filter(t => !p.targets.includes(t));
            if (lostPods.length === 0) {
              // untouched: same object, no problem added
              expect(p).toBe(before);
              continue;
            }
            for (const t of lostPods) {
              const keeper = owners.get(t.endpoint.name)![0]!;
              expect(p.configProblem).toContain(`${t.endpoint.name} (kept by Gateway ${keeper})`);
              // the keeper is older, or as old and first by name
              const [a, b] = [age.get(keeper)!, age.get(p.key)!];
              expect(a < b || (a === b && keeper < p.key)).toBe(true);
            }
            expect(p.proxies.map(x => x.name)).toEqual(p.targets.map(t => t.endpoint.name));
          }
          // every pod some Gateway selected is still served by one
          const all = new Set(plans.flatMap(p => p.targets.map(t => t.endpoint.name)));
          expect(new Set(owners.keys())).toEqual(all);
        },
      ),
    );
  });
});

describe("translate: one Gateway's failure", () => {
  const GW = "gateway.networking.k8s.io/v1";
  const gateway = (name: string, host: string): KubeObject =>
    ({
      apiVersion: GW,
      kind: "Gateway",
      metadata: { name, namespace: "default", generation: 1 },
      spec: {
        gatewayClassName: "kengine",
        listeners: [
          { name: "a", port: 80, protocol: "HTTP", hostname: `a.${host}` },
          { name: "b", port: 80, protocol: "HTTP", hostname: `b.${host}` },
        ],
      },
    }) as KubeObject;
  const snapshot = snapshotOf([
    {
      apiVersion: GW,
      kind: "GatewayClass",
      metadata: { name: "kengine", generation: 1 },
      spec: { controllerName: "kengine.io/gateway-controller" },
    } as KubeObject,
    gateway("broken", "boom.example"),
    gateway("fine", "ok.example"),
  ]);

  const real = jest.requireActual<typeof hostnames>("../translate/hostnames");
  afterEach(() =>
    jest.mocked(hostnames.compareHostSpecificity).mockImplementation(real.compareHostSpecificity),
  );

  it("is that Gateway's Programmed=False with the error; the other Gateway is translated", () => {
    jest.mocked(hostnames.compareHostSpecificity).mockImplementation((a, b) => {
      if (a?.endsWith("boom.example")) throw new Error("injected failure");
      return real.compareHostSpecificity(a, b);
    });
    const r = translate(snapshot, { controllerName: "kengine.io/gateway-controller" });
    expect(r.gateways.map(g => g.name)).toEqual(["fine"]);
    const status = (name: string) =>
      r.statuses.gateways.find(g => g.name === name)?.conditions.find(c => c.type === "Programmed");
    expect(status("broken")).toMatchObject({ status: "False", reason: "Invalid" });
    expect(status("broken")?.message).toContain("injected failure");
    expect(status("fine")?.message ?? "").not.toContain("injected failure");
  });
});
