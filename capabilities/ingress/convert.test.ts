import type { V1Ingress, V1Service } from "@kubernetes/client-node";
import {
  MAX_RULES_PER_ROUTE,
  RULE_SOURCES_ANNOTATION,
  SERVER_HEADER_FILTER,
  SYNTHETIC_LABEL,
  convertIngress,
  hostsIntersect,
  pathMatch,
  singleLabelHostRegex,
} from "./convert";

const target = { gateway: { namespace: "infra", name: "shared" } };
const services: Record<string, V1Service> = {
  "apps/web": { spec: { ports: [{ name: "http", port: 8080 }] } },
};
const lookup = (ns: string, name: string) => services[`${ns}/${name}`];
const backend = (port: { number?: number; name?: string } = { number: 80 }, name = "web") => ({
  service: { name, port },
});
const ingress = (spec: V1Ingress["spec"]): V1Ingress => ({
  metadata: {
    name: "shop",
    namespace: "apps",
    uid: "u-1",
    generation: 3,
    creationTimestamp: new Date("2026-02-03T04:05:06Z"),
  },
  spec,
});

describe("pathMatch", () => {
  it("maps path types: Exact stays, Prefix and ImplementationSpecific become PathPrefix", () => {
    expect(pathMatch("/a/", "Exact")).toEqual({ type: "Exact", value: "/a/" });
    expect(pathMatch("/a/", "Prefix")).toEqual({ type: "PathPrefix", value: "/a" });
    expect(pathMatch("/", "Prefix")).toEqual({ type: "PathPrefix", value: "/" });
    expect(pathMatch("//", "Prefix")).toEqual({ type: "PathPrefix", value: "/" });
    expect(pathMatch(undefined, "ImplementationSpecific")).toEqual({
      type: "PathPrefix",
      value: "/",
    });
  });
});

describe("singleLabelHostRegex", () => {
  it("matches exactly one label, any case, with an optional port", () => {
    const re = new RegExp(`^(?:${singleLabelHostRegex("*.foo.com").replace("(?i)", "")})$`, "i");
    expect(re.test("a.foo.com")).toBe(true);
    expect(re.test("A.FOO.com:8443")).toBe(true);
    expect(re.test("a.b.foo.com")).toBe(false);
    expect(re.test("foo.com")).toBe(false);
    expect(re.test("afoo.com")).toBe(false);
  });
});

describe("convertIngress", () => {
  it("makes one HTTPRoute per host with owner, label, age and rule sources", () => {
    const out = convertIngress(
      ingress({
        rules: [
          {
            host: "shop.example.com",
            http: {
              paths: [
                { path: "/", pathType: "Prefix", backend: backend() },
                { path: "/cart", pathType: "Exact", backend: backend({ name: "http" }) },
              ],
            },
          },
          { http: { paths: [{ path: "/x", pathType: "Prefix", backend: backend() }] } },
        ],
      }),
      target,
      lookup,
    );
    expect(out.problems).toEqual([]);
    expect(out.listenerSets).toEqual([]);
    expect(out.httpRoutes).toHaveLength(2);
    const [shop, any] = out.httpRoutes;
    expect(shop.metadata).toMatchObject({
      namespace: "apps",
      labels: { [SYNTHETIC_LABEL]: "true" },
      ownerReferences: [{ kind: "Ingress", name: "shop", uid: "u-1", controller: true }],
      creationTimestamp: "2026-02-03T04:05:06.000Z",
      generation: 3,
    });
    expect(shop.metadata.name).toMatch(/^ingress-shop-[0-9a-f]{16}$/);
    expect(JSON.parse(shop.metadata.annotations[RULE_SOURCES_ANNOTATION])).toEqual([
      "spec.rules[0].http.paths[0]",
      "spec.rules[0].http.paths[1]",
    ]);
    expect(shop.spec).toEqual({
      parentRefs: [
        { group: "gateway.networking.k8s.io", kind: "Gateway", namespace: "infra", name: "shared" },
      ],
      hostnames: ["shop.example.com"],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: "/" } }],
          filters: [SERVER_HEADER_FILTER],
          backendRefs: [{ group: "", kind: "Service", name: "web", port: 80 }],
        },
        {
          matches: [{ path: { type: "Exact", value: "/cart" } }],
          filters: [SERVER_HEADER_FILTER],
          backendRefs: [{ group: "", kind: "Service", name: "web", port: 8080 }],
        },
      ],
    });
    expect(any.spec.hostnames).toBeUndefined();
    expect(any.metadata.name).not.toBe(shop.metadata.name);
  });

  it("adds a Host regex to wildcard hosts so they match one label only", () => {
    const out = convertIngress(
      ingress({
        rules: [
          {
            host: "*.foo.com",
            http: { paths: [{ path: "/", pathType: "Prefix", backend: backend() }] },
          },
        ],
      }),
      target,
      lookup,
    );
    expect(out.httpRoutes[0].spec.hostnames).toEqual(["*.foo.com"]);
    expect(out.httpRoutes[0].spec.rules[0].matches[0].headers).toEqual([
      { type: "RegularExpression", name: "Host", value: singleLabelHostRegex("*.foo.com") },
    ]);
  });

  it("turns defaultBackend into a catch-all rule, after an explicit '/' without host", () => {
    const only = convertIngress(ingress({ defaultBackend: backend() }), target, lookup);
    expect(only.httpRoutes[0].spec.rules).toEqual([
      {
        matches: [{ path: { type: "PathPrefix", value: "/" } }],
        filters: [SERVER_HEADER_FILTER],
        backendRefs: [{ group: "", kind: "Service", name: "web", port: 80 }],
      },
    ]);
    const both = convertIngress(
      ingress({
        defaultBackend: backend({ number: 1 }),
        rules: [{ http: { paths: [{ path: "/", pathType: "Prefix", backend: backend() }] } }],
      }),
      target,
      lookup,
    );
    expect(both.problems).toEqual([]);
    expect(both.httpRoutes[0].spec.rules).toHaveLength(1);
    expect(both.httpRoutes[0].spec.rules[0].backendRefs[0].port).toBe(80);
  });

  it("reports unresolvable named ports on the Ingress; the path answers 500 (no backends)", () => {
    const out = convertIngress(
      ingress({
        rules: [
          {
            http: {
              paths: [
                { path: "/a", pathType: "Prefix", backend: backend({ name: "grpc" }) },
                { path: "/b", pathType: "Prefix", backend: backend({ name: "http" }, "gone") },
              ],
            },
          },
        ],
      }),
      target,
      lookup,
    );
    expect(out.problems.map(p => p.path)).toEqual([
      "spec.rules[0].http.paths[0].backend.service.port.name",
      "spec.rules[0].http.paths[1].backend.service.name",
    ]);
    expect(out.httpRoutes[0].spec.rules.map(r => r.backendRefs)).toEqual([[], []]);
  });

  it("makes a ListenerSet for tls, attaches the routes to it, reports what it cannot serve", () => {
    const out = convertIngress(
      ingress({
        tls: [
          { hosts: ["shop.example.com", "*.shop.example.com"], secretName: "shop-cert" },
          { hosts: ["shop.example.com"], secretName: "other" },
          { hosts: ["auto.example.com"] },
        ],
        rules: [
          {
            host: "shop.example.com",
            http: { paths: [{ path: "/", pathType: "Prefix", backend: backend() }] },
          },
        ],
      }),
      { ...target, httpsPort: 8443 },
      lookup,
    );
    expect(out.problems.map(p => p.path)).toEqual([
      "spec.tls[1].hosts[0]",
      "spec.tls[2].secretName",
    ]);
    expect(out.listenerSets).toHaveLength(1);
    const ls = out.listenerSets[0];
    expect(ls.spec.parentRef).toEqual({
      group: "gateway.networking.k8s.io",
      kind: "Gateway",
      namespace: "infra",
      name: "shared",
    });
    expect(ls.spec.listeners.map(l => [l.name, l.hostname, l.port, l.protocol])).toEqual([
      ["tls-0-0", "shop.example.com", 8443, "HTTPS"],
      ["tls-0-1", "*.shop.example.com", 8443, "HTTPS"],
    ]);
    expect(ls.spec.listeners[0].tls.certificateRefs).toEqual([
      { group: "", kind: "Secret", name: "shop-cert" },
    ]);
    expect(out.httpRoutes[0].spec.parentRefs[1]).toEqual({
      group: "gateway.networking.k8s.io",
      kind: "ListenerSet",
      name: ls.metadata.name,
    });
  });

  it("attaches to the ListenerSet only routes one of its listeners can serve", () => {
    const rule = (host: string) => ({
      host,
      http: { paths: [{ path: "/", pathType: "Prefix", backend: backend() }] },
    });
    const out = convertIngress(
      ingress({
        tls: [{ hosts: ["*.shop.example.com"], secretName: "c" }],
        rules: [rule("a.shop.example.com"), rule("plain.example.com"), rule("*.example.com")],
      }),
      target,
      lookup,
    );
    expect(out.httpRoutes.map(r => r.spec.parentRefs.map(p => p.kind))).toEqual([
      ["Gateway", "ListenerSet"],
      ["Gateway"],
      ["Gateway", "ListenerSet"],
    ]);
    expect(hostsIntersect("", "x.example")).toBe(true);
    expect(hostsIntersect("*.a.com", "*.b.a.com")).toBe(true);
    expect(hostsIntersect("a.com", "*.a.com")).toBe(false);
  });

  it("skips null entries and odd shapes without throwing", () => {
    const odd = {
      rules: [null, { host: 3, http: { paths: [null, "x"] } }, { http: { paths: "x" } }],
      tls: [null, { hosts: "x", secretName: 5 }],
    } as unknown as V1Ingress["spec"];
    expect(() => convertIngress(ingress(odd), target, lookup)).not.toThrow();
    for (const spec of ["x", 1, [], { rules: "x", tls: {} }] as unknown as V1Ingress["spec"][])
      expect(() => convertIngress(ingress(spec), target, lookup)).not.toThrow();
  });

  it("leaves an Ingress with validation problems out entirely", () => {
    const out = convertIngress(
      ingress({
        rules: [{ http: { paths: [{ path: "/(.*)", pathType: "Prefix", backend: backend() }] } }],
        tls: [{ secretName: "c" }],
      }),
      target,
      lookup,
    );
    expect(out.httpRoutes).toEqual([]);
    expect(out.listenerSets).toEqual([]);
    expect(out.problems).toHaveLength(1);
  });

  it("reports duplicate paths and splits long hosts into routes of at most 16 rules", () => {
    const paths = Array.from({ length: MAX_RULES_PER_ROUTE + 2 }, (_, i) => ({
      path: `/p${i}`,
      pathType: "Prefix",
      backend: backend(),
    }));
    const out = convertIngress(
      ingress({ rules: [{ host: "a.example", http: { paths: [...paths, paths[0]] } }] }),
      target,
      lookup,
    );
    expect(out.problems).toEqual([
      expect.objectContaining({
        path: `spec.rules[0].http.paths[${paths.length}]`,
        message: expect.stringMatching(/duplicates spec.rules\[0\].http.paths\[0\]/),
      }),
    ]);
    expect(out.httpRoutes.map(r => r.spec.rules.length)).toEqual([MAX_RULES_PER_ROUTE, 2]);
    expect(new Set(out.httpRoutes.map(r => r.metadata.name)).size).toBe(2);
  });
});
