import type { GatewayStatusResult, StatusResults } from "../translate";
import { FleetResultsInput, fleetResults } from "./programmed";

const H = "a".repeat(64);
const gateway = (name: string): GatewayStatusResult => ({
  namespace: "ns",
  name,
  conditions: [
    { type: "Accepted", status: "True", reason: "Accepted", message: "", observedGeneration: 1 },
    {
      type: "Programmed",
      status: "True",
      reason: "Programmed",
      message: "",
      observedGeneration: 1,
    },
  ],
  listeners: [],
});
const statuses: StatusResults = {
  gatewayClasses: [],
  gateways: [gateway("planned"), gateway("failed"), gateway("other")],
  listenerSets: [],
  routes: [],
};
const input = (over: Partial<FleetResultsInput> = {}): FleetResultsInput => ({
  statuses,
  bundleVersion: undefined,
  missingKinds: [],
  planned: new Map([
    [
      "ns/planned",
      {
        view: {
          proxies: [{ phase: "Programmed", hash: H, name: "pod-a" }],
          desiredHash: H,
          serviceExists: true,
        },
        addresses: [{ type: "IPAddress", value: "10.0.0.1" }],
      },
    ],
  ]),
  planFailures: new Map([["ns/failed", "cannot translate this Gateway's configuration: boom"]]),
  parentOf: () => undefined,
  ...over,
});
const programmed = (r: StatusResults, name: string) =>
  r.gateways.find(g => g.name === name)!.conditions.find(c => c.type === "Programmed");

describe("fleetResults", () => {
  it("a planned Gateway is Programmed by its proxies and gets its addresses", () => {
    const { results, addresses } = fleetResults(input());
    expect(programmed(results, "planned")?.status).toBe("True");
    expect([...addresses]).toEqual([["ns/planned", [{ type: "IPAddress", value: "10.0.0.1" }]]]);
  });

  it("a Gateway that could not be planned is not Programmed, and says why", () => {
    const c = programmed(fleetResults(input()).results, "failed");
    expect(c?.status).toBe("False");
    expect(c?.message).toContain("boom");
  });

  it("a Gateway neither planned nor failed keeps the translator's result", () => {
    expect(fleetResults(input()).results.gateways[2]).toBe(statuses.gateways[2]);
  });

  it("a failing proxy makes its Gateway not Programmed", () => {
    const planned = new Map([
      [
        "ns/planned",
        {
          view: {
            proxies: [{ phase: "Failed" as const, message: "rejected", name: "pod-a" }],
            desiredHash: H,
            serviceExists: true,
          },
          addresses: [{ type: "IPAddress", value: "10.0.0.1" }],
        },
      ],
    ]);
    const c = programmed(fleetResults(input({ planned })).results, "planned");
    expect(c?.status).toBe("False");
    expect(c?.message).toContain("pod-a: rejected");
  });
});
