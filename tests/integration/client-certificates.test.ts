/**
 * Gateway spec.tls through real Caddy, with real certificates made here (capabilities/proxies/
 * pki.ts): a Gateway whose HTTPS listener on 443 (no hostname) requires a client certificate from CA
 * "clients" (frontend default, AllowValidOnly), whose listener on 8443 asks for one and takes
 * any (perPort, AllowInsecureFallback), and whose backend clientCertificateRef is presented to
 * a node HTTPS backend (BackendTLSPolicy) that itself requires a client certificate from CA
 * "gateway". Run on the Bundled proxy and on Caddy 2.8 as the Kengine flavour: the frontend
 * checks are stock Caddy on both; the backend certificate needs our transport (Bundled only:
 * Kengine proxies reach the backend without it, which refuses them, 502). On the Bundled proxy
 * once more with every CA (the clients' and the backend's) in a ClusterTrustBundle instead of a
 * ConfigMap (Gateway API v1.7 feature ClusterTrustBundle). Loopback only.
 */
import { createServer as createHTTPSServer, Server as HTTPSServer } from "node:https";
import { AddressInfo } from "node:net";
import { TLSSocket } from "node:tls";
import {
  Authority,
  Issued,
  createAuthority,
  generateKeyPair,
  issueClientCertificate,
  issueServerCertificate,
} from "../../capabilities/pki/pki";
import { KubeObject, snapshotOf } from "../../capabilities/snapshot";
import { translate } from "../../capabilities/translate";
import type { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { Caddy, loadGateway, startCaddy } from "../support/caddy";
import { withProxyFlavor } from "../support/flavor";
import { ClientCertificate, httpsGet } from "../support/https";
import { withLoopbackEndpoints } from "../support/loopback";
import { listenerPortOffset } from "../support/ports";

const LOCAL = "127.0.0.1";
const PORT_OFFSET = listenerPortOffset();
const HOST = "app.test";

const NOT_BEFORE = new Date(Date.now() - 60_000);
const validity = (lifetimeDays = 1) => ({ notBefore: NOT_BEFORE, lifetimeDays });
const unwrap = <T>(r: { ok: true; value: T } | { ok: false; error: string }): T => {
  if (!r.ok) throw new Error(r.error);
  return r.value;
};
const authority = (commonName: string): Authority =>
  unwrap(createAuthority({ commonName, keys: generateKeyPair(), ...validity(2) }));
const server = (ca: Authority, name: string): Issued =>
  unwrap(
    issueServerCertificate(ca, {
      commonName: name,
      dnsNames: [name],
      keys: generateKeyPair(),
      ...validity(),
    }),
  );
const client = (ca: Authority, commonName: string): Issued =>
  unwrap(issueClientCertificate(ca, { commonName, keys: generateKeyPair(), ...validity() }));
const pair = (i: Issued): ClientCertificate => ({
  cert: i.certificatePem,
  key: i.privateKey.reveal(),
});
const b64 = (s: string): string => Buffer.from(s).toString("base64");

// Clients of the Gateway, a CA the Gateway does not trust, the Gateway's own serving
// certificate, the backend's CA and serving certificate, and the CA the backend trusts for
// the Gateway's client certificate.
const clientsCA = authority("clients");
const strangersCA = authority("strangers");
const servingCA = authority("serving");
const backendCA = authority("backend");
const gatewayCA = authority("gateway");
const trusted = pair(client(clientsCA, "trusted client"));
const stranger = pair(client(strangersCA, "stranger"));
const listenerCert = server(servingCA, HOST);
const backendCert = server(backendCA, "backend.internal");
const gatewayClient = client(gatewayCA, "the gateway");

/** Where the CA certificates are: ConfigMaps (ca.crt) or ClusterTrustBundles. */
type Trust = "ConfigMap" | "ClusterTrustBundle";

function objects(trust: Trust = "ConfigMap"): KubeObject[] {
  const ns = "default";
  const cm = (name: string, pem: string) =>
    trust === "ConfigMap"
      ? {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name, namespace: ns },
          data: { "ca.crt": pem },
        }
      : {
          apiVersion: "certificates.k8s.io/v1beta1",
          kind: "ClusterTrustBundle",
          metadata: { name },
          spec: { trustBundle: pem },
        };
  const caRef = (name: string) =>
    trust === "ConfigMap"
      ? { group: "", kind: "ConfigMap", name }
      : { group: "certificates.k8s.io", kind: "ClusterTrustBundle", name };
  const secret = (name: string, i: Issued) => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: ns },
    type: "kubernetes.io/tls",
    data: { "tls.crt": b64(i.certificatePem), "tls.key": b64(i.privateKey.reveal()) },
  });
  const tlsListener = (name: string, port: number, hostname?: string) => ({
    name,
    port,
    protocol: "HTTPS",
    ...(hostname && { hostname }),
    tls: { certificateRefs: [{ name: "serving" }] },
  });
  return [
    {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: ns, labels: { "kubernetes.io/metadata.name": ns } },
    },
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "GatewayClass",
      metadata: { name: "kengine", generation: 1 },
      spec: { controllerName: "kengine.io/gateway-controller" },
    },
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "Gateway",
      metadata: { name: "mtls", namespace: ns, generation: 1 },
      spec: {
        gatewayClassName: "kengine",
        tls: {
          backend: { clientCertificateRef: { name: "gateway-client" } },
          frontend: {
            default: {
              validation: {
                caCertificateRefs: [caRef("clients")],
              },
            },
            perPort: [
              {
                port: 8443,
                tls: {
                  validation: {
                    mode: "AllowInsecureFallback",
                    caCertificateRefs: [caRef("clients")],
                  },
                },
              },
            ],
          },
        },
        listeners: [tlsListener("strict", 443), tlsListener("fallback", 8443, HOST)],
      },
    },
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: {
        name: "app",
        namespace: ns,
        generation: 1,
        creationTimestamp: "2026-01-01T00:00:00Z",
      },
      spec: {
        parentRefs: [{ name: "mtls" }],
        rules: [{ backendRefs: [{ name: "secure", port: 443 }] }],
      },
    },
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "BackendTLSPolicy",
      metadata: { name: "secure", namespace: ns, generation: 1 },
      spec: {
        targetRefs: [{ group: "", kind: "Service", name: "secure" }],
        validation: {
          caCertificateRefs: [caRef("backend-ca")],
          hostname: "backend.internal",
        },
      },
    },
    cm("clients", clientsCA.certificatePem),
    cm("backend-ca", backendCA.certificatePem),
    secret("serving", listenerCert),
    secret("gateway-client", gatewayClient),
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "secure", namespace: ns },
      spec: { ports: [{ name: "https", port: 443, targetPort: 8443 }] },
    },
    {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: "secure-1",
        namespace: ns,
        labels: { "kubernetes.io/service-name": "secure" },
      },
      addressType: "IPv4",
      ports: [{ name: "https", port: 8443, protocol: "TCP" }],
      endpoints: [{ addresses: ["127.0.0.51"], conditions: { ready: true } }],
    },
  ] as KubeObject[];
}

/** The backend: HTTPS, requires a client certificate from CA "gateway", names it in its answer. */
async function backend(servers: HTTPSServer[]): Promise<number> {
  const s = createHTTPSServer(
    {
      cert: backendCert.certificatePem,
      key: backendCert.privateKey.reveal(),
      ca: gatewayCA.certificatePem,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ client: peer?.subject?.CN ?? null }));
    },
  );
  servers.push(s);
  await new Promise<void>(r => s.listen(0, LOCAL, () => r()));
  return (s.address() as AddressInfo).port;
}

const RUNS: { flavor: ProxyFlavor; peer: "caddy" | "caddy-2.8"; trust: Trust }[] = [
  { flavor: "Bundled", peer: "caddy", trust: "ConfigMap" },
  { flavor: "Kengine", peer: "caddy-2.8", trust: "ConfigMap" },
  { flavor: "Bundled", peer: "caddy", trust: "ClusterTrustBundle" },
];

describe.each(RUNS)(
  "client certificates on the $flavor proxy, CAs in $trust",
  ({ flavor, peer, trust }) => {
    let caddy: Caddy | undefined;
    const servers: HTTPSServer[] = [];
    const strict = 443 + PORT_OFFSET;
    const fallback = 8443 + PORT_OFFSET;
    const get = (port: number, cert?: ClientCertificate) => httpsGet(port, HOST, HOST, "/", cert);

    beforeAll(async () => {
      caddy = await startCaddy({ name: `client-certs-${peer}-${trust}`, peer });
      const base = flavor === "Bundled" ? objects(trust) : withProxyFlavor(objects(trust), flavor);
      const out = await withLoopbackEndpoints(base, () => backend(servers), { host: LOCAL });
      const result = translate(snapshotOf(out));
      const status = result.statuses.gateways.find(g => g.name === "mtls")!;
      const resolved = status.conditions.find(c => c.type === "ResolvedRefs");
      expect(resolved?.status).toBe(flavor === "Bundled" ? "True" : "False");
      expect(status.conditions.find(c => c.type === "InsecureFrontendValidationMode")?.status).toBe(
        "True",
      );
      await loadGateway(caddy, result.gateways[0]!, LOCAL);
    }, 120_000);

    afterAll(async () => {
      await caddy?.stop();
      await Promise.all(servers.map(s => new Promise(r => s.close(r))));
    });

    it("AllowValidOnly: a client certificate from the trusted CA gets through", async () => {
      const r = await get(strict, trusted);
      if (flavor === "Bundled") {
        expect(r.status).toBe(200);
        // The backend saw the Gateway's own client certificate (spec.tls.backend).
        expect(JSON.parse(r.body)).toEqual({ client: "the gateway" });
      } else {
        // Kengine cannot present it; the backend refuses the proxy (the Gateway's status says so).
        expect(r.status).toBe(502);
      }
    });

    it("AllowValidOnly: no certificate, or one from another CA, is refused in the handshake", async () => {
      await expect(get(strict)).rejects.toThrow();
      await expect(get(strict, stranger)).rejects.toThrow();
    });

    it("AllowValidOnly: a Host other than the SNI is served by a listener without hostname (no strict SNI-Host check)", async () => {
      const r = await httpsGet(strict, HOST, `www.${HOST}`, "/", trusted);
      expect(r.status).toBe(flavor === "Bundled" ? 200 : 502);
    });

    it("AllowInsecureFallback: trusted, untrusted and no certificate all get through", async () => {
      const want = flavor === "Bundled" ? 200 : 502;
      expect((await get(fallback, trusted)).status).toBe(want);
      expect((await get(fallback, stranger)).status).toBe(want);
      expect((await get(fallback)).status).toBe(want);
    });
  },
);
