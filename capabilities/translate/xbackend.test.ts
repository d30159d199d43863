import fc from "fast-check";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseSnapshotYAML } from "../../hack/translate";
import { HTTPRoute, KubeObject, snapshotOf } from "../snapshot";
import { resolveBackend } from "./backends";
import { compileHTTPRoute } from "./routes";
import { translate } from "./translate";

const X = "gateway.networking.x-k8s.io";
const ref = (name: string, namespace?: string) => ({
  group: X,
  kind: "XBackend",
  name,
  ...(namespace && { namespace }),
});
const xbackend = (name: string, spec: Record<string, unknown>, namespace = "default"): KubeObject =>
  ({
    apiVersion: `${X}/v1alpha1`,
    kind: "XBackend",
    metadata: { name, namespace, uid: `uid-${name}` },
    spec,
  }) as KubeObject;
const service = (name: string, selector: Record<string, string>): KubeObject =>
  ({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "default" },
    spec: { selector, ports: [{ name: "http", port: 80, targetPort: 3000 }] },
  }) as KubeObject;
const slice = (svc: string, endpoints: readonly { ip: string; ready: boolean }[]): KubeObject =>
  ({
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: `${svc}-1`,
      namespace: "default",
      labels: { "kubernetes.io/service-name": svc },
    },
    addressType: "IPv4",
    ports: [{ name: "http", port: 3000 }],
    endpoints: endpoints.map(e => ({ addresses: [e.ip], conditions: { ready: e.ready } })),
  }) as KubeObject;

const hostname = fc
  .array(fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/), { minLength: 2, maxLength: 4 })
  .map(parts => parts.join("."));
const port = fc.integer({ min: 1, max: 65535 });

describe("resolveBackend: XBackend", () => {
  it("an ExternalHostname is one upstream hostname:port; TLS to it with its SNI", () => {
    fc.assert(
      fc.property(hostname, port, fc.boolean(), (h, p, tls) => {
        const s = snapshotOf([
          xbackend("b", {
            type: "ExternalHostname",
            externalHostname: { hostname: h },
            port: { number: p },
            ...(tls && {
              tls: {
                mode: "ServerOnly",
                validation: { hostname: h, wellKnownCACertificates: "System" },
              },
            }),
          }),
        ]);
        const r = resolveBackend(s, "HTTPRoute", "default", ref("b"));
        expect(r).toMatchObject({ ok: true, endpoints: [{ address: h, port: p }] });
        expect(r.ok && r.backendTLS).toEqual(
          tls ? { policy: "XBackend default/b", ok: true, tls: { serverName: h } } : undefined,
        );
      }),
    );
  });

  it("an EndpointSelector: the ready pods of the Service with exactly its selector, at its port", () => {
    const ip = fc.integer({ min: 1, max: 250 }).map(n => `10.244.0.${n}`);
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.record({ ip, ready: fc.boolean() }), {
          selector: e => e.ip,
          maxLength: 6,
        }),
        fc.uniqueArray(ip, { maxLength: 3 }),
        port,
        (mine, others, p) => {
          const s = snapshotOf([
            xbackend("b", {
              type: "EndpointSelector",
              endpointSelector: { matchLabels: { app: "web" } },
              port: { number: p },
            }),
            service("web", { app: "web" }),
            slice("web", mine),
            // A narrower selector selects other pods: never used.
            service("web-canary", { app: "web", track: "canary" }),
            slice(
              "web-canary",
              others.map(o => ({ ip: o, ready: true })),
            ),
          ]);
          const r = resolveBackend(s, "HTTPRoute", "default", ref("b"));
          const want = mine
            .filter(e => e.ready)
            .map(e => e.ip)
            .sort()
            .map(address => ({ address, port: p }));
          expect(r).toMatchObject({ ok: true, endpoints: want });
        },
      ),
    );
  });

  it("no Service with the selector, no XBackend, no ReferenceGrant: each says why", () => {
    const s = snapshotOf([
      xbackend("b", {
        type: "EndpointSelector",
        endpointSelector: { matchLabels: { app: "web" } },
        port: { number: 80 },
      }),
      xbackend(
        "far",
        { type: "ExternalHostname", externalHostname: { hostname: "a.b" }, port: { number: 80 } },
        "other",
      ),
    ]);
    expect(resolveBackend(s, "HTTPRoute", "default", ref("b"))).toMatchObject({
      ok: false,
      reason: "BackendNotFound",
      message: expect.stringContaining(
        "no Service in namespace default has the selector {app=web}",
      ),
    });
    expect(resolveBackend(s, "HTTPRoute", "default", ref("nope"))).toMatchObject({
      ok: false,
      reason: "BackendNotFound",
    });
    expect(resolveBackend(s, "HTTPRoute", "default", ref("far", "other"))).toMatchObject({
      ok: false,
      reason: "RefNotPermitted",
    });
  });

  it("protocols: H2C and cleartext GRPC are h2c; TCP only behind L4 routes (never a name); none behind UDPRoute", () => {
    const mk = (protocol: string) =>
      snapshotOf([
        xbackend("b", {
          type: "ExternalHostname",
          externalHostname: { hostname: "a.b" },
          port: { number: 80 },
          protocol,
        }),
      ]);
    expect(resolveBackend(mk("H2C"), "HTTPRoute", "default", ref("b"))).toMatchObject({
      appProtocol: "kubernetes.io/h2c",
    });
    expect(resolveBackend(mk("GRPC"), "GRPCRoute", "default", ref("b"))).toMatchObject({
      appProtocol: "kubernetes.io/h2c",
    });
    expect(resolveBackend(mk("HTTP"), "HTTPRoute", "default", ref("b"))).not.toHaveProperty(
      "appProtocol",
    );
    expect(resolveBackend(mk("TCP"), "HTTPRoute", "default", ref("b"))).toMatchObject({
      ok: false,
      reason: "UnsupportedProtocol",
    });
    // A name is never dialled by the layer-4 proxy: it has no dial guard (egress.ts).
    expect(resolveBackend(mk("TCP"), "TCPRoute", "default", ref("b"))).toMatchObject({
      ok: false,
      reason: "RefNotPermitted",
      message: expect.stringContaining("not supported behind TCPRoutes"),
    });
    expect(resolveBackend(mk("TCP"), "UDPRoute", "default", ref("b"))).toMatchObject({
      ok: false,
      reason: "UnsupportedProtocol",
    });
  });
});

describe("XBackend session persistence", () => {
  const golden = (): KubeObject[] =>
    parseSnapshotYAML(readFileSync(join(__dirname, "../../tests/golden/xbackend.in.yaml"), "utf8"));
  const route = (rules: unknown[]): HTTPRoute =>
    ({
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: { name: "r", namespace: "default", uid: "route-uid" },
      spec: { parentRefs: [{ name: "gw" }], rules },
    }) as HTTPRoute;

  it("is the rule's when the XBackend is its only backendRef and the rule has none", () => {
    const s = snapshotOf(golden());
    const only = compileHTTPRoute(s, route([{ backendRefs: [ref("pods")] }]));
    expect(only.rules[0].session).toEqual({
      mode: "cookie",
      name: "pods-session",
      secret: "0b6f6a3e-2a4b-4d3e-9c1f-1a2b3c4d5e04",
    });
    const own = compileHTTPRoute(
      s,
      route([
        {
          backendRefs: [ref("pods")],
          sessionPersistence: { type: "Header", header: { name: "X-Mine" } },
        },
      ]),
    );
    expect(own.rules[0].session).toMatchObject({
      mode: "header",
      name: "X-Mine",
      secret: "route-uid",
    });
    const two = compileHTTPRoute(s, route([{ backendRefs: [ref("pods"), ref("external")] }]));
    expect(two.rules[0].session).toBeUndefined();
  });

  it("the golden's routes: ResolvedRefs says why an XBackend did not resolve", () => {
    const { routes } = translate(snapshotOf(golden())).statuses;
    const cond = (name: string) =>
      routes.find(r => r.name === name)?.parents[0].conditions.find(c => c.type === "ResolvedRefs");
    expect(cond("xbackends")).toMatchObject({ status: "True" });
    expect(cond("not-permitted")).toMatchObject({ status: "False", reason: "RefNotPermitted" });
    expect(cond("client-and-server")).toMatchObject({
      status: "False",
      reason: "UnsupportedValue",
      message: expect.stringContaining("spec.tls.mode"),
    });
    expect(cond("no-service")).toMatchObject({ status: "False", reason: "BackendNotFound" });
    expect(cond("missing")).toMatchObject({ status: "False", reason: "BackendNotFound" });
  });
});
