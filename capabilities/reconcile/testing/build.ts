/** A build stage for unit tests: the controller's CA made once, isolation letting everything through. */
import { createAuthority, generateKeyPair } from "../../pki/pki";
import { DEFAULT_PROXY_SETTINGS } from "../../provision";
import { BuildStage } from "../build-stage";
import type { GatedPlan } from "../isolation";
import type { KubeObject } from "../../snapshot";

export const testNow = new Date("2026-11-20T00:00:00Z");

const signing = (() => {
  const r = createAuthority({
    commonName: "controller CA",
    keys: generateKeyPair(),
    notBefore: testNow,
    lifetimeDays: 3650,
  });
  if (!r.ok) throw new Error(r.error);
  return r.value;
})();

/** The admin CA a build stage signs with and trusts. */
export const testCa = { signing, trusted: [signing.certificatePem] };

export function testBuildStage(): BuildStage {
  const isolation = {
    refused: () => [],
    gate: <P extends GatedPlan>(plan: P): P => plan,
    retain: () => {},
  };
  return new BuildStage({
    defaults: DEFAULT_PROXY_SETTINGS,
    namespace: "kengine-system",
    log: { warn() {}, error() {} },
    isolation,
  });
}

/**
 * Our GatewayClass `kengine` and Gateway `apps/edge` (HTTP on 80, routes from every namespace)
 * with one proxy pod `p-a` on its admin Service: what the Ingress tests serve through.
 */
export const EDGE_GATEWAY = [
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
      listeners: [
        {
          name: "http",
          port: 80,
          protocol: "HTTP",
          allowedRoutes: { namespaces: { from: "All" } },
        },
      ],
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
] as unknown as readonly KubeObject[];

/**
 * A tenant's own HTTPRoute `team/own` on `apps/edge` for own.example.com to Service web:8080,
 * its one rule carrying `ruleFields` (e.g. the `x-kengine-*` fields only the ingress stage's
 * routes may carry).
 */
export const tenantRoute = (ruleFields: Record<string, unknown>): KubeObject =>
  ({
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: { namespace: "team", name: "own", generation: 1 },
    spec: {
      parentRefs: [{ name: "edge", namespace: "apps" }],
      hostnames: ["own.example.com"],
      rules: [{ backendRefs: [{ name: "web", port: 8080 }], ...ruleFields }],
    },
  }) as unknown as KubeObject;
