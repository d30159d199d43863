/**
 * An Ingress's auth-url through the build stage into the Caddy config: the authorization
 * Service resolved like a backend (another namespace needs a ReferenceGrant), the handler first
 * in every route of the Ingress in mode ingress-nginx; a Service that does not resolve leaves
 * the handler with no endpoint (every request 500, never let through) and is reported on the
 * Ingress; a tenant HTTPRoute cannot carry the rule field (it is read only from the stage's
 * own objects).
 */
import { KubeObject, Snapshot, applyAll, snapshotOf } from "../snapshot";
import type { BuildStage } from "./build-stage";
import {
  EDGE_GATEWAY,
  testBuildStage as stage,
  testCa as ca,
  testNow as now,
  tenantRoute,
} from "./testing/build";

const AUTH_URL = "http://auth.infra.svc.cluster.local:8080/verify?x=1";

const ingress = {
  apiVersion: "networking.k8s.io/v1",
  kind: "Ingress",
  metadata: {
    namespace: "team",
    name: "private",
    uid: "u-private",
    generation: 1,
    creationTimestamp: "2026-11-01T00:00:00Z",
    annotations: {
      "nginx.ingress.kubernetes.io/auth-url": AUTH_URL,
      "nginx.ingress.kubernetes.io/auth-response-headers": "X-User",
    },
  },
  spec: {
    ingressClassName: "kengine",
    rules: [
      {
        host: "private.example.com",
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
} as unknown as KubeObject;

const endpointSlice = (ns: string, service: string, address: string) => ({
  apiVersion: "discovery.k8s.io/v1",
  kind: "EndpointSlice",
  metadata: {
    namespace: ns,
    name: `${service}-x`,
    labels: { "kubernetes.io/service-name": service },
  },
  ports: [{ port: 8080 }],
  endpoints: [{ addresses: [address], conditions: { ready: true } }],
});

const base = snapshotOf([
  ...EDGE_GATEWAY,
  {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace: "team", name: "web" },
    spec: { ports: [{ port: 8080 }] },
  },
  endpointSlice("team", "web", "10.244.1.1"),
  {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace: "infra", name: "auth" },
    spec: { ports: [{ port: 8080 }] },
  },
  endpointSlice("infra", "auth", "10.244.2.2"),
  {
    apiVersion: "networking.k8s.io/v1",
    kind: "IngressClass",
    metadata: { name: "kengine", annotations: { "kengine.io/ingress-nginx-annotations": "true" } },
    spec: {
      controller: "kengine.io/ingress-controller",
      parameters: {
        apiGroup: "gateway.networking.k8s.io",
        kind: "Gateway",
        scope: "Namespace",
        namespace: "apps",
        name: "edge",
      },
    },
  },
  ingress,
] as unknown as KubeObject[]);

const grant = {
  apiVersion: "gateway.networking.k8s.io/v1beta1",
  kind: "ReferenceGrant",
  metadata: { namespace: "infra", name: "team-auth" },
  spec: {
    from: [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute", namespace: "team" }],
    to: [{ group: "", kind: "Service", name: "auth" }],
  },
} as unknown as KubeObject;

const upsert = (s: Snapshot, object: KubeObject): Snapshot =>
  applyAll(s, [{ type: "upsert", kind: object.kind as "Ingress", object }]).snapshot;

/** Every kengine_ext_auth handler of the config. */
function authHandlers(out: ReturnType<BuildStage["run"]>): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === "object") {
      if ((v as { handler?: unknown }).handler === "kengine_ext_auth")
        found.push(v as Record<string, unknown>);
      Object.values(v).forEach(walk);
    }
  };
  walk(JSON.parse(Buffer.from(out.plans[0]!.targets[0]!.config.bytes).toString()));
  return found;
}

describe("auth-url through the build stage", () => {
  it("asks the granted Service first, in mode ingress-nginx", () => {
    const out = stage().run({ snapshot: upsert(base, grant), translate: true, ca, now });
    expect(out.ingresses.get("team/private")).toEqual([]);
    expect(authHandlers(out)).toEqual([
      {
        handler: "kengine_ext_auth",
        mode: "ingress-nginx",
        dial: ["10.244.2.2:8080"],
        path: "/verify?x=1",
        host: "auth.infra.svc.cluster.local:8080",
        allowed_response_headers: ["X-User"],
      },
    ]);
  });

  it("without a ReferenceGrant: every request 500 (no endpoint), reported on the Ingress", () => {
    const out = stage().run({ snapshot: base, translate: true, ca, now });
    expect(authHandlers(out).map(h => h.dial)).toEqual([[]]);
    expect(
      out.ingresses
        .get("team/private")
        ?.map(p => p.message)
        .join("\n"),
    ).toContain("authorization");
  });

  it("a missing Service: the same, never served unauthenticated", () => {
    const noService = applyAll(upsert(base, grant), [
      { type: "delete", kind: "Service", object: base.objects.Service.get("infra/auth")! },
    ]).snapshot;
    const out = stage().run({ snapshot: noService, translate: true, ca, now });
    expect(authHandlers(out).map(h => h.dial)).toEqual([[]]);
    expect(out.ingresses.get("team/private")?.length).toBeGreaterThan(0);
  });

  it("a tenant's HTTPRoute carrying the rule field gets no authorization handler from it", () => {
    const tenant = tenantRoute({
      "x-kengine-external-auth": {
        service: { namespace: "infra", name: "auth", port: 8080 },
        path: "/verify",
        host: "auth",
        responseHeaders: [],
      },
    });
    const out = stage().run({
      snapshot: upsert(upsert(base, grant), tenant),
      translate: true,
      ca,
      now,
    });
    // One handler: the Ingress's. (The API server prunes the field from a stored HTTPRoute;
    // even if it did not, a tenant's route is not the stage's.)
    expect(authHandlers(out)).toHaveLength(1);
  });
});
