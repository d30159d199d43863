/**
 * The build stage with a fake isolation: snapshot → translation → plans; an unchanged snapshot
 * is neither translated nor rendered again; every plan goes through the isolation gate; the
 * culprit search's config is the one the build would push.
 */
import { createAuthority, generateKeyPair } from "../pki/pki";
import { DEFAULT_PROXY_SETTINGS } from "../provision";
import { KubeObject, snapshotOf } from "../snapshot";
import type { RefusedObject } from "../translate";
import { BuildStage } from "./build-stage";
import type { GatedPlan } from "./isolation";

const now = new Date("2026-11-20T00:00:00Z");
const signing = (() => {
  const r = createAuthority({
    commonName: "controller CA",
    keys: generateKeyPair(),
    notBefore: now,
    lifetimeDays: 3650,
  });
  if (!r.ok) throw new Error(r.error);
  return r.value;
})();
const ca = { signing, trusted: [signing.certificatePem] };

const snapshot = snapshotOf([
  {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "GatewayClass",
    metadata: { name: "kengine" },
    spec: { controllerName: "kengine.io/gateway-controller" },
  },
  {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "Gateway",
    metadata: { namespace: "apps", name: "edge", uid: "g1" },
    spec: {
      gatewayClassName: "kengine",
      listeners: [{ name: "http", port: 80, protocol: "HTTP" }],
    },
  },
  {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      namespace: "apps",
      name: "edge-kengine-admin-x1",
      labels: { "kubernetes.io/service-name": "edge-kengine-admin" },
    },
    ports: [{ name: "admin", port: 19443 }],
    endpoints: [{ addresses: ["10.244.0.6"], targetRef: { kind: "Pod", name: "p-a", uid: "ua" } }],
  },
] as unknown as KubeObject[]);

function stage(refused: readonly RefusedObject[] = []) {
  const gated: string[] = [];
  const retained: string[][] = [];
  const isolation = {
    refused: () => refused,
    gate: <P extends GatedPlan>(plan: P): P => {
      gated.push(plan.key);
      return plan;
    },
    retain: (gateways: ReadonlySet<string>) => void retained.push([...gateways]),
  };
  const quiet = { warn() {}, error() {} };
  const builder = new BuildStage({
    defaults: DEFAULT_PROXY_SETTINGS,
    namespace: "kengine-system",
    log: quiet,
    isolation,
  });
  return { builder, gated, retained };
}

describe("build stage", () => {
  it("translates the snapshot and plans each Gateway, gated by isolation", () => {
    const { builder, gated, retained } = stage();
    let translated = 0;
    const out = builder.run({ snapshot, translate: true, ca, now, translated: () => translated++ });
    expect(translated).toBe(1);
    expect(out.counts.translated).toBe(1);
    expect(out.plans.map(p => p.key)).toEqual(["apps/edge"]);
    expect(out.plans[0]!.targets.map(t => t.endpoint.name)).toEqual(["apps/p-a"]);
    expect(out.planFailures.size).toBe(0);
    expect(out.statuses).toBeDefined();
    expect(gated).toEqual(["apps/edge"]);
    expect(retained).toEqual([["apps/edge"]]);
  });

  it("an unchanged snapshot is neither translated nor rendered again", () => {
    const { builder } = stage();
    const first = builder.run({ snapshot, translate: true, ca, now });
    const again = builder.run({ snapshot, translate: false, ca, now });
    expect(again.counts).toEqual({ translated: 0, reused: 0, rendered: 0 });
    expect(again.statuses).toBe(first.statuses);
    expect(again.plans[0]!.desiredHash).toBe(first.plans[0]!.desiredHash);
  });

  it("gives the culprit search the config the build pushes", () => {
    const { builder } = stage();
    const out = builder.run({ snapshot, translate: true, ca, now });
    const config = builder.configOf(snapshot, ca, "apps/edge", []);
    expect(config?.hash).toBe(out.plans[0]!.targets[0]!.config.hash);
    expect(config?.validates).toBe(true);
    expect(builder.configOf(snapshot, ca, "apps/missing", [])).toBeUndefined();
  });
});
