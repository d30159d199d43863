/**
 * A managed Gateway's plan and its proxies' serving certificate: the pushed config carries the
 * certificate inline (so a renewal is a new config, pushed to every proxy at once), while the
 * bootstrap config keeps loading the mounted Secret's files (it holds no private key).
 */
import { type ManagementSecretData } from "../workload";
import { X509Certificate } from "node:crypto";
import { isSealed } from "../caddy";
import { createAuthority, generateKeyPair } from "../pki/pki";

import { snapshotOf } from "../snapshot";
import type { KubeObject } from "../snapshot";
import { translate } from "../translate";
import { planGateway, storedServing } from "./plan";

const notBefore = new Date("2026-11-20T00:00:00Z");
const ca = (() => {
  const r = createAuthority({
    commonName: "controller CA",
    keys: generateKeyPair(),
    notBefore,
    lifetimeDays: 3650,
  });
  if (!r.ok) throw new Error(r.error);
  return r.value;
})();
const objects = [
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
    },
  },
  {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      namespace: "apps",
      name: "edge-kengine-admin-x1",
      labels: { "kubernetes.io/service-name": "edge-kengine-admin" },
    },
    ports: [{ name: "admin", port: 19443 }],
    endpoints: [{ addresses: ["10.244.0.6"], targetRef: { kind: "Pod", name: "p-a", uid: "ua" } }],
  },
] as unknown as KubeObject[];

/** The snapshot as it is once the Secret the plan applied came back through the watch. */
const withSecret = (data: ManagementSecretData) =>
  snapshotOf([
    ...objects,
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { namespace: "apps", name: "edge-kengine-admin" },
      data: Object.fromEntries(
        Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
      ),
    } as unknown as KubeObject,
  ]);

const planAt = (snapshot: ReturnType<typeof snapshotOf>, now: Date) => {
  const ir = translate(snapshot, { controllerName: "kengine.io/gateway-controller" }).gateways[0]!;
  return planGateway({ ir, snapshot, ca, now });
};

interface Pushed {
  apps: {
    tls: {
      certificates: {
        load_pem?: { certificate: string; key: string; tags: string[] }[];
        load_files?: unknown[];
      };
    };
  };
}

describe("managed proxies' serving certificate", () => {
  const t0 = new Date("2026-11-21T10:00:00Z");
  const first = planAt(snapshotOf(objects), t0);
  const serving = first.serving!;

  it("is pushed inline in every config, while the bootstrap loads the mounted files", () => {
    expect(first.targets).toHaveLength(1);
    const config = first.targets[0]!.config;
    expect(isSealed(config)).toBe(true);
    const pushed = JSON.parse(config.bytes.toString("utf8")) as Pushed;
    expect(pushed.apps.tls.certificates.load_files).toBeUndefined();
    expect(pushed.apps.tls.certificates.load_pem).toContainEqual({
      certificate: serving["tls.crt"],
      key: serving["tls.key"],
      tags: ["kengine-management"],
    });
    const bootstrap = first.manifests.find(m => m.kind === "ConfigMap")!;
    const text = JSON.stringify(bootstrap);
    expect(text).toContain("load_files");
    expect(text).not.toContain("PRIVATE KEY");
    // the Secret the pods mount holds the same certificate
    const secret = first.manifests.find(m => m.kind === "Secret") as unknown as {
      stringData: Record<string, string>;
    };
    expect(secret.stringData["tls.crt"]).toBe(serving["tls.crt"]);
  });

  it("keeps the config (and its hash) while the certificate is good, and renews it with a new hash", () => {
    const stored = withSecret(serving);
    expect(storedServing(stored, "apps", "edge")).toEqual(serving);
    const later = planAt(stored, new Date("2027-03-01T00:00:00Z"));
    expect(later.serving).toEqual(serving);
    expect(later.desiredHash).toBe(first.desiredHash);

    // two thirds of its year have passed: a new certificate, so a new config for every proxy
    const due = planAt(stored, new Date("2027-08-21T00:00:00Z"));
    expect(due.serving!["tls.crt"]).not.toBe(serving["tls.crt"]);
    expect(
      new Date(new X509Certificate(due.serving!["tls.crt"]).validTo).getTime(),
    ).toBeGreaterThan(new Date("2028-08-01T00:00:00Z").getTime());
    expect(due.desiredHash).not.toBe(first.desiredHash);
    const pushed = JSON.parse(due.targets[0]!.config.bytes.toString("utf8")) as Pushed;
    expect(pushed.apps.tls.certificates.load_pem?.map(e => e.certificate)).toContain(
      due.serving!["tls.crt"],
    );
  });
});

describe("planGateway: the seal follows the proxy flavour", () => {
  const now = new Date("2026-11-21T00:00:00Z");
  const snapshot = snapshotOf(objects);
  const ir = translate(snapshot, { controllerName: "kengine.io/gateway-controller" }).gateways[0]!;
  const serving = planAt(snapshot, now).serving!;
  const pushedHttp = (flavor: "Bundled" | "Caddy" | "Kengine") => {
    const plan = planGateway({ ir: { ...ir, flavor }, snapshot, ca, now, pendingServing: serving });
    return (
      JSON.parse(plan.targets[0]!.config.bytes.toString("utf8")) as {
        apps: { http: { metrics?: object; servers: Record<string, { metrics?: object }> } };
      }
    ).apps.http;
  };
  const traffic = (servers: Record<string, { metrics?: object }>) =>
    Object.entries(servers).filter(([n]) => !n.startsWith("kengine-"));

  it("Bundled and Caddy: app-level metrics (Caddy ≥ 2.10)", () => {
    for (const flavor of ["Bundled", "Caddy"] as const) {
      const http = pushedHttp(flavor);
      expect(http.metrics).toEqual({ per_host: true });
      expect(traffic(http.servers).every(([, s]) => s.metrics === undefined)).toBe(true);
    }
  });

  it("Kengine: no apps.http.metrics (Caddy 2.8 refuses the field), metrics on each traffic server", () => {
    const http = pushedHttp("Kengine");
    expect(http.metrics).toBeUndefined();
    expect(traffic(http.servers).length).toBeGreaterThan(0);
    for (const [, s] of traffic(http.servers)) expect(s.metrics).toEqual({});
    expect(http.servers["kengine-management"]!.metrics).toBeUndefined();
  });
});

describe("planGateway: static addresses", () => {
  const now = new Date("2026-11-21T00:00:00Z");
  const serving: ManagementSecretData = planAt(snapshotOf(objects), now).serving!;
  const withAddresses = (addresses: object[], svc?: object) =>
    snapshotOf([
      ...objects.map(o =>
        o.kind === "Gateway"
          ? ({
              ...o,
              spec: { ...(o as unknown as { spec: object }).spec, addresses },
            } as KubeObject)
          : o,
      ),
      ...(svc
        ? [
            {
              apiVersion: "v1",
              kind: "Service",
              metadata: { namespace: "apps", name: "edge-kengine", uid: "s1" },
              ...svc,
            } as unknown as KubeObject,
          ]
        : []),
    ]);
  const plan = (s: ReturnType<typeof snapshotOf>) => {
    const ir = translate(s, { controllerName: "kengine.io/gateway-controller" }).gateways[0]!;
    return planGateway({ ir, snapshot: s, ca, now, pendingServing: serving });
  };
  const lb = (loadBalancerIP: string | undefined, ip: string) => ({
    spec: { type: "LoadBalancer", ...(loadBalancerIP ? { loadBalancerIP } : {}) },
    status: { loadBalancer: { ingress: [{ ip }] } },
  });

  it("requests the address and reports it once assigned", () => {
    const first = plan(withAddresses([{ value: "127.20.250.1" }]));
    const svc = first.manifests.find(
      m => m.kind === "Service" && m.metadata.name === "edge-kengine",
    );
    expect((svc?.spec as { loadBalancerIP?: string }).loadBalancerIP).toBe("127.20.250.1");
    const done = plan(
      withAddresses([{ value: "127.20.250.1" }], lb("127.20.250.1", "127.20.250.1")),
    );
    expect(done.addresses).toEqual([{ type: "IPAddress", value: "127.20.250.1", routability: "" }]);
    expect(done.addressAssignment?.status).toBe("True");
    expect(done.addressProblem).toBeUndefined();
    expect(done.replaceService).toBeUndefined();
  });

  it("re-creates a Service that holds another address than the one now requested", () => {
    const p = plan(withAddresses([{ value: "127.20.250.1" }], lb("192.0.2.1", "127.20.0.4")));
    expect(p.replaceService).toEqual({
      namespace: "apps",
      name: "edge-kengine",
      uid: "s1",
      address: "127.20.250.1",
    });
    expect(p.addressProblem?.reason).toBe("AddressNotAssigned");
    expect(p.addresses).toEqual([]);
    // switching from a dynamic address to the one it already has: kept, no re-creation
    const same = plan(withAddresses([{ value: "127.20.0.4" }], lb(undefined, "127.20.0.4")));
    expect(same.replaceService).toBeUndefined();
  });

  it("a requested address the load balancer did not give: AddressNotUsable, not re-created again", () => {
    const p = plan(withAddresses([{ value: "192.0.2.1" }], lb("192.0.2.1", "127.20.0.4")));
    expect(p.replaceService).toBeUndefined();
    expect(p.addressProblem?.reason).toBe("AddressNotUsable");
    expect(p.addresses).toEqual([]);
  });
});

describe("planGateway: last known good config", () => {
  it("names the sealed config to store, the proxy build's key the pods mount, and what the Secret holds", () => {
    const p = planAt(snapshotOf(objects), notBefore);
    const lastGood = p.lastGood!;
    expect(lastGood.ref).toMatchObject({ namespace: "apps", name: "edge", uid: "g1" });
    expect(lastGood.config?.hash).toBe(p.desiredHash);
    expect(lastGood.config && isSealed(lastGood.config)).toBe(true);
    expect(lastGood.stored).toBeUndefined();
    // the Deployment's pods mount exactly that key of the Secret and resume from it
    const deployment = p.manifests.find(m => m.kind === "Deployment") as unknown as {
      spec: {
        template: {
          spec: {
            containers: { command: string[] }[];
            volumes: { name: string; secret?: { secretName: string; items?: { key: string }[] } }[];
          };
        };
      };
    };
    const pod = deployment.spec.template.spec;
    expect(pod.containers[0]!.command).toContain("--resume");
    expect(pod.volumes.find(v => v.name === "last-good")?.secret).toMatchObject({
      secretName: "edge-kengine-last-good",
      items: [{ key: lastGood.key }],
    });
    // the controller does not apply it with the other manifests: only the writer does
    expect(p.manifests.some(m => m.metadata.name === "edge-kengine-last-good")).toBe(false);

    const stored = snapshotOf([
      ...objects,
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: {
          namespace: "apps",
          name: "edge-kengine-last-good",
          annotations: {
            "gateway.kengine.io/config-hash": "abc",
            "gateway.kengine.io/config-key": lastGood.key,
            "gateway.kengine.io/config-stored": "true",
          },
        },
      } as unknown as KubeObject,
    ]);
    expect(planAt(stored, notBefore).lastGood?.stored).toEqual({
      hash: "abc",
      key: lastGood.key,
      stored: true,
    });
  });
});

describe("planGateway: the proxies' ports", () => {
  it("exposes the ports only an attached ListenerSet opens, without rolling the pods", () => {
    const now = new Date("2026-11-21T00:00:00Z");
    const s = snapshotOf([
      ...objects.map(o =>
        o.kind === "Gateway"
          ? ({
              ...o,
              spec: {
                ...(o as unknown as { spec: object }).spec,
                allowedListeners: { namespaces: { from: "All" } },
              },
            } as KubeObject)
          : o,
      ),
      {
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "ListenerSet",
        metadata: { namespace: "team", name: "extra" },
        spec: {
          parentRef: {
            group: "gateway.networking.k8s.io",
            kind: "Gateway",
            name: "edge",
            namespace: "apps",
          },
          listeners: [{ name: "alt", port: 8080, protocol: "HTTP" }],
        },
      } as unknown as KubeObject,
    ]);
    const ir = translate(s, { controllerName: "kengine.io/gateway-controller" }).gateways[0]!;
    expect(ir.httpServers.map(h => h.port)).toEqual([80, 8080]);
    const plan = planGateway({ ir, snapshot: s, ca, now });
    const manifest = (kind: string) =>
      plan.manifests.find(
        m => m.kind === kind && m.metadata.name === "edge-kengine",
      ) as unknown as {
        spec: {
          ports?: { port: number }[];
          template?: { spec: { containers: { ports: { containerPort: number }[] }[] } };
        };
      };
    expect(manifest("Service").spec.ports!.map(p => p.port)).toEqual([80, 8080]);
    const policy = plan.manifests.find(m => m.kind === "NetworkPolicy") as unknown as {
      spec: { ingress: { ports: { port: number }[] }[] };
    };
    expect(policy.spec.ingress[0]!.ports.map(p => p.port)).toEqual(
      expect.arrayContaining([80, 8080]),
    );
    // The pod template names the Gateway's own listeners only: a ListenerSet coming and
    // going (an Ingress's tls) changes the Service, not the pods.
    const containerPorts = manifest("Deployment")
      .spec.template!.spec.containers[0]!.ports.map(p => p.containerPort)
      .filter(p => p < 19000);
    expect(containerPorts).toEqual([80]);
  });
});
