import { snapshotOf } from "../snapshot";
import { translate, unsupportedAddressProblem } from "./translate";

const gateway = (addresses?: object[]) => ({
  apiVersion: "gateway.networking.k8s.io/v1",
  kind: "Gateway",
  metadata: { name: "gw", namespace: "ns", generation: 2 },
  spec: {
    gatewayClassName: "k",
    listeners: [{ name: "http", port: 80, protocol: "HTTP" }],
    ...(addresses ? { addresses } : {}),
  },
});
const objects = (addresses?: object[]) =>
  snapshotOf([
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "GatewayClass",
      metadata: { name: "k" },
      spec: { controllerName: "kengine.io/gateway-controller" },
    },
    gateway(addresses),
  ] as never);

describe("Gateway spec.addresses types", () => {
  it("IPAddress (also unset) and Hostname are supported", () => {
    expect(
      unsupportedAddressProblem([{ value: "10.0.0.1" }, { type: "Hostname", value: "a.example" }]),
    ).toBeUndefined();
    expect(unsupportedAddressProblem(undefined)).toBeUndefined();
  });

  it("another type: Accepted=False UnsupportedAddress naming it, and no proxies", () => {
    const r = translate(
      objects([{ type: "test/fake-invalid-type", value: "x" }, { value: "10.0.0.1" }]),
    );
    expect(r.gateways).toEqual([]);
    const cs = r.statuses.gateways[0]!.conditions;
    expect(cs.find(c => c.type === "Accepted")).toMatchObject({
      status: "False",
      reason: "UnsupportedAddress",
      observedGeneration: 2,
    });
    expect(cs.find(c => c.type === "Accepted")!.message).toContain(
      'spec.addresses[0].type "test/fake-invalid-type"',
    );
    expect(cs.find(c => c.type === "Programmed")).toMatchObject({
      status: "False",
      reason: "Invalid",
    });
    const fine = translate(objects([{ value: "10.0.0.1" }]));
    expect(fine.gateways).toHaveLength(1);
    expect(fine.statuses.gateways[0]!.conditions[0]).toMatchObject({ status: "True" });
  });
});
