import {
  checkIngressHost,
  checkIngressPath,
  ingressAnnotationWarnings,
  ingressProblems,
} from "./ingress";
import { denialMessage } from "./message";

const svc = (port: { number?: number; name?: string } = { number: 80 }, name = "web") => ({
  service: { name, port },
});
const ingress = (spec: unknown, annotations?: Record<string, string>) =>
  ({ metadata: { annotations }, spec }) as Parameters<typeof ingressProblems>[0];

describe("ingressProblems", () => {
  it("accepts a plain Ingress: hosts, wildcards, all three path types, named ports, tls", () => {
    expect(
      ingressProblems(
        ingress({
          defaultBackend: svc({ name: "http" }),
          rules: [
            {
              host: "*.example.com",
              http: {
                paths: [
                  { path: "/", pathType: "Prefix", backend: svc() },
                  { path: "/exact", pathType: "Exact", backend: svc({ name: "http-alt" }) },
                  { pathType: "ImplementationSpecific", backend: svc() },
                ],
              },
            },
            { http: { paths: [{ path: "/a/b/", pathType: "Prefix", backend: svc() }] } },
          ],
          tls: [{ hosts: ["*.example.com", "example.com"], secretName: "cert" }],
        }),
      ),
    ).toEqual([]);
  });

  it("refuses resource backends with a reason, and backends without exactly one port", () => {
    const problems = ingressProblems(
      ingress({
        defaultBackend: { resource: { apiGroup: "k8s.example.com", kind: "Bucket", name: "b" } },
        rules: [
          {
            http: {
              paths: [
                { path: "/", pathType: "Prefix", backend: svc({}) },
                { path: "/x", pathType: "Prefix", backend: svc({ number: 80, name: "http" }) },
                { path: "/y", pathType: "Prefix", backend: svc({ number: 70000 }) },
                { path: "/z", pathType: "Prefix", backend: svc({ name: "Not_A_Port" }) },
              ],
            },
          },
        ],
      }),
    );
    expect(problems.map(p => p.path)).toEqual([
      "spec.defaultBackend.resource",
      "spec.rules[0].http.paths[0].backend.service.port",
      "spec.rules[0].http.paths[1].backend.service.port",
      "spec.rules[0].http.paths[2].backend.service.port.number",
      "spec.rules[0].http.paths[3].backend.service.port.name",
    ]);
    expect(problems[0].message).toMatch(/resource backends are not supported/);
    expect(denialMessage("Ingress", "ns", "i", problems)).toMatch(
      /^Ingress ns\/i cannot be run by the Kengine proxy: spec.defaultBackend.resource: /,
    );
  });

  it("reports problems in tls hosts with their field path", () => {
    const problems = ingressProblems(ingress({ tls: [{ hosts: ["ok.example", "a.*.b"] }] }));
    expect(problems.map(p => p.path)).toEqual(["spec.tls[0].hosts[1]"]);
  });

  it("never throws on odd shapes", () => {
    for (const spec of [null, 1, "x", [], { rules: "x" }, { rules: [null, 1, { http: 3 }] }])
      expect(() => ingressProblems(ingress(spec))).not.toThrow();
    expect(ingressProblems(ingress({ rules: [{ http: { paths: [null, {}] } }] }))).toHaveLength(2);
  });
});

describe("checkIngressHost", () => {
  it.each([
    ["Example.com", /not a DNS label/],
    ["10.0.0.1", /IP addresses/],
    ["example.com:80", /ports/],
    ["*", /leave host empty/],
    ["a.*.com", /whole first label/],
    ["*foo.com", /whole first label/],
    ["-a.com", /not a DNS label/],
  ])("refuses %s", (host, message) => {
    expect(checkIngressHost("h", host)).toEqual([
      expect.objectContaining({ path: "h", message: expect.stringMatching(message) }),
    ]);
  });
  it.each(["example.com", "*.example.com", "a-b.c", "x"])("accepts %s", host => {
    expect(checkIngressHost("h", host)).toEqual([]);
  });
});

describe("checkIngressPath", () => {
  it("refuses unknown types, relative paths and regex-looking paths", () => {
    expect(checkIngressPath("p", "/", "Regex")[0].path).toBe("p.pathType");
    expect(checkIngressPath("p", "/", undefined)[0].path).toBe("p.pathType");
    expect(checkIngressPath("p", "foo", "Prefix")[0].message).toMatch(/start with/);
    expect(checkIngressPath("p", undefined, "Exact")[0].message).toMatch(/start with/);
    for (const path of ["/api/(.*)", "/foo/*", "/v[12]", "/a$", "/x.+"])
      expect(checkIngressPath("p", path, "ImplementationSpecific")[0].message).toMatch(
        /regular expression/,
      );
    expect(checkIngressPath("p", "/a b", "Prefix")[0].message).toMatch(/URL path/);
  });
  it("accepts plain paths, and an empty ImplementationSpecific path", () => {
    expect(checkIngressPath("p", "/a/b-c/~d%20", "Exact")).toEqual([]);
    expect(checkIngressPath("p", "", "ImplementationSpecific")).toEqual([]);
    expect(checkIngressPath("p", undefined, "ImplementationSpecific")).toEqual([]);
  });
});

describe("ingressAnnotationWarnings", () => {
  it("warns about every other controller's annotation, sorted, and not about the class", () => {
    expect(
      ingressAnnotationWarnings(
        ingress(
          {},
          {
            "nginx.ingress.kubernetes.io/rewrite-target": "/",
            "kubernetes.io/ingress.class": "kengine",
            "nginx.ingress.kubernetes.io/app-root": "/x",
            "example.com/mine": "1",
          },
        ),
      ),
    ).toEqual([
      expect.stringMatching(/^metadata.annotations\["nginx.ingress.kubernetes.io\/app-root"\]: /),
      expect.stringMatching(/rewrite-target.*not implemented/),
    ]);
  });
});
