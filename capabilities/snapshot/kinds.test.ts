import { LIST_PATHS, kindPath } from "./kinds";
import { KINDS } from ".";

describe("kindPath", () => {
  it("cluster-scoped objects and cluster-wide collections", () => {
    expect(kindPath("GatewayClass", undefined, "kengine")).toBe(
      "/apis/gateway.networking.k8s.io/v1/gatewayclasses/kengine",
    );
    expect(kindPath("HTTPRoute")).toBe("/apis/gateway.networking.k8s.io/v1/httproutes");
  });

  it("namespaced objects and collections, names escaped", () => {
    expect(kindPath("Gateway", "edge", "main")).toBe(
      "/apis/gateway.networking.k8s.io/v1/namespaces/edge/gateways/main",
    );
    expect(kindPath("KengineParameters", "team-a")).toBe(
      "/apis/gateway.kengine.io/v1alpha1/namespaces/team-a/kengineparameters",
    );
    expect(kindPath("Service", "a b", "x/y")).toBe("/api/v1/namespaces/a%20b/services/x%2Fy");
  });

  it("every kind's collection is its list path, and its objects live under it", () => {
    for (const kind of KINDS) {
      expect(kindPath(kind)).toBe(LIST_PATHS[kind]);
      const resource = LIST_PATHS[kind].split("/").pop();
      expect(kindPath(kind, "ns", "n").endsWith(`/namespaces/ns/${resource}/n`)).toBe(true);
    }
  });
});
