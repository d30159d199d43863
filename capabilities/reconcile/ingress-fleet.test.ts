/**
 * An IngressClass served by KengineParameters (docs/ingress.md, "A fleet of its own"): the
 * build plans proxies of the class's own, owned by the IngressClass, serving its Ingresses;
 * nothing a tenant writes can attach to that Gateway, however it copies the stage's labels;
 * neither the Gateway nor its class gets a status write.
 */
import { KubeObject, Snapshot, applyAll, snapshotOf } from "../snapshot";
import { fleetGatewayName } from "../ingress/fleet";
import { SOURCE_ANNOTATION, SYNTHETIC_LABEL } from "../ingress/convert";
import type { BuildStage } from "./build-stage";
import { testBuildStage as stage, testCa as ca, testNow as now } from "./testing/build";

const ingress = (name: string, ns = "team"): KubeObject =>
  ({
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: {
      namespace: ns,
      name,
      uid: `u-${name}`,
      generation: 1,
      creationTimestamp: "2026-11-01T00:00:00Z",
    },
    spec: {
      ingressClassName: "public",
      rules: [
        {
          host: `${name}.example.com`,
          http: {
            paths: [
              {
                path: "/",
                pathType: "Prefix",
                backend: { service: { name: "web", port: { number: 8080 } } },
              },
            ],
          },
        },
      ],
    },
  }) as unknown as KubeObject;

const FLEET = "infra/ingress-public";

const base = snapshotOf([
  {
    apiVersion: "gateway.kengine.io/v1alpha1",
    kind: "KengineParameters",
    metadata: { namespace: "infra", name: "edge-proxies" },
    spec: { proxy: { replicas: 3 } },
  },
  {
    apiVersion: "networking.k8s.io/v1",
    kind: "IngressClass",
    metadata: { name: "public", uid: "ic-1", creationTimestamp: "2026-10-01T00:00:00Z" },
    spec: {
      controller: "kengine.io/ingress-controller",
      parameters: {
        apiGroup: "gateway.kengine.io",
        kind: "KengineParameters",
        scope: "Namespace",
        namespace: "infra",
        name: "edge-proxies",
      },
    },
  },
  {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace: "team", name: "web" },
    spec: { ports: [{ port: 8080 }] },
  },
  {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      namespace: "infra",
      name: "ingress-public-kengine-admin-x1",
      labels: { "kubernetes.io/service-name": "ingress-public-kengine-admin" },
    },
    ports: [{ name: "admin", port: 19443 }],
    endpoints: [{ addresses: ["10.244.0.9"], targetRef: { kind: "Pod", name: "p-f", uid: "uf" } }],
  },
  ingress("shop"),
  ingress("blog", "other"),
] as unknown as KubeObject[]);

const upsert = (s: Snapshot, ...objects: KubeObject[]): Snapshot =>
  applyAll(
    s,
    objects.map(object => ({ type: "upsert", kind: object.kind as "Ingress", object }) as const),
  ).snapshot;

const fleetPlan = (out: ReturnType<BuildStage["run"]>) => out.plans.find(p => p.key === FLEET);
const configOf = (out: ReturnType<BuildStage["run"]>): string =>
  Buffer.from(fleetPlan(out)!.targets[0]!.config.bytes).toString();

/** A tenant's own HTTPRoute naming the fleet's Gateway, wearing the stage's label and annotation. */
const tenantRoute = {
  apiVersion: "gateway.networking.k8s.io/v1",
  kind: "HTTPRoute",
  metadata: {
    namespace: "team",
    name: "sneaky",
    generation: 1,
    labels: { [SYNTHETIC_LABEL]: "true" },
    annotations: { [SOURCE_ANNOTATION]: "team/shop" },
  },
  spec: {
    parentRefs: [{ name: "ingress-public", namespace: "infra" }],
    hostnames: ["admin.example.com"],
    rules: [{ backendRefs: [{ name: "web", port: 8080 }] }],
  },
} as unknown as KubeObject;

const tenantListenerSet = {
  apiVersion: "gateway.networking.k8s.io/v1",
  kind: "ListenerSet",
  metadata: { namespace: "team", name: "extra-port", generation: 1 },
  spec: {
    parentRef: { name: "ingress-public", namespace: "infra" },
    listeners: [{ name: "raw", port: 9000, protocol: "TCP" }],
  },
} as unknown as KubeObject;

describe("an IngressClass served by KengineParameters", () => {
  it("plans proxies of its own, owned by the IngressClass, serving every Ingress of the class", () => {
    const out = stage().run({ snapshot: base, translate: true, ca, now });
    const plan = fleetPlan(out);
    expect(plan).toBeDefined();
    expect(out.ingressTargets.get("team/shop")).toBe(FLEET);
    expect(out.ingressTargets.get("other/blog")).toBe(FLEET);
    expect(out.ingresses.get("team/shop")).toEqual([]);
    const config = configOf(out);
    expect(config).toContain("shop.example.com");
    expect(config).toContain("blog.example.com");
    const deployment = plan!.manifests.find(m => m.kind === "Deployment")!;
    expect(deployment.metadata.namespace).toBe("infra");
    expect(deployment.metadata.name).toBe("ingress-public-kengine");
    expect((deployment as unknown as { spec: { replicas?: number } }).spec.replicas).toBe(3);
    for (const m of plan!.manifests)
      expect(m.metadata.ownerReferences).toEqual([
        expect.objectContaining({ kind: "IngressClass", name: "public", uid: "ic-1" }),
      ]);
    // The class exists only in the build; the Gateway's result stays for its addresses (the
    // status stage writes nothing for an object the API does not have).
    expect(out.statuses.gatewayClasses.map(c => c.name)).toEqual([]);
    expect(out.statuses.gateways.map(g => `${g.namespace}/${g.name}`)).toContain(FLEET);
  });

  it("a class without Ingresses has its proxies already", () => {
    const empty = applyAll(
      base,
      [...base.objects.Ingress.values()].map(object => ({
        type: "delete",
        kind: "Ingress",
        object,
      })),
    ).snapshot;
    const out = stage().run({ snapshot: empty, translate: true, ca, now });
    expect(fleetPlan(out)?.manifests.some(m => m.kind === "Deployment")).toBe(true);
  });

  it("refuses a tenant's route and ListenerSet naming the fleet's Gateway, whatever labels they copy", () => {
    const out = stage().run({
      snapshot: upsert(base, tenantRoute, tenantListenerSet),
      translate: true,
      ca,
      now,
    });
    const route = out.statuses.routes.find(r => r.name === "sneaky");
    expect(route?.parents[0]?.conditions).toContainEqual(
      expect.objectContaining({
        type: "Accepted",
        status: "False",
        reason: "NotAllowedByListeners",
        message: "Gateway infra/ingress-public serves only the Ingresses of IngressClass public",
      }),
    );
    const ls = out.statuses.listenerSets.find(l => l.name === "extra-port");
    expect(ls?.conditions).toContainEqual(
      expect.objectContaining({ type: "Accepted", status: "False", reason: "NotAllowed" }),
    );
    const config = configOf(out);
    expect(config).not.toContain("admin.example.com");
    expect(config).not.toContain("9000");
    expect(config).toContain("shop.example.com");
    const service = fleetPlan(out)!.manifests.find(
      m => m.kind === "Service" && m.metadata.name === "ingress-public-kengine",
    ) as unknown as { spec: { ports: { port: number }[] } };
    expect(service.spec.ports.map(p => p.port)).toEqual([80]);
  });

  it("a real Gateway of the fleet's name is left alone; the class's Ingresses say why they are not served", () => {
    const real = {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "Gateway",
      metadata: { namespace: "infra", name: "ingress-public", uid: "real" },
      spec: { gatewayClassName: "someone-else", listeners: [] },
    } as unknown as KubeObject;
    const out = stage().run({ snapshot: upsert(base, real), translate: true, ca, now });
    expect(fleetPlan(out)).toBeUndefined();
    expect(out.ingresses.get("team/shop")?.[0]?.message).toContain(
      "a Gateway infra/ingress-public already exists",
    );
    expect(out.ingressTargets.has("team/shop")).toBe(false);
  });

  it("names the fleet's Gateway as a DNS label, keeping dotted class names apart", () => {
    expect(fleetGatewayName("public")).toBe("ingress-public");
    const dotted = fleetGatewayName("a.b");
    expect(dotted).toMatch(/^ingress-a-b-[0-9a-f]{8}$/);
    expect(fleetGatewayName("a-b")).not.toBe(dotted);
  });

  it("reports on the class what is wrong with its parameters", () => {
    expect(stage().run({ snapshot: base, translate: true, ca, now }).ingressClasses).toEqual(
      new Map([["public", ""]]),
    );
    const missing = applyAll(base, [
      {
        type: "delete",
        kind: "KengineParameters",
        object: base.objects.KengineParameters.get("infra/edge-proxies")!,
      },
    ]).snapshot;
    const out = stage().run({ snapshot: missing, translate: true, ca, now });
    expect(out.ingressClasses.get("public")).toBe(
      "spec.parameters: KengineParameters infra/edge-proxies not found: the class's proxies use the defaults",
    );
    // Served with the defaults all the same.
    expect(fleetPlan(out)).toBeDefined();
  });

  it("names the class's old fleet for deletion once the class moves to another namespace", () => {
    const leftover = {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        namespace: "old",
        name: "ingress-public-kengine",
        labels: {
          "gateway.networking.k8s.io/gateway-name": "ingress-public",
          "app.kubernetes.io/managed-by": "kengine-gateway",
        },
        ownerReferences: [
          { apiVersion: "networking.k8s.io/v1", kind: "IngressClass", name: "public", uid: "ic-1" },
        ],
      },
      spec: {},
    } as unknown as KubeObject;
    const out = stage().run({ snapshot: upsert(base, leftover), translate: true, ca, now });
    expect(out.retiredFleets.map(r => r.key)).toEqual(["old/ingress-public"]);
    expect(stage().run({ snapshot: base, translate: true, ca, now }).retiredFleets).toEqual([]);
  });
});
