/**
 * Listeners with an automatic certificate, translated from whole snapshots: the status says
 * what the ACME manager last wrote in the name's Secret (pending, the CA's error word for word,
 * the renewal time), the certificate is served once it is there, and the HTTP-01 answers go
 * first on the port-80 listeners covering the name, never elsewhere.
 */
import fc from "fast-check";
import { createAuthority, generateKeyPair, issueServerCertificate } from "../pki/pki";
import { Result } from "../result";
import { KubeObject, snapshotOf } from "../snapshot";
import {
  ACME_ISSUER_OPTION,
  ACME_LISTENERSET_MESSAGE,
  AcmeAnnotation,
  acmeSecretLabels,
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
const PARAMS_REF = { group: "gateway.kengine.io", kind: "KengineParameters" };
/** The class's parameters declare issuer `le`, granted to their own namespace (shop). */
const PARAMETERS = {
  apiVersion: "gateway.kengine.io/v1alpha1",
  kind: "KengineParameters",
  metadata: { name: "platform", namespace: "shop" },
  spec: { acme: { issuers: [{ name: "le", server: "https://acme.example/dir" }] } },
} as KubeObject;
const CLASS = {
  apiVersion: GW,
  kind: "GatewayClass",
  metadata: { name: "kengine" },
  spec: {
    controllerName: "kengine.io/gateway-controller",
    parametersRef: { ...PARAMS_REF, name: "platform", namespace: "shop" },
  },
} as KubeObject;
/** The Secret the ACME manager writes for `hostname` in `namespace` (labels and name annotation). */
const managerSecret = (
  namespace: string,
  hostname: string,
  annotations: Record<string, string>,
  cert: boolean,
  labels: Record<string, string> = acmeSecretLabels("certificate"),
): KubeObject =>
  ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: acmeSecretName(hostname),
      namespace,
      labels,
      annotations: { [AcmeAnnotation.name]: hostname, ...annotations },
    },
    type: "kubernetes.io/tls",
    data: cert
      ? {
          "tls.crt": Buffer.from(crt).toString("base64"),
          "tls.key": Buffer.from(key).toString("base64"),
        }
      : { "tls.crt": "", "tls.key": "" },
  }) as KubeObject;
const objects = (
  hostname: string,
  secret?: { annotations: Record<string, string>; cert: boolean },
  http80Host?: string,
): KubeObject[] => [
  CLASS,
  PARAMETERS,
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
  ...(secret ? [managerSecret("shop", hostname, secret.annotations, secret.cert)] : []),
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
    const [gc, params, gw] = objects(NAME) as [
      KubeObject,
      KubeObject,
      KubeObject & { spec: object },
    ];
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
    const t = translate(snapshotOf([gc, params, gateway, set]));
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

  /** Every HTTP-01 answer in a Gateway's IR: hostname, token and body. */
  const answersIn = (ir: ReturnType<typeof translate>["gateways"][number] | undefined) =>
    (ir?.httpServers ?? []).flatMap(server =>
      server.listeners.flatMap(l =>
        l.routes.flatMap(r =>
          r.action.type === "respond" &&
          r.match.path?.value.startsWith("/.well-known/acme-challenge/")
            ? [
                {
                  port: server.port,
                  hostname: r.match.hostname,
                  token: r.match.path.value.slice("/.well-known/acme-challenge/".length),
                  body: (r.action as { body?: string }).body,
                },
              ]
            : [],
        ),
      ),
    );
  const challenge = (token: string) => ({
    [AcmeAnnotation.state]: "Pending",
    [AcmeAnnotation.challenges]: JSON.stringify({ [token]: `${token}.thumb` }),
  });
  /** A tenant's ListenerSet on the platform's Gateway, one listener. */
  const listenerSet = (ns: string, name: string, listener: object): KubeObject =>
    ({
      apiVersion: GW,
      kind: "ListenerSet",
      metadata: { name, namespace: ns, generation: 1 },
      spec: { parentRef: { name: "gw", namespace: "shop" }, listeners: [listener] },
    }) as KubeObject;
  /** The platform's Gateway (shop/gw) open to ListenerSets from every namespace. */
  const sharedGateway = (objs: KubeObject[]): KubeObject[] =>
    objs.map(o =>
      o.kind === "Gateway"
        ? ({
            ...o,
            spec: {
              ...(o as KubeObject & { spec: object }).spec,
              allowedListeners: { namespaces: { from: "All" } },
            },
          } as KubeObject)
        : o,
    );

  it("serves no tenant answer for the platform's name: a ListenerSet listener and a tenant Secret (the takeover)", () => {
    const takeover = [
      listenerSet("team", "take", {
        name: "take",
        protocol: "HTTPS",
        port: 8443,
        hostname: NAME,
        tls: { options: { [ACME_ISSUER_OPTION]: "anything" } },
      }),
      // the class's own issuer, granted to the Gateway's namespace
      listenerSet("team", "take-le", {
        name: "take-le",
        protocol: "HTTPS",
        port: 8444,
        hostname: NAME,
        tls: { options: { [ACME_ISSUER_OPTION]: "le" } },
      }),
      listenerSet("team", "plain", { name: "plain", protocol: "HTTP", port: 80, hostname: NAME }),
      // even with the manager's labels: it is not in the Gateway's namespace
      managerSecret("team", NAME, challenge("tenant"), false),
    ];
    // The Gateway has no ACME listener for the name: nothing is answered at all.
    const [gc, params, gw] = objects(NAME) as KubeObject[];
    const bare = {
      ...gw,
      spec: {
        gatewayClassName: "kengine",
        listeners: [{ name: "http", protocol: "HTTP", port: 80 }],
        allowedListeners: { namespaces: { from: "All" } },
      },
    } as KubeObject;
    const none = translate(snapshotOf([gc!, params!, bare, ...takeover]));
    expect(answersIn(none.gateways[0])).toEqual([]);
    // The Gateway orders the name itself: only its own answer, on every port-80 listener.
    const own = translate(
      snapshotOf([
        ...sharedGateway(objects(NAME, { annotations: challenge("platform"), cert: false })),
        ...takeover,
      ]),
    );
    const answers = answersIn(own.gateways[0]);
    expect(answers.length).toBeGreaterThan(0);
    expect(new Set(answers.map(a => a.token))).toEqual(new Set(["platform"]));
    const ls = own.statuses.listenerSets.find(x => x.name === "take")!;
    expect(ls.listeners[0]!.conditions.find(c => c.type === "ResolvedRefs")).toMatchObject({
      status: "False",
      reason: "InvalidCertificateRef",
      message: ACME_LISTENERSET_MESSAGE,
    });
  });

  it("reads answers and certificates only from the Secret the manager writes (labels and name)", () => {
    for (const [labels, named] of [
      [{}, NAME],
      [{ "gateway.kengine.io/acme": "certificate" }, NAME],
      [acmeSecretLabels("certificate"), "other.example.com"],
    ] as const) {
      const secret = managerSecret("shop", NAME, challenge("tok"), true, labels);
      const meta = (secret as KubeObject & { metadata: { annotations: Record<string, string> } })
        .metadata;
      meta.annotations[AcmeAnnotation.name] = named;
      const r = https([...objects(NAME), secret]);
      expect(answersIn(r.ir)).toEqual([]);
      expect(r.ir.certificates).toEqual([]);
      expect(r.resolved).toMatchObject({ status: "False", reason: "InvalidCertificateRef" });
      expect(r.resolved.message).toBe(
        `Secret shop/${acmeSecretName(NAME)} exists but was not written by the controller (no labels gateway.kengine.io/acme: certificate, app.kubernetes.io/managed-by: kengine-gateway): it is neither served nor overwritten; delete it to let the controller order the name`,
      );
    }
  });

  it("gives a Gateway outside the issuer's grant no certificate and no answer, and says so", () => {
    const granted = (allowedNamespaces?: object) =>
      ({
        ...PARAMETERS,
        metadata: { name: "platform", namespace: "infra" },
        spec: {
          acme: {
            issuers: [
              {
                name: "le",
                server: "https://acme.example/dir",
                ...(allowedNamespaces && { allowedNamespaces }),
              },
            ],
          },
        },
      }) as KubeObject;
    const cls = {
      ...CLASS,
      spec: {
        controllerName: "kengine.io/gateway-controller",
        parametersRef: { ...PARAMS_REF, name: "platform", namespace: "infra" },
      },
    } as KubeObject;
    const world = (p: KubeObject) => [
      cls,
      p,
      ...objects(NAME, { annotations: challenge("tok"), cert: true }).slice(2),
    ];
    const refused = https(world(granted()));
    expect(refused.resolved).toMatchObject({
      status: "False",
      reason: "RefNotPermitted",
      message:
        "ACME issuer le of KengineParameters infra/platform is not granted to namespace shop (allowedNamespaces from: Same, namespace infra only): reference a certificate, or ask the platform team to grant the issuer",
    });
    expect(refused.ir.certificates).toEqual([]);
    expect(answersIn(refused.ir)).toEqual([]);
    const allowed = https(world(granted({ from: "All" })));
    expect(allowed.resolved.status).toBe("True");
    expect(answersIn(allowed.ir).map(a => a.token)).toContain("tok");
  });

  it("does not accept a Gateway whose own parameters declare issuers (InvalidParameters)", () => {
    const [gc, params, gw] = objects(NAME) as [
      KubeObject,
      KubeObject,
      KubeObject & { spec: object },
    ];
    const own = {
      apiVersion: "gateway.kengine.io/v1alpha1",
      kind: "KengineParameters",
      metadata: { name: "mine", namespace: "shop" },
      spec: { acme: { issuers: [{ name: "le", server: "https://127.0.0.1:1/dir" }] } },
    } as KubeObject;
    const gateway = {
      ...gw,
      spec: { ...gw.spec, infrastructure: { parametersRef: { ...PARAMS_REF, name: "mine" } } },
    } as KubeObject;
    const t = translate(snapshotOf([gc, params, own, gateway]));
    expect(t.gateways).toEqual([]);
    const accepted = t.statuses.gateways[0]!.conditions.find(c => c.type === "Accepted")!;
    expect(accepted).toMatchObject({ status: "False", reason: "InvalidParameters" });
    expect(accepted.message).toMatch(
      /KengineParameters shop\/mine sets what only the GatewayClass's parameters may: spec\.acme: is platform-owned: ACME issuers come only from the GatewayClass's parameters/,
    );
  });

  it("answers only the Gateway's own names from its own namespace, whatever tenants add (property)", () => {
    const hosts = [NAME, "api.example.com", "tenant.example.org"];
    const tenantNs = ["team-a", "team-b"];
    const tenantObject = fc.oneof(
      fc.record({
        kind: fc.constant("ListenerSet" as const),
        ns: fc.constantFrom(...tenantNs),
        host: fc.constantFrom(...hosts),
        port: fc.constantFrom(80, 443, 8443),
        issuer: fc.constantFrom("le", "anything"),
      }),
      fc.record({
        kind: fc.constant("Secret" as const),
        ns: fc.constantFrom(...tenantNs),
        host: fc.constantFrom(...hosts),
        labelled: fc.boolean(),
        token: fc.stringMatching(/^[A-Za-z0-9_-]{1,12}$/),
      }),
    );
    fc.assert(
      fc.property(fc.array(tenantObject, { maxLength: 8 }), tenants => {
        const objs = sharedGateway(
          objects(NAME, { annotations: challenge("platform"), cert: false }),
        );
        tenants.forEach((t, i) => {
          if (t.kind === "Secret")
            objs.push(
              managerSecret(
                t.ns,
                t.host,
                challenge(t.token),
                false,
                t.labelled ? acmeSecretLabels("certificate") : {},
              ),
            );
          else
            objs.push(
              listenerSet(t.ns, `ls-${i}`, {
                name: `l${i}`,
                protocol: t.port === 80 ? "HTTP" : "HTTPS",
                port: t.port,
                hostname: t.host,
                ...(t.port !== 80 && { tls: { options: { [ACME_ISSUER_OPTION]: t.issuer } } }),
              }),
            );
        });
        const answers = answersIn(translate(snapshotOf(objs)).gateways[0]);
        for (const a of answers)
          expect(a).toMatchObject({ port: 80, hostname: NAME, token: "platform" });
      }),
      { numRuns: 100 },
    );
  });
});
