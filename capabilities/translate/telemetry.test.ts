import fc from "fast-check";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseSnapshotYAML } from "../../hack/translate";
import { KubeObject, snapshotOf } from "../snapshot";
import { translate } from "./translate";

const golden = (): KubeObject[] =>
  parseSnapshotYAML(readFileSync(join(__dirname, "../../tests/golden/telemetry.in.yaml"), "utf8"));

const isPolicy = (o: KubeObject) => o.kind === "XTelemetryPolicy";
const accepted = (objects: KubeObject[], name: string, gateway: string) =>
  translate(snapshotOf(objects))
    .statuses.telemetryPolicies?.find(p => p.name === name)
    ?.ancestors.find(a => a.ancestorRef.name === gateway)
    ?.conditions.find(c => c.type === "Accepted");

describe("XTelemetryPolicy translation", () => {
  it("of the policies on one Gateway, the oldest (then by name) wins, whatever their order", () => {
    const base = golden().filter(o => !isPolicy(o));
    const enabled = (name: string, ts: string): KubeObject =>
      ({
        apiVersion: "gateway.networking.x-k8s.io/v1alpha1",
        kind: "XTelemetryPolicy",
        metadata: { name, namespace: "default", generation: 1, creationTimestamp: ts },
        spec: {
          targetRefs: [{ group: "gateway.networking.k8s.io", kind: "Gateway", name: "gw" }],
          tracing: {
            mode: "Enabled",
            spanName: name,
            provider: { backendRef: { name: "collector" } },
          },
        },
      }) as KubeObject;
    const entry = fc.record({
      name: fc.stringMatching(/^[a-z]{1,6}$/),
      day: fc.integer({ min: 1, max: 3 }),
    });
    fc.assert(
      fc.property(
        fc.uniqueArray(entry, { minLength: 1, maxLength: 5, selector: e => e.name }),
        es => {
          const policies = es.map(e => enabled(e.name, `2026-11-0${e.day}T00:00:00Z`));
          const winner = [...es].sort((a, b) => a.day - b.day || (a.name < b.name ? -1 : 1))[0];
          const result = translate(snapshotOf([...base, ...policies]));
          const gw = result.gateways.find(g => g.name === "gw");
          expect(gw?.tracing).toEqual({ spanName: winner.name, attributes: [] });
          for (const e of es) {
            const c = accepted([...base, ...policies], e.name, "gw");
            expect(c?.reason).toBe(e.name === winner.name ? "Accepted" : "Conflicted");
          }
        },
      ),
      { numRuns: 25 },
    );
  });

  it("golden: tracing only where a valid, runnable policy is accepted", () => {
    const r = translate(snapshotOf(golden()));
    const tracing = Object.fromEntries(r.gateways.map(g => [g.name, g.tracing]));
    expect(tracing.gw?.attributes.map(a => a.name)).toEqual([
      "deployment.environment",
      "user.id",
      "method",
    ]);
    expect(tracing.sampled).toBeUndefined();
    expect(tracing.old).toBeUndefined();
    expect(accepted(golden(), "five-percent", "sampled")?.reason).toBe("Invalid");
    expect(accepted(golden(), "old-proxy", "old")?.reason).toBe("Invalid");
    expect(accepted(golden(), "old-proxy", "nowhere")?.reason).toBe("TargetNotFound");
  });

  it("a collector in another namespace needs a ReferenceGrant; a missing one is BackendNotFound", () => {
    const moved = golden().map(o =>
      isPolicy(o) && o.metadata.name === "tracing"
        ? ({
            ...o,
            spec: {
              ...(o as unknown as { spec: object }).spec,
              tracing: {
                mode: "Enabled",
                provider: { backendRef: { name: "collector", namespace: "obs" } },
              },
            },
          } as KubeObject)
        : o,
    );
    const resolved = (objects: KubeObject[]) =>
      translate(snapshotOf(objects))
        .statuses.telemetryPolicies?.find(p => p.name === "tracing")
        ?.ancestors[0].conditions.find(c => c.type === "ResolvedRefs")?.reason;
    expect(resolved(moved)).toBe("RefNotPermitted");
    const grant = {
      apiVersion: "gateway.networking.k8s.io/v1beta1",
      kind: "ReferenceGrant",
      metadata: { name: "g", namespace: "obs" },
      spec: {
        from: [
          { group: "gateway.networking.x-k8s.io", kind: "XTelemetryPolicy", namespace: "default" },
        ],
        to: [{ group: "", kind: "Service" }],
      },
    } as KubeObject;
    expect(resolved([...moved, grant])).toBe("BackendNotFound");
    const gw = (objects: KubeObject[]) =>
      translate(snapshotOf(objects)).gateways.find(g => g.name === "gw");
    expect(gw([...moved, grant])?.tracing).toBeUndefined();
    const svc = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "collector", namespace: "obs" },
      spec: { ports: [{ port: 4318 }] },
    } as KubeObject;
    expect(resolved([...moved, grant, svc])).toBe("ResolvedRefs");
    expect(gw([...moved, grant, svc])?.tracing).toEqual({ attributes: [] });
  });
});
