import { manifests, objectRefs } from "./deployed";

describe("objectRefs", () => {
  it("lists every object but Namespaces, with its namespace when it has one", () => {
    const yaml = [
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: pepr-system}",
      "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: pepr-system}",
      "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}",
      "",
    ].join("\n---\n");
    expect(objectRefs(yaml)).toEqual([
      { kind: "Secret", name: "s", namespace: "pepr-system" },
      { kind: "ClusterRole", name: "r" },
    ]);
  });
});

describe("manifests", () => {
  it("applies the CRDs first and our Role after Pepr's objects (its Namespace)", () => {
    const files = manifests("dist").map(f => f.replace(/^dist\//, ""));
    expect(files[0]).toBe("kengine-gateway-crds.yaml");
    expect(files[1]).toMatch(/^pepr-module-[0-9a-f-]{36}\.yaml$/);
    expect(files[2]).toBe("kengine-gateway-rbac.yaml");
  });
});
