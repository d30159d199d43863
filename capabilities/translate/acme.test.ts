/**
 * Listeners with an automatic certificate, translated from whole snapshots: the status says
 * what the ACME manager last wrote in the name's Secret (pending, the CA's error word for word,
 * the renewal time), the certificate is served once it is there, and the HTTP-01 answers go
 * first on the port-80 listeners covering the name, never elsewhere.
 */
import fc from "fast-check";
import { createAuthority, generateKeyPair, issueServerCertificate } from "../proxies/pki";
import { Result } from "../proxies/result";
import { KubeObject, snapshotOf } from "../snapshot";
import {
  ACME_ISSUER_OPTION,
  ACME_LISTENERSET_MESSAGE,
  AcmeAnnotation,
  acmeSecretName,
} from "../validation/acme";
import { translate } from "./translate";

const NAME = "shop.example.com";
const must = <T>(r: Result<T>): T => {
  if (!r.ok) throw new Error(r.error);
  return r.value;
};
const ca = must(
  createAuthority({
    commonName: "test CA",
    keys: generateKeyPair(),
    notBefore: new Date(),
    lifetimeDays: 3,
  }),
);
const leaf = must(
  issueServerCertificate(ca, {
    commonName: NAME,
    dnsNames: [NAME],
    keys: generateKeyPair(),
    notBefore: new Date(),
    lifetimeDays: 2,
  }),
);
const crt = leaf.certificatePem;
const key = leaf.privateKey.reveal();

const GW = "gateway.networking.k8s.io/v1";
const objects = (
  hostname: string,
  secret?: { annotations: Record<string, string>; cert: boolean },
  http80Host?: string,
): KubeObject[] => [
  {
    apiVersion: GW,
    kind: "GatewayClass",
    metadata: { name: "kengine" },
    spec: { controllerName: "kengine.io/gateway-controller" },
  } as KubeObject,
  {
    apiVersion: GW,
    kind: "Gateway",
    metadata: { name: "gw", namespace: "shop", generation: 1 },
    spec: {
      gatewayClassName: "kengine",
      listeners: [
        { name: "http", protocol: "HTTP", port: 80, ...(http80Host && { hostname: http80Host }) },
        {
          name: "https",
          protocol: "HTTPS",
          port: 443,
          hostname,
          tls: { options: { [ACME_ISSUER_OPTION]: "le" } },
        },
      ],
    },
  } as KubeObject,
  ...(secret
    ? [
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: {
            name: acmeSecretName(hostname),
            namespace: "shop",
            annotations: secret.annotations,
          },
          type: "kubernetes.io/tls",
          data: secret.cert
            ? {
                "tls.crt": Buffer.from(crt).toString("base64"),
                "tls.key": Buffer.from(key).toString("base64"),
              }
            : { "tls.crt": "", "tls.key": "" },
        } as KubeObject,
      ]
    : []),
];

const https = (objs: KubeObject[]) => {
  const t = translate(snapshotOf(objs));
  const l = t.statuses.gateways[0]!.listeners.find(x => x.name === "https")!;
  const c = (type: string) => l.conditions.find(x => x.type === type)!;
  return { t, programmed: c("Programmed"), resolved: c("ResolvedRefs"), ir: t.gateways[0]! };
};

describe("listeners with an ACME certificate", () => {
  it("is pending (Programmed=False, Pending) until the certificate is there, and serves nothing", () => {
    const r = https(objects(NAME));
    expect(r.programmed).toMatchObject({ status: "False", reason: "Pending" });
    expect(r.programmed.message).toMatch(
      /^certificate pending: no ACME order yet for shop\.example\.com/,
    );
    expect(r.resolved.status).toBe("True");
    expect(r.ir.httpServers.some(s => s.port === 443)).toBe(false);
  });

  it("says what the CA said, word for word, when no certificate could be issued", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 200 }), said => {
        const r = https(
          objects(NAME, {
            annotations: { [AcmeAnnotation.state]: "Failed", [AcmeAnnotation.message]: said },
            cert: false,
          }),
        );
        expect(r.resolved).toMatchObject({ status: "False", reason: "InvalidCertificateRef" });
        expect(r.resolved.message).toBe(
          `ACME issuer le could not issue a certificate for ${NAME}: ${said}`,
        );
        expect(r.programmed).toMatchObject({ status: "False", reason: "Invalid" });
      }),
      { numRuns: 50 },
    );
  });

  it("serves the issued certificate and says when it renews; a failing renewal keeps it serving", () => {
    const base = {
      [AcmeAnnotation.issuer]: "le",
      [AcmeAnnotation.renewAt]: "2026-12-01T00:00:00Z",
    };
    const ok = https(
      objects(NAME, { annotations: { ...base, [AcmeAnnotation.state]: "Valid" }, cert: true }),
    );
    expect(ok.programmed.status).toBe("True");
    expect(ok.resolved.message).toMatch(
      /issued by ACME issuer le .*renews at 2026-12-01T00:00:00Z$/,
    );
    expect(ok.ir.certificates.map(c => c.id)).toEqual([`shop/${acmeSecretName(NAME)}`]);
    const failing = https(
      objects(NAME, {
        annotations: {
          ...base,
          [AcmeAnnotation.state]: "Failed",
          [AcmeAnnotation.message]: "connection refused",
        },
        cert: true,
      }),
    );
    expect(failing.programmed.status).toBe("True");
    expect(failing.resolved.status).toBe("True");
    expect(failing.resolved.message).toMatch(
      /renewal failing, the current certificate keeps serving: connection refused$/,
    );
    expect(failing.ir.certificates).toEqual(ok.ir.certificates);
  });

  it("reports a wildcard name as needing DNS-01, which is not supported", () => {
    const r = https(objects("*.example.com"));
    expect(r.resolved).toMatchObject({ status: "False", reason: "InvalidCertificateRef" });
    expect(r.resolved.message).toMatch(/DNS-01.*not supported/);
  });

  it("puts the HTTP-01 answers first on the port-80 listeners that cover the name, and nowhere else", () => {
    const token = "tok_EN-1";
    const answer = `${token}.thumb`;
    for (const [host, covered] of [
      [undefined, true],
      [NAME, true],
      ["*.example.com", true],
      ["other.example.org", false],
    ] as const) {
      const r = https(
        objects(
          NAME,
          {
            annotations: {
              [AcmeAnnotation.state]: "Pending",
              [AcmeAnnotation.challenges]: JSON.stringify({ [token]: answer }),
            },
            cert: false,
          },
          host,
        ),
      );
      const http = r.ir.httpServers.find(s => s.port === 80)!;
      const first = http.listeners[0]!.routes[0];
      const respond = covered ? { type: "respond", status: 200, body: answer } : undefined;
      if (covered) {
        expect(first?.match.path).toEqual({
          type: "Exact",
          value: `/.well-known/acme-challenge/${token}`,
        });
        expect(first?.match.hostname).toBe(NAME);
        expect(first?.action).toEqual(respond);
      } else expect(http.listeners.flatMap(l => l.routes)).toHaveLength(0);
    }
  });

  it("ignores stored answers that are not token-shaped (the annotation is not trusted input)", () => {
    const r = https(
      objects(NAME, {
        annotations: { [AcmeAnnotation.challenges]: JSON.stringify({ "../x": "a b", ok: 7 }) },
        cert: false,
      }),
    );
    expect(r.ir.httpServers.find(s => s.port === 80)!.listeners[0]!.routes).toHaveLength(0);
  });

  it("refuses an issuer on a ListenerSet listener on that listener, not pending for ever", () => {
    const [gc, gw] = objects(NAME) as [KubeObject, KubeObject & { spec: object }];
    const gateway = {
      ...gw,
      spec: { ...gw.spec, allowedListeners: { namespaces: { from: "Same" } } },
    } as KubeObject;
    const set = {
      apiVersion: GW,
      kind: "ListenerSet",
      metadata: { name: "tenant", namespace: "shop", generation: 1 },
      spec: {
        parentRef: { name: "gw" },
        listeners: [
          {
            name: "tls",
            protocol: "HTTPS",
            port: 8443,
            hostname: "tenant.example.com",
            tls: { options: { [ACME_ISSUER_OPTION]: "le" } },
          },
        ],
      },
    } as KubeObject;
    const t = translate(snapshotOf([gc, gateway, set]));
    const ls = t.statuses.listenerSets.find(x => x.name === "tenant")!;
    const resolved = ls.listeners[0]!.conditions.find(c => c.type === "ResolvedRefs")!;
    expect(resolved).toMatchObject({
      status: "False",
      reason: "InvalidCertificateRef",
      message: ACME_LISTENERSET_MESSAGE,
    });
    // The Gateway's own ACME listener is unaffected: still pending its order.
    const own = t.statuses.gateways[0]!.listeners.find(x => x.name === "https")!;
    expect(own.conditions.find(c => c.type === "Programmed")).toMatchObject({ reason: "Pending" });
  });
});
