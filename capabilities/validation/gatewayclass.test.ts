import { gatewayClassProblems } from "./gatewayclass";

const cls = (parametersRef?: unknown) => ({
  spec: { controllerName: "kengine.io/gateway-controller", parametersRef },
});

describe("gatewayClassProblems", () => {
  it("never refuses a parametersRef the spec answers in status (InvalidParameters)", () => {
    expect(gatewayClassProblems(cls())).toEqual([]);
    // our kind, found or not, valid or not: status
    expect(
      gatewayClassProblems(
        cls({
          group: "gateway.kengine.io",
          kind: "KengineParameters",
          name: "p",
          namespace: "infra",
        }),
      ),
    ).toEqual([]);
    // no namespace for a namespaced kind: cannot be found, status
    expect(
      gatewayClassProblems(
        cls({ group: "gateway.kengine.io", kind: "KengineParameters", name: "p" }),
      ),
    ).toEqual([]);
    // an unsupported kind: status (conformance GatewayInvalidParametersRef, for Gateways)
    expect(
      gatewayClassProblems(cls({ group: "", kind: "ConfigMap", name: "cm", namespace: "x" })),
    ).toEqual([]);
    expect(
      gatewayClassProblems(cls({ group: "invalid.io", kind: "InvalidParameters", name: "i" })),
    ).toEqual([]);
  });

  it("refuses only a malformed reference (what the API server's schema would never store)", () => {
    expect(gatewayClassProblems(cls("KengineParameters/p"))).toEqual([
      {
        path: "spec.parametersRef",
        value: "KengineParameters/p",
        message: "must be an object with string fields group, kind, name, namespace",
      },
    ]);
    expect(gatewayClassProblems(cls({ group: "", kind: 7, name: "n", namespace: ["x"] }))).toEqual([
      { path: "spec.parametersRef.kind", value: "7", message: "must be a string" },
      { path: "spec.parametersRef.namespace", value: '["x"]', message: "must be a string" },
    ]);
  });
});
