import {
  backendsFor,
  EndpointSlice,
  isLocalLbAddress,
  pickAddress,
  Service,
  wantsLoadBalancer,
} from "./loadbalancer";

const slice = (
  name: string,
  ports: EndpointSlice["ports"],
  eps: [string, boolean | undefined][],
): EndpointSlice => ({
  metadata: { name, namespace: "n", labels: { "kubernetes.io/service-name": "svc" } },
  addressType: "IPv4",
  ports,
  endpoints: eps.map(([ip, ready]) => ({
    addresses: [ip],
    conditions: ready === undefined ? {} : { ready },
  })),
});

describe("backendsFor", () => {
  const slices = [
    slice(
      "a",
      [
        { name: "http", port: 3000, protocol: "TCP" },
        { name: "dns", port: 5353, protocol: "UDP" },
      ],
      [
        ["10.244.0.3", true],
        ["10.244.0.2", undefined],
        ["10.244.0.4", false],
      ],
    ),
    slice("b", [{ name: "http", port: 3000, protocol: "TCP" }], [["10.244.0.2", true]]),
  ];

  it("maps the Service port by name to the endpoints' target port; ready (or unset) only", () => {
    expect(backendsFor({ name: "http", port: 80 }, slices)).toEqual([
      { ip: "10.244.0.2", port: 3000 },
      { ip: "10.244.0.3", port: 3000 },
    ]);
    expect(backendsFor({ name: "dns", port: 53, protocol: "UDP" }, slices)).toEqual([
      { ip: "10.244.0.2", port: 5353 },
      { ip: "10.244.0.3", port: 5353 },
    ]);
    expect(backendsFor({ name: "other", port: 81 }, slices)).toEqual([]);
  });

  it("falls back to terminating endpoints that still serve, only when none is ready (as kube-proxy)", () => {
    const eps = (
      ...e: [string, { ready?: boolean; serving?: boolean; terminating?: boolean }][]
    ): EndpointSlice => ({
      ...slice("t", [{ name: "http", port: 3000, protocol: "TCP" }], []),
      endpoints: e.map(([ip, conditions]) => ({ addresses: [ip], conditions })),
    });
    const draining = { ready: false, serving: true, terminating: true };
    const gone = { ready: false, serving: false, terminating: true };
    const starting = { ready: false, serving: false, terminating: false };
    const http = { name: "http", port: 80 };
    // a ready endpoint takes all the traffic; the draining one none
    expect(
      backendsFor(http, [eps(["10.244.0.5", draining], ["10.244.0.6", { ready: true }])]),
    ).toEqual([{ ip: "10.244.0.6", port: 3000 }]);
    // none ready: the draining one serves; one no longer serving, or not yet ready, does not
    expect(
      backendsFor(http, [
        eps(["10.244.0.5", draining], ["10.244.0.7", gone], ["10.244.0.8", starting]),
      ]),
    ).toEqual([{ ip: "10.244.0.5", port: 3000 }]);
    expect(backendsFor(http, [eps(["10.244.0.7", gone], ["10.244.0.8", starting])])).toEqual([]);
  });

  it("handles an unnamed single port and slices without ports", () => {
    const s = [
      slice("c", [{ port: 8080 }], [["10.244.0.9", true]]),
      slice("d", null, [["10.244.0.8", true]]),
    ];
    expect(backendsFor({ port: 80 }, s)).toEqual([{ ip: "10.244.0.9", port: 8080 }]);
  });
});

describe("addresses", () => {
  it("prefers a still-free address the Service already had, else the first free", () => {
    expect(pickAddress(new Set())).toBe("127.20.0.1");
    expect(pickAddress(new Set(["127.20.0.1"]))).toBe("127.20.0.2");
    expect(pickAddress(new Set(["127.20.0.1"]), ["127.20.0.7"])).toBe("127.20.0.7");
    expect(pickAddress(new Set(["127.20.0.7"]), ["127.20.0.7"])).toBe("127.20.0.1");
    expect(pickAddress(new Set(), ["10.0.0.1", undefined])).toBe("127.20.0.1");
    const many = new Set(Array.from({ length: 254 }, (_, i) => `127.20.0.${i + 1}`));
    expect(pickAddress(many)).toBe("127.20.1.1");
    expect(isLocalLbAddress("127.20.3.4")).toBe(true);
    expect(isLocalLbAddress("127.0.0.1")).toBe(false);
  });

  it("serves LoadBalancer Services without a loadBalancerClass only", () => {
    const svc = (spec: Service["spec"]): Service => ({ metadata: { name: "s" }, spec });
    expect(wantsLoadBalancer(svc({ type: "LoadBalancer" }))).toBe(true);
    expect(wantsLoadBalancer(svc({ type: "LoadBalancer", loadBalancerClass: "other.io/lb" }))).toBe(
      false,
    );
    expect(wantsLoadBalancer(svc({ type: "ClusterIP" }))).toBe(false);
  });
});
