import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildStamp, manifests, objectRefs } from "./deployed";

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

describe("buildStamp", () => {
  // A checkout with one source file and a dist/ with the three manifests.
  let root = "";
  let dist = "";
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "kg-stamp-"));
    dist = join(root, "dist");
    mkdirSync(join(root, "capabilities"), { recursive: true });
    mkdirSync(dist);
    writeFileSync(join(root, "capabilities", "a.ts"), "export const a = 1;\n");
    for (const f of manifests(dist)) writeFileSync(f, "kind: List\n");
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("stays the same when a source is written back unchanged (pepr dev's formatting check)", () => {
    const before = buildStamp(dist, root);
    const later = new Date(Date.now() + 60_000);
    writeFileSync(join(root, "capabilities", "a.ts"), "export const a = 1;\n");
    utimesSync(join(root, "capabilities", "a.ts"), later, later);
    expect(buildStamp(dist, root)).toBe(before);
  });

  it("changes with a source's content, a new source, or a manifest rewritten after the build", () => {
    const before = buildStamp(dist, root);
    writeFileSync(join(root, "capabilities", "a.ts"), "export const a = 2;\n");
    const edited = buildStamp(dist, root);
    expect(edited).not.toBe(before);
    writeFileSync(join(root, "capabilities", "b.ts"), "");
    const added = buildStamp(dist, root);
    expect(added).not.toBe(edited);
    writeFileSync(manifests(dist)[1]!, "kind: Other\n");
    expect(buildStamp(dist, root)).not.toBe(added);
  });
});
