/**
 * What the fleet needs certificates for (pure, from whole snapshots): one entry per name and
 * namespace however many listeners and Gateways want it; issuers only from the GatewayClass's
 * parameters and only in the namespaces each issuer grants; never a ListenerSet's listener,
 * never a Gateway whose own parameters try to declare issuers, never over a Secret the manager
 * did not write. Also the expiry metric per listener.
 */
import { KubeObject, snapshotOf } from "../snapshot";
import {
  ACME_ISSUER_OPTION,
  AcmeAnnotation,
  acmeSecretLabels,
  acmeSecretName,
} from "../validation/acme";
import { registry } from "../metrics";
import { issuerFor, wantedNames } from "./issuers";
import { AcmeManager } from "./manager";

const GWAPI = "gateway.networking.k8s.io/v1";
const params = (name: string, ns: string, issuers: object[]): KubeObject =>
  ({
    apiVersion: "gateway.kengine.io/v1alpha1",
    kind: "KengineParameters",
    metadata: { name, namespace: ns },
    spec: { acme: { issuers } },
  }) as KubeObject;
const gateway = (
  name: string,
  listeners: object[],
  extra: object = {},
  namespace = "shop",
): KubeObject =>
  ({
    apiVersion: GWAPI,
    kind: "Gateway",
    metadata: { name, namespace },
    spec: { gatewayClassName: "kengine", listeners, ...extra },
    status: { addresses: [{ type: "IPAddress", value: "127.20.0.9" }] },
  }) as KubeObject;
const namespace = (name: string, labels: Record<string, string> = {}): KubeObject =>
  ({ apiVersion: "v1", kind: "Namespace", metadata: { name, labels } }) as KubeObject;
const acme = (name: string, hostname: string, issuer: string) => ({
  name,
  protocol: "HTTPS",
  port: 443,
  hostname,
  tls: { options: { [ACME_ISSUER_OPTION]: issuer } },
});
const http80 = { name: "http", protocol: "HTTP", port: 80 };
const cls = {
  apiVersion: GWAPI,
  kind: "GatewayClass",
  metadata: { name: "kengine" },
  spec: {
    controllerName: "kengine.io/gateway-controller",
    parametersRef: {
      group: "gateway.kengine.io",
      kind: "KengineParameters",
      name: "platform",
      namespace: "infra",
    },
  },
} as KubeObject;
const le = {
  name: "le",
  server: "https://acme.example/dir",
  email: "ops@example.com",
  allowedNamespaces: { from: "All" },
};
const ownParams = (name: string) => ({
  infrastructure: {
    parametersRef: { group: "gateway.kengine.io", kind: "KengineParameters", name },
  },
});

describe("wanted names", () => {
  it("one entry per name and namespace, with every listener that wants it", () => {
    const w = wantedNames(
      snapshotOf([
        cls,
        params("platform", "infra", [le]),
        gateway("a", [
          http80,
          acme("one", "shop.example.com", "le"),
          acme("two", "api.example.com", "le"),
        ]),
        gateway("b", [acme("x", "shop.example.com", "le"), acme("wild", "*.example.com", "le")]),
      ]),
    );
    expect(w.map(x => [x.name, x.secretName, x.listeners, x.http01Port])).toEqual([
      [
        "shop.example.com",
        acmeSecretName("shop.example.com"),
        [
          { gateway: "shop/a", listener: "one" },
          { gateway: "shop/b", listener: "x" },
        ],
        true,
      ],
      [
        "api.example.com",
        acmeSecretName("api.example.com"),
        [{ gateway: "shop/a", listener: "two" }],
        true,
      ],
    ]);
    expect(w[0]!.issuer).toMatchObject({
      name: "le",
      server: le.server,
      email: le.email,
      namespace: "infra",
      parameters: "infra/platform",
    });
    expect(w[0]!.addresses).toEqual(["127.20.0.9"]);
  });

  it("takes issuers from the class only: a Gateway whose own parameters declare one is not ordered for", () => {
    const own = { name: "le", server: "https://tenant.example/dir" };
    const declaring = wantedNames(
      snapshotOf([
        cls,
        params("platform", "infra", [le]),
        params("mine", "shop", [own]),
        gateway("a", [http80, acme("one", "shop.example.com", "le")], ownParams("mine")),
      ]),
    );
    expect(declaring).toEqual([]);
    // Own parameters without spec.acme: the class's issuer, as for any Gateway.
    const plain = wantedNames(
      snapshotOf([
        cls,
        params("platform", "infra", [le]),
        {
          apiVersion: "gateway.kengine.io/v1alpha1",
          kind: "KengineParameters",
          metadata: { name: "mine", namespace: "shop" },
          spec: { proxy: { replicas: 2 } },
        } as KubeObject,
        gateway("a", [http80, acme("one", "shop.example.com", "le")], ownParams("mine")),
      ]),
    );
    expect(plain.map(x => x.issuer.server)).toEqual([le.server]);
  });

  it("grants an issuer to the parameters' namespace by default, to all, or by namespace labels", () => {
    const cases: [object | undefined, string, Record<string, string>, boolean][] = [
      [undefined, "infra", {}, true],
      [undefined, "shop", {}, false],
      [{ from: "Same" }, "shop", {}, false],
      [{ from: "All" }, "shop", {}, true],
      [{ from: "Selector", selector: { matchLabels: { acme: "yes" } } }, "shop", {}, false],
      [
        { from: "Selector", selector: { matchLabels: { acme: "yes" } } },
        "shop",
        { acme: "yes" },
        true,
      ],
      [
        {
          from: "Selector",
          selector: { matchExpressions: [{ key: "team", operator: "In", values: ["a", "b"] }] },
        },
        "shop",
        { team: "c" },
        false,
      ],
    ];
    for (const [grant, ns, labels, granted] of cases) {
      const issuer = { ...le, allowedNamespaces: grant };
      const s = snapshotOf([
        cls,
        params("platform", "infra", [issuer]),
        namespace(ns, labels),
        gateway("a", [http80, acme("one", "shop.example.com", "le")], {}, ns),
      ]);
      expect([grant, ns, wantedNames(s).length]).toEqual([grant, ns, granted ? 1 : 0]);
      const r = issuerFor(s, s.objects.Gateway.get(`${ns}/a`)!, "le");
      if (granted) expect(r.ok).toBe(true);
      else
        expect(r).toEqual({
          ok: false,
          reason: "NotGranted",
          message: expect.stringMatching(
            new RegExp(
              `^ACME issuer le of KengineParameters infra/platform is not granted to namespace ${ns} \\(allowedNamespaces from: (Same, namespace infra only|Selector, .*)\\)`,
            ),
          ),
        });
    }
  });

  it("says why when the issuer is not declared, the class's parameters are unusable or missing", () => {
    const s = snapshotOf([
      cls,
      params("platform", "infra", [le]),
      gateway("a", [http80, acme("one", "a.example.com", "nope")]),
    ]);
    expect(wantedNames(s)).toEqual([]);
    expect(issuerFor(s, s.objects.Gateway.get("shop/a")!, "nope")).toEqual({
      ok: false,
      reason: "NotDeclared",
      message:
        "ACME issuer nope is not declared in KengineParameters infra/platform of GatewayClass kengine (spec.acme.issuers)",
    });
    // Parameters admission would refuse (stored some other way) declare nothing.
    const invalid = snapshotOf([
      cls,
      params("platform", "infra", [{ ...le, challenge: "tls-alpn-01" }]),
      gateway("a", [http80, acme("two", "b.example.com", "le")]),
    ]);
    expect(wantedNames(invalid)).toEqual([]);
    expect(issuerFor(invalid, invalid.objects.Gateway.get("shop/a")!, "le")).toMatchObject({
      ok: false,
      reason: "NotDeclared",
      message: expect.stringMatching(
        /^ACME issuer le is not declared: GatewayClass kengine parametersRef: KengineParameters infra\/platform is invalid: .*tls-alpn-01/,
      ),
    });
    const missing = snapshotOf([cls, gateway("a", [http80, acme("one", "a.example.com", "le")])]);
    expect(issuerFor(missing, missing.objects.Gateway.get("shop/a")!, "le")).toMatchObject({
      ok: false,
      reason: "NotDeclared",
      message: expect.stringMatching(/KengineParameters infra\/platform not found/),
    });
    const bare = snapshotOf([
      { ...cls, spec: { controllerName: "kengine.io/gateway-controller" } } as KubeObject,
      gateway("a", [http80, acme("one", "a.example.com", "le")]),
    ]);
    expect(issuerFor(bare, bare.objects.Gateway.get("shop/a")!, "le")).toMatchObject({
      ok: false,
      reason: "NotDeclared",
      message: expect.stringMatching(/GatewayClass kengine references no KengineParameters/),
    });
  });

  it("never wants a ListenerSet's listener, whatever it names", () => {
    const s = snapshotOf([
      cls,
      params("platform", "infra", [le]),
      gateway("a", [http80], { allowedListeners: { namespaces: { from: "All" } } }),
      {
        apiVersion: GWAPI,
        kind: "ListenerSet",
        metadata: { name: "tenant", namespace: "team" },
        spec: {
          parentRef: { name: "a", namespace: "shop" },
          listeners: [acme("take", "shop.example.com", "le")],
        },
      } as KubeObject,
    ]);
    expect(wantedNames(s)).toEqual([]);
  });

  it("orders nothing over a Secret of the name's place that the manager did not write", () => {
    const foreign = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: acmeSecretName("shop.example.com"),
        namespace: "shop",
        annotations: { [AcmeAnnotation.name]: "shop.example.com" },
      },
    } as KubeObject;
    const objs = [
      cls,
      params("platform", "infra", [le]),
      gateway("a", [http80, acme("one", "shop.example.com", "le")]),
    ];
    expect(wantedNames(snapshotOf([...objs, foreign]))).toEqual([]);
    const ours = {
      ...foreign,
      metadata: { ...foreign.metadata, labels: acmeSecretLabels("certificate") },
    } as KubeObject;
    expect(wantedNames(snapshotOf([...objs, ours]))).toHaveLength(1);
  });

  it("publishes the expiry of each listener's certificate, and nothing for others", async () => {
    const notAfter = "2027-01-01T00:00:00Z";
    const secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: acmeSecretName("shop.example.com"),
        namespace: "shop",
        labels: acmeSecretLabels("certificate"),
        annotations: {
          [AcmeAnnotation.name]: "shop.example.com",
          [AcmeAnnotation.notAfter]: notAfter,
          [AcmeAnnotation.renewAt]: "2026-12-01T00:00:00Z",
        },
      },
      data: { "tls.crt": "eA==", "tls.key": "eA==" },
    } as KubeObject;
    const m = new AcmeManager({
      kube: { request: () => Promise.reject(new Error("no API in this test")) },
      log: { info: () => {}, warn: () => {} },
      namespace: "kengine",
    });
    m.update(
      snapshotOf([
        cls,
        params("platform", "infra", [le]),
        secret,
        gateway("a", [
          http80,
          acme("one", "shop.example.com", "le"),
          acme("two", "api.example.com", "le"),
        ]),
      ]),
      new Date("2026-11-24T00:00:00Z"),
    );
    m.stop();
    const text = await registry.getSingleMetricAsString(
      "kengine_gateway_acme_certificate_expiry_timestamp_seconds",
    );
    const series = text.split("\n").filter(l => !l.startsWith("#") && l.trim() !== "");
    expect(series).toEqual([
      `kengine_gateway_acme_certificate_expiry_timestamp_seconds{gateway="shop/a",listener="one",name="shop.example.com"} ${Date.parse(notAfter) / 1000}`,
    ]);
  });
});
