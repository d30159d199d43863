/**
 * Leftover fleets of IngressClasses: the proxies' Service owned by an IngressClass whose
 * Gateway is no current fleet's is found, with every object provisioning would delete (each
 * only if ours); a current fleet, a Gateway's own proxies and names a real Gateway has now are
 * left alone.
 */
import { KubeObject, snapshotOf } from "../snapshot";
import { retiredFleets } from "./retired-fleets";

const service = (namespace: string, gateway: string, ownerKind: string): KubeObject =>
  ({
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      namespace,
      name: `${gateway}-kengine`,
      labels: {
        "gateway.networking.k8s.io/gateway-name": gateway,
        "app.kubernetes.io/managed-by": "kengine-gateway",
        "app.kubernetes.io/component": "proxy",
      },
      ownerReferences: [
        {
          apiVersion:
            ownerKind === "IngressClass" ? "networking.k8s.io/v1" : "gateway.networking.k8s.io/v1",
          kind: ownerKind,
          name: "x",
          uid: "u",
          controller: true,
        },
      ],
    },
    spec: {},
  }) as unknown as KubeObject;

describe("retiredFleets", () => {
  it("finds a class's fleet left in its old namespace, and names what to delete", () => {
    const s = snapshotOf([
      service("old", "ingress-public", "IngressClass"),
      service("new", "ingress-public", "IngressClass"),
      service("apps", "edge", "Gateway"),
    ]);
    const found = retiredFleets(s, new Set(["new/ingress-public"]));
    expect(found.map(f => f.key)).toEqual(["old/ingress-public"]);
    expect(found[0]!.stale.map(o => `${o.kind}/${o.name}`)).toEqual([
      "Deployment/ingress-public-kengine",
      "DaemonSet/ingress-public-kengine",
      "Service/ingress-public-kengine",
      "Service/ingress-public-kengine-admin",
      "PodDisruptionBudget/ingress-public-kengine",
      "NetworkPolicy/ingress-public-kengine",
      "Secret/ingress-public-kengine-admin",
      "Secret/ingress-public-kengine-last-good",
      "ConfigMap/ingress-public-kengine-bootstrap",
    ]);
    expect(found[0]!.stale.every(o => o.onlyIfOurs && o.namespace === "old")).toBe(true);
  });

  it("leaves names a real Gateway has now to that Gateway's plan", () => {
    const s = snapshotOf([
      service("old", "ingress-public", "IngressClass"),
      {
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "Gateway",
        metadata: { namespace: "old", name: "ingress-public" },
        spec: { gatewayClassName: "kengine", listeners: [] },
      } as unknown as KubeObject,
    ]);
    expect(retiredFleets(s, new Set())).toEqual([]);
  });
});
