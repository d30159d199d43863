import { addressOutcome, canonicalAddress, loadBalancerIP, requestedAddresses } from "./addresses";
import { proxyService } from "../workload/objects";
import { DEFAULT_PROXY_SETTINGS } from "./settings";

const svc = { name: "ns/gw-kengine", type: "LoadBalancer", loadBalancerIP: "127.20.250.1" };
const ip = (value: string) => ({ type: "IPAddress", value });
/** As reported in status: with the default routability, explicitly empty (routability.ts). */
const reported = (a: { type: string; value: string }) => ({ ...a, routability: "" });

describe("requestedAddresses", () => {
  it("takes the Gateway's list over the parameters', and defaults the type to IPAddress", () => {
    const r = requestedAddresses([{ value: "10.0.0.1" }], [{ value: "10.0.0.2" }]);
    expect(r).toEqual({ static: [ip("10.0.0.1")], dynamic: false, source: "spec.addresses" });
    expect(requestedAddresses(undefined, [{ type: "Hostname", value: "a.example" }])).toEqual({
      static: [{ type: "Hostname", value: "a.example" }],
      dynamic: false,
      source: "KengineParameters spec.addresses",
    });
  });

  it("an entry without a value (or no request) asks for any address", () => {
    expect(requestedAddresses([{ type: "IPAddress" }], [{ value: "10.0.0.2" }])).toEqual({
      static: [],
      dynamic: true,
      source: "spec.addresses",
    });
    expect(requestedAddresses(undefined, undefined).dynamic).toBe(true);
    expect(requestedAddresses([{ value: "10.0.0.1" }, {}], undefined).dynamic).toBe(true);
  });

  it("the Service requests the first IP address", () => {
    const r = requestedAddresses(
      [{ type: "Hostname", value: "a.example" }, { value: "fd00::1" }, { value: "10.0.0.1" }],
      undefined,
    );
    expect(loadBalancerIP(r)).toBe("fd00::1");
    expect(loadBalancerIP(requestedAddresses(undefined, undefined))).toBeUndefined();
  });

  it("compares IPv6 addresses in one spelling", () => {
    expect(canonicalAddress(ip("FD00:0:0::1"))).toBe(canonicalAddress(ip("fd00::1")));
    expect(canonicalAddress({ value: "10.0.0.1" })).toBe(canonicalAddress(ip("10.0.0.1")));
  });
});

describe("addressOutcome", () => {
  const want = (...values: string[]) =>
    requestedAddresses(
      values.map(value => ({ value })),
      undefined,
    );

  it("no static request: whatever the load balancer assigned", () => {
    expect(addressOutcome(want(), [ip("127.20.0.3")], svc, true).addresses).toEqual([
      reported(ip("127.20.0.3")),
    ]);
  });

  it("the requested address assigned: reported, nothing else", () => {
    const o = addressOutcome(want("127.20.250.1"), [ip("127.20.250.1"), ip("10.0.0.9")], svc, true);
    expect(o.addresses).toEqual([reported(ip("127.20.250.1"))]);
    expect(o.problem).toBeUndefined();
  });

  it("not assigned yet: AddressNotAssigned, naming the address", () => {
    const o = addressOutcome(want("127.20.250.1"), [], svc, true);
    expect(o.addresses).toEqual([]);
    expect(o.problem?.reason).toBe("AddressNotAssigned");
    expect(o.problem?.message).toContain("127.20.250.1");
  });

  it("while the Service still requests another address: AddressNotAssigned", () => {
    const o = addressOutcome(
      want("127.20.250.1"),
      [ip("127.20.0.3")],
      { ...svc, loadBalancerIP: "192.0.2.1" },
      true,
    );
    expect(o.problem?.reason).toBe("AddressNotAssigned");
    expect(o.problem?.message).toContain("requesting 127.20.250.1");
  });

  it("another address assigned instead: AddressNotUsable, no address reported", () => {
    const o = addressOutcome(
      want("192.0.2.1"),
      [ip("127.20.0.3")],
      { ...svc, loadBalancerIP: "192.0.2.1" },
      true,
    );
    expect(o.addresses).toEqual([]);
    expect(o.problem?.reason).toBe("AddressNotUsable");
    expect(o.problem?.message).toContain("192.0.2.1 (spec.addresses) cannot be used");
    expect(o.problem?.message).toContain("assigned 127.20.0.3 instead");
  });

  it("a second IP cannot be requested: AddressNotUsable, the first still reported", () => {
    const o = addressOutcome(want("127.20.250.1", "127.20.250.2"), [ip("127.20.250.1")], svc, true);
    expect(o.addresses).toEqual([reported(ip("127.20.250.1"))]);
    expect(o.problem?.reason).toBe("AddressNotUsable");
    expect(o.problem?.message).toContain("127.20.250.2 (spec.addresses) cannot be used");
    expect(o.problem?.message).toContain("one IP address");
  });

  it("hostnames, other Service types and bring-your-own Services get their own reason", () => {
    const host = requestedAddresses([{ type: "Hostname", value: "gw.example" }], undefined);
    expect(addressOutcome(host, [ip("127.20.0.3")], svc, true).problem?.message).toContain(
      "cannot request a hostname",
    );
    const bound = addressOutcome(host, [{ type: "Hostname", value: "gw.example" }], svc, true);
    expect(bound.addresses).toEqual([reported({ type: "Hostname", value: "gw.example" })]);
    expect(bound.problem).toBeUndefined();
    expect(
      addressOutcome(
        want("10.96.0.9"),
        [ip("10.96.0.10")],
        { name: "ns/x", type: "ClusterIP" },
        true,
      ).problem?.message,
    ).toContain("LoadBalancer Service");
    expect(
      addressOutcome(want("10.0.0.1"), [ip("10.0.0.2")], { name: "ns/mine" }, false).problem
        ?.message,
    ).toContain("mode External");
  });
});

describe("proxyService", () => {
  const ref = {
    namespace: "ns",
    name: "gw",
    uid: "u",
    listeners: [{ port: 80, protocol: "HTTP" }],
  };
  const spec = (m: ReturnType<typeof proxyService>) =>
    m.spec as { loadBalancerIP?: string; type: string };

  it("requests the Gateway's first IP, else the parameters'", () => {
    expect(
      spec(proxyService({ ...ref, addresses: [{ value: "127.20.250.1" }] }, DEFAULT_PROXY_SETTINGS))
        .loadBalancerIP,
    ).toBe("127.20.250.1");
    expect(
      spec(proxyService(ref, { ...DEFAULT_PROXY_SETTINGS, addresses: [{ value: "127.20.250.2" }] }))
        .loadBalancerIP,
    ).toBe("127.20.250.2");
    expect(spec(proxyService(ref, DEFAULT_PROXY_SETTINGS)).loadBalancerIP).toBeUndefined();
  });

  it("requests nothing from a Service that is not a LoadBalancer", () => {
    const s = proxyService(
      { ...ref, addresses: [{ value: "127.20.250.1" }] },
      { ...DEFAULT_PROXY_SETTINGS, serviceType: "ClusterIP" },
    );
    expect(spec(s).loadBalancerIP).toBeUndefined();
  });
});
