import { parametersRefShapeProblem } from "./parametersref";

describe("parametersRefShapeProblem (status InvalidParameters; an admission warning)", () => {
  it("accepts our KengineParameters with a namespace, and no reference", () => {
    expect(
      parametersRefShapeProblem(
        { group: "gateway.kengine.io", kind: "KengineParameters", name: "p" },
        "infra",
        "spec.parametersRef",
      ),
    ).toBeUndefined();
    expect(parametersRefShapeProblem(undefined, undefined, "spec.parametersRef")).toBeUndefined();
  });

  it("names another kind, and a missing namespace, with the exact text", () => {
    expect(
      parametersRefShapeProblem(
        { group: "invalid.io", kind: "InvalidParameters", name: "invalid" },
        "apps",
        "spec.infrastructure.parametersRef",
      ),
    ).toBe(
      "spec.infrastructure.parametersRef: invalid.io/InvalidParameters is not supported (use gateway.kengine.io/KengineParameters)",
    );
    expect(
      parametersRefShapeProblem(
        { group: "", kind: "ConfigMap", name: "c" },
        "x",
        "spec.parametersRef",
      ),
    ).toBe(
      "spec.parametersRef: core/ConfigMap is not supported (use gateway.kengine.io/KengineParameters)",
    );
    expect(
      parametersRefShapeProblem(
        { group: "gateway.kengine.io", kind: "KengineParameters", name: "p" },
        undefined,
        "spec.parametersRef",
      ),
    ).toBe("spec.parametersRef: KengineParameters is namespaced; set parametersRef.namespace");
  });
});
