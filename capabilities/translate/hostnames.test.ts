import { compareHostSpecificity, covers, intersectHostnames } from "./hostnames";

describe("covers", () => {
  it("matches exact names case-insensitively", () => {
    expect(covers("Foo.Example.com", "foo.example.com")).toBe(true);
    expect(covers("foo.example.com", "bar.example.com")).toBe(false);
  });
  it("lets a wildcard match one or more labels, never the bare domain", () => {
    expect(covers("*.example.com", "a.example.com")).toBe(true);
    expect(covers("*.example.com", "a.b.example.com")).toBe(true);
    expect(covers("*.example.com", "example.com")).toBe(false);
    expect(covers("*.example.com", "aexample.com")).toBe(false);
  });
  it("lets a wildcard cover a deeper wildcard", () => {
    expect(covers("*.example.com", "*.a.example.com")).toBe(true);
    expect(covers("*.a.example.com", "*.example.com")).toBe(false);
  });
});

describe("intersectHostnames", () => {
  it("is 'any host' when neither side restricts", () => {
    expect(intersectHostnames(undefined, undefined)).toBeUndefined();
    expect(intersectHostnames(undefined, [])).toBeUndefined();
  });
  it("takes the listener hostname when the route has none", () => {
    expect(intersectHostnames("Foo.example.com", undefined)).toEqual(["foo.example.com"]);
  });
  it("narrows a wildcard route to an exact listener and keeps deeper route wildcards", () => {
    expect(intersectHostnames("foo.example.com", ["*.example.com"])).toEqual(["foo.example.com"]);
    expect(
      intersectHostnames("*.example.com", ["*.a.example.com", "x.example.com", "other.org"]),
    ).toEqual(["*.a.example.com", "x.example.com"]);
  });
  it("is empty when nothing intersects", () => {
    expect(intersectHostnames("foo.example.com", ["bar.example.com", "example.com"])).toEqual([]);
    expect(intersectHostnames("*.example.com", ["example.com"])).toEqual([]);
  });
});

describe("compareHostSpecificity", () => {
  it("orders exact, then wildcards by depth, then none", () => {
    const hosts = [
      undefined,
      "*.example.com",
      "a.example.com",
      "*.a.example.com",
      "long-name.example.com",
    ];
    expect([...hosts].sort(compareHostSpecificity)).toEqual([
      "long-name.example.com",
      "a.example.com",
      "*.a.example.com",
      "*.example.com",
      undefined,
    ]);
  });
});
