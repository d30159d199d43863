import { createAuthority, generateKeyPair, issueClientCertificate } from "../pki/pki";
import { snapshotOf } from "../snapshot";
import type { KubeObject } from "../snapshot";
import { translate } from "../translate";
import { externalEndpoints } from "./endpoints";
import { externalChannel, splitCertificates } from "./external";
import { planGateway } from "./plan";

const now = new Date("2026-11-21T10:00:00Z");
const notBefore = new Date("2026-11-20T00:00:00Z");
const ca = (cn: string) => {
  const r = createAuthority({
    commonName: cn,
    keys: generateKeyPair(),
    notBefore,
    lifetimeDays: 30,
  });
  if (!r.ok) throw new Error(r.error);
  return r.value;
};
const userCa = ca("user admin CA");
const controllerCa = ca("controller CA");
const client = (() => {
  const r = issueClientCertificate(userCa, {
    commonName: "controller",
    keys: generateKeyPair(),
    notBefore,
    lifetimeDays: 10,
  });
  if (!r.ok) throw new Error(r.error);
  return r.value;
})();
const b64 = (s: string) => Buffer.from(s).toString("base64");
const secret = (name: string, data: Record<string, string>) => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { namespace: "apps", name },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
});
const goodSecret = secret("admin-client", {
  "tls.crt": client.certificatePem,
  "tls.key": client.privateKey.reveal(),
  "ca.crt": userCa.certificatePem,
});
const objects = (extra: object[] = []) =>
  [
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "GatewayClass",
      metadata: { name: "kengine" },
      spec: { controllerName: "kengine.io/gateway-controller" },
    },
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "Gateway",
      metadata: { namespace: "apps", name: "edge", uid: "g1" },
      spec: {
        gatewayClassName: "kengine",
        listeners: [{ name: "http", port: 80, protocol: "HTTP" }],
        infrastructure: {
          parametersRef: { group: "gateway.kengine.io", kind: "KengineParameters", name: "byo" },
        },
      },
    },
    {
      apiVersion: "gateway.kengine.io/v1alpha1",
      kind: "KengineParameters",
      metadata: { namespace: "apps", name: "byo" },
      spec: { mode: "External", external: { clientCertificateSecretName: "admin-client" } },
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        namespace: "apps",
        name: "my-proxies",
        labels: { "gateway.kengine.io/owning-gateway": "edge" },
      },
      spec: { type: "LoadBalancer" },
      status: { loadBalancer: { ingress: [{ ip: "127.20.0.9" }] } },
    },
    {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        namespace: "apps",
        name: "my-proxies-x1",
        labels: { "kubernetes.io/service-name": "my-proxies" },
      },
      ports: [
        { name: "http", port: 80 },
        { name: "admin", port: 19443 },
      ],
      endpoints: [
        { addresses: ["10.244.0.7"], targetRef: { kind: "Pod", name: "p-b", uid: "ub" } },
        { addresses: ["10.244.0.6"], targetRef: { kind: "Pod", name: "p-a", uid: "ua" } },
        {
          addresses: ["10.244.0.8"],
          conditions: { terminating: true },
          targetRef: { kind: "Pod", name: "p-c", uid: "uc" },
        },
      ],
    },
    ...extra,
  ] as unknown as KubeObject[];

const plan = (extra: object[] = []) => {
  const snapshot = snapshotOf(objects(extra));
  const ir = translate(snapshot, { controllerName: "kengine.io/gateway-controller" }).gateways[0]!;
  return planGateway({ ir, snapshot, ca: controllerCa, now });
};

describe("bring-your-own proxies", () => {
  it("finds the pods behind the owning Services, not terminating ones", () => {
    const eps = externalEndpoints(snapshotOf(objects()), "apps", "edge");
    expect(eps.map(e => [e.pod, e.address, e.port, e.service])).toEqual([
      ["p-a", "10.244.0.6", 19443, "my-proxies"],
      ["p-b", "10.244.0.7", 19443, "my-proxies"],
    ]);
    expect(externalEndpoints(snapshotOf(objects()), "apps", "other")).toEqual([]);
  });

  it("plans pushes with the named credentials and provisions nothing", () => {
    const p = plan([goodSecret]);
    expect(p.manifests).toEqual([]);
    expect(p.serving).toBeUndefined();
    expect(p.configProblem).toBeUndefined();
    expect(p.addresses).toEqual([{ type: "IPAddress", value: "127.20.0.9", routability: "" }]);
    expect(p.secrets).toEqual(["apps/admin-client"]);
    expect(p.targets.map(t => t.endpoint)).toEqual([
      {
        name: "apps/p-a",
        address: "10.244.0.6",
        port: 19443,
        serverName: "p-a.my-proxies.apps.svc",
        channel: p.channel!.key,
      },
      {
        name: "apps/p-b",
        address: "10.244.0.7",
        port: 19443,
        serverName: "p-b.my-proxies.apps.svc",
        channel: p.channel!.key,
      },
    ]);
    // the pushed management listener trusts the user's CA, not the controller's
    const config = JSON.parse(p.targets[0]!.config.bytes.toString("utf8"));
    const trusted =
      config.apps.http.servers["kengine-management"].tls_connection_policies[0]
        .client_authentication.ca.trusted_ca_certs;
    expect(trusted).toEqual([
      splitCertificates(userCa.certificatePem).pems[0]!.replace(/-----[A-Z ]+-----|\s/g, ""),
    ]);
    // what we may have provisioned before is removed only if it is ours
    expect(p.stale.map(s => `${s.kind}/${s.name}/${s.onlyIfOurs}`)).toEqual([
      "Deployment/edge-kengine/true",
      "DaemonSet/edge-kengine/true",
      "Service/edge-kengine/true",
      "Service/edge-kengine-admin/true",
      "Secret/edge-kengine-admin/true",
      "ConfigMap/edge-kengine-bootstrap/true",
      "Secret/edge-kengine-last-good/true",
      "PodDisruptionBudget/edge-kengine/true",
      "NetworkPolicy/edge-kengine/true",
    ]);
  });

  it("names the Secret problem instead of pushing", () => {
    const missing = plan();
    expect(missing.targets).toEqual([]);
    expect(missing.configProblem).toBe(
      "Secret apps/admin-client (admin client certificate) not found",
    );
    expect(missing.secrets).toEqual(["apps/admin-client"]);
    const other = ca("other");
    const mismatched = plan([
      secret("admin-client", {
        "tls.crt": client.certificatePem,
        "tls.key": other.privateKey.reveal(),
        "ca.crt": userCa.certificatePem,
      }),
    ]);
    expect(mismatched.configProblem).toBe(
      "Secret apps/admin-client: tls.key does not match tls.crt",
    );
    const noCa = plan([
      secret("admin-client", {
        "tls.crt": client.certificatePem,
        "tls.key": client.privateKey.reveal(),
      }),
    ]);
    expect(noCa.configProblem).toBe("Secret apps/admin-client ca.crt is missing");
  });

  it("takes the CA bundle from caSecretName when set, several certificates allowed", () => {
    const snapshot = snapshotOf([
      secret("admin-client", {
        "tls.crt": client.certificatePem,
        "tls.key": client.privateKey.reveal(),
      }),
      secret("admin-ca", { "ca.crt": userCa.certificatePem + controllerCa.certificatePem }),
    ] as never);
    const r = externalChannel(
      snapshot,
      "apps",
      { clientCertificateSecretName: "admin-client", caSecretName: "admin-ca" },
      now,
    );
    expect(r.ok && r.value.caPems.length).toBe(2);
    expect(r.ok && r.value.secrets).toEqual(["apps/admin-client", "apps/admin-ca"]);
    expect(externalChannel(snapshot, "apps", {}, now)).toEqual({
      ok: false,
      error:
        "KengineParameters mode External needs external.clientCertificateSecretName (the admin channel's client certificate)",
    });
  });

  it("says which Service is missing", () => {
    const p = plan([goodSecret].concat()).serviceExists;
    expect(p).toBe(true);
    const snapshot = snapshotOf(objects([goodSecret]).filter(o => o.kind !== "Service"));
    const ir = translate(snapshot, { controllerName: "kengine.io/gateway-controller" })
      .gateways[0]!;
    const q = planGateway({ ir, snapshot, ca: controllerCa, now });
    expect(q.serviceExists).toBe(false);
    expect(q.noServiceMessage).toMatch(
      /^no Service labelled gateway.kengine.io\/owning-gateway=edge in namespace apps/,
    );
  });
});
