import type { V1Ingress, V1Service } from "@kubernetes/client-node";
import {
  addressesFromServices,
  desiredAddresses,
  ingressStatusWrites,
  needsWrite,
  staticAddresses,
} from "./load-balancer";

const service = (ingress: NonNullable<V1Service["status"]>["loadBalancer"]): V1Service => ({
  status: { loadBalancer: ingress },
});
const ing = (name: string, lb?: unknown, namespace = "ns"): V1Ingress => ({
  metadata: { name, namespace },
  status: lb ? { loadBalancer: { ingress: lb as never } } : undefined,
});

describe("addresses", () => {
  it("come from the Services' load-balancer ingress: IPs, hostnames, ports; sorted, deduplicated", () => {
    const services = [
      service({
        ingress: [
          {
            ip: "192.0.2.2",
            ports: [
              { port: 443, protocol: "TCP" },
              { port: 80, protocol: "TCP" },
            ],
          },
          { hostname: "lb.example.com" },
        ],
      }),
      service({ ingress: [{ hostname: "lb.example.com" }] }),
      service(undefined),
      {},
    ];
    expect(addressesFromServices(services)).toEqual([
      { hostname: "lb.example.com" },
      {
        ip: "192.0.2.2",
        ports: [
          { port: 80, protocol: "TCP" },
          { port: 443, protocol: "TCP" },
        ],
      },
    ]);
  });

  it("a static list overrides discovery; entries are IPs or hostnames", () => {
    expect(staticAddresses(["198.51.100.1", " 2001:db8::1 ", "", "edge.example.com"])).toEqual([
      { hostname: "edge.example.com" },
      { ip: "198.51.100.1" },
      { ip: "2001:db8::1" },
    ]);
    const services = [service({ ingress: [{ ip: "192.0.2.2" }] })];
    expect(desiredAddresses(["edge.example.com"], services)).toEqual([
      { hostname: "edge.example.com" },
    ]);
    expect(desiredAddresses([], services)).toEqual([{ ip: "192.0.2.2" }]);
    expect(desiredAddresses(undefined, [])).toEqual([]);
  });
});

describe("writes", () => {
  const want = [{ ip: "192.0.2.2" }];

  it("never clears: with no known address, nothing is written", () => {
    expect(needsWrite(ing("a", [{ ip: "192.0.2.1" }]), [])).toBe(false);
    expect(ingressStatusWrites([ing("a", [{ ip: "192.0.2.1" }]), ing("b")], [])).toEqual([]);
  });

  it("writes new Ingresses and those with other addresses, not those already right", () => {
    expect(needsWrite(ing("a"), want)).toBe(true);
    expect(needsWrite(ing("a", [{ ip: "192.0.2.1" }]), want)).toBe(true);
    expect(needsWrite(ing("a", [{ ip: "192.0.2.2" }]), want)).toBe(false);
  });

  it("after an address change writes every Ingress, in order, in bounded passes", () => {
    const list = [
      ing("c", [{ ip: "192.0.2.1" }]),
      ing("a", [{ ip: "192.0.2.1" }]),
      ing("b", [{ ip: "192.0.2.1" }], "other"),
      ing("d", [{ ip: "192.0.2.2" }]),
    ];
    const all = ingressStatusWrites(list, want);
    expect(all.map(w => `${w.namespace}/${w.name}`)).toEqual(["ns/a", "ns/c", "other/b"]);
    expect(all[0].status).toEqual({ loadBalancer: { ingress: want } });
    expect(ingressStatusWrites(list, want, 2)).toHaveLength(2);
  });
});
