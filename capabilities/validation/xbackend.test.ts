import fc from "fast-check";
import { XBackend } from "../snapshot";
import { readXBackend, xbackendProblems } from "./xbackend";

const xb = (spec: Record<string, unknown>): XBackend =>
  ({
    apiVersion: "gateway.networking.x-k8s.io/v1alpha1",
    kind: "XBackend",
    metadata: { name: "b", namespace: "default", uid: "uid-1" },
    spec,
  }) as XBackend;
const paths = (spec: Record<string, unknown>): string[] =>
  xbackendProblems(xb(spec)).map(p => p.path);

const label = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/);
const hostname = fc
  .array(fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/), { minLength: 2, maxLength: 4 })
  .map(parts => parts.join("."));
const port = fc.integer({ min: 1, max: 65535 });

describe("readXBackend", () => {
  it("an ExternalHostname: its hostname and port, nothing else", () => {
    fc.assert(
      fc.property(hostname, port, (h, p) => {
        const r = readXBackend(
          xb({ type: "ExternalHostname", externalHostname: { hostname: h }, port: { number: p } }),
        );
        expect(r).toEqual({
          ok: true,
          value: { target: { type: "ExternalHostname", hostname: h }, port: p },
        });
      }),
    );
  });

  it("an EndpointSelector: its labels; its session persistence with the XBackend's uid as key", () => {
    fc.assert(
      fc.property(fc.dictionary(label, label, { minKeys: 1, maxKeys: 4 }), port, (labels, p) => {
        const r = readXBackend(
          xb({
            type: "EndpointSelector",
            endpointSelector: { matchLabels: labels },
            port: { number: p },
            sessionPersistence: { type: "Cookie", cookie: { name: "s" } },
          }),
        );
        expect(r).toEqual({
          ok: true,
          value: {
            target: { type: "EndpointSelector", matchLabels: labels },
            port: p,
            session: { mode: "cookie", name: "s", secret: "uid-1" },
          },
        });
      }),
    );
  });

  it("ServerOnly TLS: the validation hostname, CA references and SANs as written", () => {
    const r = readXBackend(
      xb({
        type: "ExternalHostname",
        externalHostname: { hostname: "a.example.com" },
        port: { number: 443 },
        protocol: "WSS",
        tls: {
          mode: "ServerOnly",
          validation: {
            hostname: "a.example.com",
            caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "ca" }],
          },
        },
      }),
    );
    expect(r).toMatchObject({
      ok: true,
      value: {
        protocol: "WSS",
        tls: {
          hostname: "a.example.com",
          caCertificateRefs: [{ kind: "ConfigMap", name: "ca" }],
          subjectAltNames: [],
        },
      },
    });
  });

  it("refuses what the proxy cannot run, each with its field", () => {
    const base = { type: "ExternalHostname", externalHostname: { hostname: "a.example.com" } };
    expect(
      paths({
        ...base,
        port: { number: 443 },
        tls: {
          mode: "ClientAndServer",
          clientCertificateRef: { name: "c" },
          validation: { hostname: "a.example.com", wellKnownCACertificates: "System" },
        },
      }),
    ).toEqual(["spec.tls.mode"]);
    expect(
      paths({
        ...base,
        port: { number: 443 },
        tls: {
          mode: "ServerOnly",
          validation: { hostname: "a.example.com", wellKnownCACertificates: "example.com/mine" },
        },
      }),
    ).toEqual(["spec.tls.validation.wellKnownCACertificates"]);
    expect(
      paths({
        type: "ExternalHostname",
        externalHostname: { hostname: "10.0.0.1" },
        port: { number: 80 },
      }),
    ).toEqual(["spec.externalHostname.hostname"]);
    expect(paths({ ...base, port: { number: 80 }, protocol: "WSS" })).toEqual(["spec.tls"]);
    expect(
      paths({ ...base, port: { number: 80 }, sessionPersistence: { type: "Cookie", cookie: {} } }),
    ).toEqual(["spec.sessionPersistence"]);
    expect(
      paths({
        type: "EndpointSelector",
        endpointSelector: { matchLabels: { app: "a" } },
        port: { number: 80 },
        sessionPersistence: { type: "Header", header: { name: "x_session" } },
      }),
    ).toEqual(["spec.sessionPersistence.header.name"]);
    expect(
      paths({
        type: "EndpointSelector",
        endpointSelector: { matchLabels: {} },
        port: { number: 80 },
      }),
    ).toEqual(["spec.endpointSelector.matchLabels"]);
  });

  it("refuses an ExternalHostname the proxy would read as itself, naming field and reason", () => {
    for (const [hostname, why] of [
      ["localhost", /loopback name/],
      ["admin.localhost.", /loopback name/],
      ["IP6-LOOPBACK", /loopback name/],
      ["2130706433", /read as an IP address/],
      ["0x7f000001", /read as an IP address/],
      ["127.1", /read as an IP address/],
    ] as const) {
      const problems = xbackendProblems(
        xb({ type: "ExternalHostname", externalHostname: { hostname }, port: { number: 2019 } }),
      );
      expect(problems).toEqual([
        {
          path: "spec.externalHostname.hostname",
          value: hostname,
          message: expect.stringMatching(why),
        },
      ]);
    }
  });

  it("never throws on any shape; a refusal always names a problem", () => {
    const field = fc.oneof(fc.anything(), fc.string(), fc.constant(undefined));
    fc.assert(
      fc.property(
        fc.record({
          type: fc.constantFrom("ExternalHostname", "EndpointSelector", "Other"),
          externalHostname: fc.oneof(field, fc.record({ hostname: field })),
          endpointSelector: fc.oneof(field, fc.record({ matchLabels: field })),
          port: fc.oneof(field, fc.record({ number: fc.oneof(port, field) })),
          protocol: field,
          tls: fc.oneof(
            field,
            fc.record({
              mode: field,
              validation: fc.oneof(field, fc.record({ hostname: field, caCertificateRefs: field })),
            }),
          ),
          sessionPersistence: field,
        }),
        spec => {
          const r = readXBackend(xb(spec));
          if (!r.ok) expect(r.problems.length).toBeGreaterThan(0);
        },
      ),
    );
  });
});
