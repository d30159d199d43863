import { denialMessage } from "./message";

describe("denialMessage", () => {
  it("names the object, every field, its value and the reason", () => {
    const msg = denialMessage("HTTPRoute", "apps", "r1", [
      { path: "spec.rules[0].matches[0].path.value", value: "", message: "must not be empty" },
      {
        path: "spec.rules[1].matches[0].path.value",
        value: "x".repeat(200),
        message: "is not RE2",
      },
    ]);
    expect(msg).toMatch(/^HTTPRoute apps\/r1 cannot be run by the Kengine proxy: /);
    expect(msg).toContain('spec.rules[0].matches[0].path.value: must not be empty (got "")');
    expect(msg).toContain("spec.rules[1].matches[0].path.value: is not RE2");
    expect(msg).toContain("(200 characters)");
  });
  it("omits the namespace of cluster-scoped objects", () => {
    expect(
      denialMessage("GatewayClass", undefined, "c", [{ path: "spec", value: "v", message: "m" }]),
    ).toMatch(/^GatewayClass c /);
  });
});
