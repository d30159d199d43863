/**
 * What the fleet needs certificates for (pure, from whole snapshots): one entry per name and
 * namespace however many listeners and Gateways want it, the issuer from the class's
 * parameters unless the Gateway's own replace it by name, and a clear problem when the issuer
 * is missing or asks for a challenge that is not built. Also the expiry metric per listener.
 */
import { KubeObject, snapshotOf } from "../snapshot";
import { ACME_ISSUER_OPTION, AcmeAnnotation, acmeSecretName } from "../validation/acme";
import { registry } from "../metrics";
import { wantedNames } from "./issuers";
import { AcmeManager } from "./manager";

const GWAPI = "gateway.networking.k8s.io/v1";
const params = (name: string, ns: string, issuers: object[]): KubeObject =>
  ({
    apiVersion: "gateway.kengine.io/v1alpha1",
    kind: "KengineParameters",
    metadata: { name, namespace: ns },
    spec: { acme: { issuers } },
  }) as KubeObject;
const gateway = (name: string, listeners: object[], extra: object = {}): KubeObject =>
  ({
    apiVersion: GWAPI,
    kind: "Gateway",
    metadata: { name, namespace: "shop" },
    spec: { gatewayClassName: "kengine", listeners, ...extra },
    status: { addresses: [{ type: "IPAddress", value: "127.20.0.9" }] },
  }) as KubeObject;
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
const le = { name: "le", server: "https://acme.example/dir", email: "ops@example.com" };

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
    expect(w[0]!.issuer).toMatchObject({ ...le, namespace: "infra" });
    expect(w[0]!.addresses).toEqual(["127.20.0.9"]);
  });

  it("takes the Gateway's own issuer over the class's of the same name", () => {
    const own = { name: "le", server: "https://other.example/dir" };
    const w = wantedNames(
      snapshotOf([
        cls,
        params("platform", "infra", [le]),
        params("mine", "shop", [own]),
        gateway("a", [http80, acme("one", "shop.example.com", "le")], {
          infrastructure: {
            parametersRef: { group: "gateway.kengine.io", kind: "KengineParameters", name: "mine" },
          },
        }),
      ]),
    );
    expect(w[0]!.issuer).toMatchObject({ server: "https://other.example/dir", namespace: "shop" });
  });

  it("says why when the issuer is not declared or wants a challenge that is not built", () => {
    const w = wantedNames(
      snapshotOf([
        cls,
        params("platform", "infra", [{ ...le, name: "alpn", challenge: "tls-alpn-01" }]),
        gateway("a", [
          http80,
          acme("one", "a.example.com", "nope"),
          acme("two", "b.example.com", "alpn"),
        ]),
      ]),
    );
    expect(w.map(x => [x.issuer, x.problem])).toEqual([
      [undefined, expect.stringMatching(/^issuer nope is not declared in the KengineParameters/)],
      [undefined, expect.stringMatching(/tls-alpn-01 .* only http-01 is built/)],
    ]);
  });

  it("publishes the expiry of each listener's certificate, and nothing for others", async () => {
    const notAfter = "2027-01-01T00:00:00Z";
    const secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: acmeSecretName("shop.example.com"),
        namespace: "shop",
        annotations: {
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
