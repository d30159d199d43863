import fc from "fast-check";
import { addressOutcome, requestedAddresses } from "./addresses";

const svc = (clusterIP?: string) => ({ name: "gw/gw-kengine", type: "LoadBalancer", clusterIP });
const lbAssigned = [{ type: "IPAddress", value: "127.20.0.5" }];

describe("address routability (GatewayAddressRoutability, …Cluster)", () => {
  it("Cluster without value: the Service's cluster IP, reported with routability Cluster, instead of the load balancer's", () => {
    const r = requestedAddresses([{ routability: "Cluster" }], undefined);
    expect(r.static).toEqual([]);
    expect(r.dynamic).toBe(false);
    expect(addressOutcome(r, lbAssigned, svc("10.96.0.10"), true)).toEqual({
      addresses: [{ type: "IPAddress", value: "10.96.0.10", routability: "Cluster" }],
    });
  });

  it("Cluster beside a default entry: both, the load balancer's first", () => {
    const r = requestedAddresses([{}, { routability: "Cluster" }], undefined);
    expect(addressOutcome(r, lbAssigned, svc("10.96.0.10"), true).addresses).toEqual([
      ...lbAssigned,
      { type: "IPAddress", value: "10.96.0.10", routability: "Cluster" },
    ]);
  });

  it("Cluster naming the cluster IP is bound; naming another is AddressNotUsable, never reported", () => {
    fc.assert(
      fc.property(fc.ipV4(), fc.ipV4(), (asked, ip) => {
        const r = requestedAddresses([{ value: asked, routability: "Cluster" }], undefined);
        const out = addressOutcome(r, lbAssigned, svc(ip), true);
        if (asked === ip) {
          expect(out.problem).toBeUndefined();
          expect(out.addresses).toEqual([{ type: "IPAddress", value: ip, routability: "Cluster" }]);
        } else {
          expect(out.problem?.reason).toBe("AddressNotUsable");
          expect(out.addresses.map(a => a.value)).not.toContain(asked);
        }
      }),
    );
  });

  it("no cluster IP yet (or a headless Service): AddressNotAssigned, nothing reported", () => {
    for (const ip of [undefined, "None"]) {
      const r = requestedAddresses([{ routability: "Cluster" }], undefined);
      const out = addressOutcome(r, lbAssigned, svc(ip), true);
      expect(out.problem?.reason).toBe("AddressNotAssigned");
      expect(out.addresses).toEqual([]);
    }
  });

  it("an implementation-specific routability is refused (AddressNotUsable) naming the value", () => {
    const r = requestedAddresses([{}, { routability: "example.com/Public" }], undefined);
    const out = addressOutcome(r, lbAssigned, svc("10.96.0.10"), true);
    expect(out.problem?.reason).toBe("AddressNotUsable");
    expect(out.problem?.message).toContain("example.com/Public");
    expect(out.addresses).toEqual(lbAssigned);
  });

  it("without routability nothing changes: the load balancer's addresses, no routability field", () => {
    const r = requestedAddresses([{}], undefined);
    expect(r.cluster).toBeUndefined();
    expect(addressOutcome(r, lbAssigned, svc("10.96.0.10"), true)).toEqual({
      addresses: lbAssigned,
    });
  });
});
