import fc from "fast-check";
import { addressOutcome, requestedAddresses } from "./addresses";
import { proxyService } from "../workload/objects";
import { SENTINEL_ROUTABILITY, serviceTypeFor } from "./routability";
import { DEFAULT_PROXY_SETTINGS } from "./settings";

const svc = (clusterIP?: string, type = "LoadBalancer") => ({
  name: "gw/gw-kengine",
  type,
  clusterIP,
});
const lbAssigned = [{ type: "IPAddress", value: "127.20.0.5" }];
const lbReported = [{ type: "IPAddress", value: "127.20.0.5", routability: "" }];

describe("address routability (GatewayAddressRoutability, …Cluster)", () => {
  it("Cluster without value: the Service's cluster IP, reported with routability Cluster, instead of the load balancer's", () => {
    const r = requestedAddresses([{ routability: "Cluster" }], undefined);
    expect(r.static).toEqual([]);
    expect(r.dynamic).toBe(false);
    const out = addressOutcome(r, lbAssigned, svc("10.96.0.10"), true);
    expect(out.addresses).toEqual([
      { type: "IPAddress", value: "10.96.0.10", routability: "Cluster" },
    ]);
    expect(out.problem).toBeUndefined();
    expect(out.assignment).toMatchObject({ status: "True", reason: "AddressesAssigned" });
  });

  it("Cluster beside a default entry: both, the load balancer's first, with an explicit empty routability", () => {
    const r = requestedAddresses([{}, { routability: "Cluster" }], undefined);
    expect(addressOutcome(r, lbAssigned, svc("10.96.0.10"), true).addresses).toEqual([
      ...lbReported,
      { type: "IPAddress", value: "10.96.0.10", routability: "Cluster" },
    ]);
  });

  it("Cluster naming the cluster IP is bound; naming another is AddressNotUsable, never reported", () => {
    fc.assert(
      fc.property(fc.ipV4(), fc.ipV4(), fc.boolean(), (asked, ip, withDefault) => {
        const spec = [{ value: asked, routability: "Cluster" }];
        const r = requestedAddresses(withDefault ? [{}, ...spec] : spec, undefined);
        const out = addressOutcome(r, lbAssigned, svc(ip), true);
        const defaults = withDefault ? lbReported : [];
        if (asked === ip) {
          expect(out.problem).toBeUndefined();
          expect(out.addresses).toEqual([
            ...defaults,
            { type: "IPAddress", value: ip, routability: "Cluster" },
          ]);
          expect(out.assignment?.status).toBe("True");
        } else {
          expect(out.problem?.reason).toBe("AddressNotUsable");
          expect(out.problem?.message).toContain(asked);
          expect(out.addresses).toEqual(defaults);
          expect(out.assignment).toMatchObject({
            status: "False",
            reason: withDefault ? "PartiallyAssigned" : "NotAssigned",
          });
        }
      }),
    );
  });

  it("no cluster IP yet (or a headless Service): AddressNotAssigned, nothing reported, AddressesAssigned omitted", () => {
    for (const ip of [undefined, "None"]) {
      const r = requestedAddresses([{ routability: "Cluster" }], undefined);
      const out = addressOutcome(r, lbAssigned, svc(ip), true);
      expect(out.problem?.reason).toBe("AddressNotAssigned");
      expect(out.addresses).toEqual([]);
      expect(out.assignment).toBeUndefined();
    }
  });

  it("an implementation-specific routability is refused (AddressNotUsable) naming the value, never another scope", () => {
    for (const other of ["example.com/Public", "testing.x-k8s.io/other"]) {
      const r = requestedAddresses([{}, { routability: other }], undefined);
      const out = addressOutcome(r, lbAssigned, svc("10.96.0.10"), true);
      expect(out.problem?.reason).toBe("AddressNotUsable");
      expect(out.problem?.message).toContain(other);
      expect(out.addresses).toEqual(lbReported);
      expect(out.assignment?.reason).toBe("PartiallyAssigned");
    }
  });

  it("the conformance sentinel gets the load balancer's address reported with it (beside a default entry: once each)", () => {
    const only = requestedAddresses([{ routability: SENTINEL_ROUTABILITY }], undefined);
    expect(addressOutcome(only, lbAssigned, svc("10.96.0.10"), true).addresses).toEqual([
      { ...lbAssigned[0], routability: SENTINEL_ROUTABILITY },
    ]);
    const both = requestedAddresses([{}, { routability: SENTINEL_ROUTABILITY }], undefined);
    expect(addressOutcome(both, lbAssigned, svc("10.96.0.10"), true).addresses).toEqual([
      ...lbReported,
      { ...lbAssigned[0], routability: SENTINEL_ROUTABILITY },
    ]);
  });

  it("without routability: the load balancer's addresses with an explicit empty routability; a ClusterIP Service's address is Cluster", () => {
    for (const spec of [undefined, [{}]]) {
      const r = requestedAddresses(spec, undefined);
      expect(r.cluster).toBeUndefined();
      expect(addressOutcome(r, lbAssigned, svc("10.96.0.10"), true)).toEqual({
        addresses: lbReported,
        assignment: expect.objectContaining({ status: "True", reason: "AddressesAssigned" }),
      });
      const clusterIP = [{ type: "IPAddress", value: "10.96.0.10" }];
      expect(addressOutcome(r, clusterIP, svc("10.96.0.10", "ClusterIP"), true).addresses).toEqual([
        { ...clusterIP[0], routability: "Cluster" },
      ]);
    }
  });

  it("the load balancer has assigned nothing yet: AddressesAssigned omitted", () => {
    const out = addressOutcome(
      requestedAddresses(undefined, undefined),
      [],
      svc("10.96.0.10"),
      true,
    );
    expect(out.addresses).toEqual([]);
    expect(out.assignment).toBeUndefined();
  });

  it("a Gateway asking only for Cluster addresses gets a ClusterIP Service; any other entry keeps the parameters' type", () => {
    const routabilities = fc.constantFrom(undefined, "", "Cluster", SENTINEL_ROUTABILITY, "x.io/Y");
    fc.assert(
      fc.property(
        fc.array(fc.record({ routability: routabilities }), { maxLength: 4 }),
        fc.constantFrom("LoadBalancer", "NodePort", "ClusterIP") as fc.Arbitrary<
          "LoadBalancer" | "NodePort" | "ClusterIP"
        >,
        (spec, configured) => {
          const onlyCluster = spec.length > 0 && spec.every(a => a.routability === "Cluster");
          const type = serviceTypeFor(requestedAddresses(spec, undefined), configured);
          expect(type).toBe(onlyCluster ? "ClusterIP" : configured);
          const manifest = proxyService(
            { namespace: "ns", name: "gw", uid: "u", listeners: [], addresses: spec },
            { ...DEFAULT_PROXY_SETTINGS, serviceType: configured },
          );
          const s = manifest.spec as { type: string; externalTrafficPolicy?: string };
          expect(s.type).toBe(type);
          expect(s.externalTrafficPolicy === undefined).toBe(type === "ClusterIP");
        },
      ),
    );
  });
});
