import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { createAuthority, generateKeyPair } from "../capabilities/pki/pki";
import {
  CA_PLACEHOLDER,
  OWNING_GATEWAY_LABEL,
  certManagerTemplates,
  exampleFiles,
  proxyTemplates,
} from "./proxy-templates";

type Obj = {
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; ownerReferences?: unknown };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
};

const ca = (() => {
  const r = createAuthority({
    commonName: "test CA",
    keys: generateKeyPair(),
    notBefore: new Date(Date.now() - 60_000),
    lifetimeDays: 2,
  });
  if (!r.ok) throw new Error(r.error);
  return r.value;
})();

const render = (kind: "Deployment" | "DaemonSet") =>
  proxyTemplates({
    gateway: "edge",
    namespace: "apps",
    kind,
    listeners: [
      { port: 80, protocol: "HTTP" },
      { port: 53, protocol: "UDP" },
    ],
    caPem: ca.certificatePem,
  }) as unknown as Obj[];

const find = (objs: Obj[], kind: string, name?: string) =>
  objs.find(o => o.kind === kind && (name === undefined || o.metadata.name === name))!;

describe("bring-your-own proxy templates", () => {
  it.each(["Deployment", "DaemonSet"] as const)(
    "%s: both Services carry the owning-gateway label; the admin one has the port named admin",
    kind => {
      const objs = render(kind);
      const workload = find(objs, kind);
      expect(workload).toBeDefined();
      const services = objs.filter(o => o.kind === "Service");
      expect(services.map(s => s.metadata.labels?.[OWNING_GATEWAY_LABEL])).toEqual([
        "edge",
        "edge",
      ]);
      const admin = find(objs, "Service", "edge-proxy-admin");
      expect(admin.spec).toMatchObject({
        clusterIP: "None",
        publishNotReadyAddresses: true,
        ports: [{ name: "admin", port: 19443 }],
      });
      // The data-plane Service does not expose the management port.
      const data = find(objs, "Service", "edge-proxy");
      expect((data.spec!.ports as { name: string }[]).map(p => p.name)).toEqual([
        "udp-53",
        "tcp-80",
      ]);
    },
  );

  it("marks nothing as the controller's: no managed-by label, no owner reference", () => {
    for (const o of render("Deployment")) {
      expect(o.metadata.labels?.["app.kubernetes.io/managed-by"]).toBeUndefined();
      expect(o.metadata.ownerReferences).toBeUndefined();
    }
  });

  it("runs the managed proxies' container: readiness on /ready (only in pushed configs), anti-affinity, this setup's Secret and ConfigMap", () => {
    const w = find(render("Deployment"), "Deployment") as unknown as {
      spec: {
        template: {
          spec: {
            affinity: { podAntiAffinity: unknown };
            containers: { readinessProbe: unknown; ports: { name: string }[] }[];
            volumes: { secret?: { secretName: string }; configMap?: { name: string } }[];
          };
        };
      };
    };
    const pod = w.spec.template.spec;
    expect(pod.affinity.podAntiAffinity).toBeDefined();
    expect(pod.containers[0]!.readinessProbe).toMatchObject({
      httpGet: { path: "/ready", port: 19080 },
    });
    expect(pod.containers[0]!.ports.map(p => p.name)).toContain("admin");
    expect(pod.volumes.flatMap(v => v.secret?.secretName ?? [])).toEqual(["edge-proxy-tls"]);
    expect(pod.volumes.flatMap(v => v.configMap?.name ?? [])).toEqual(["edge-proxy-bootstrap"]);
  });

  it("bootstraps with only the mTLS management listener, trusting the given CA, and the admin API on a unix socket in the pod's /tmp emptyDir", () => {
    const objs = render("Deployment");
    const cm = find(objs, "ConfigMap");
    const boot = JSON.parse(cm.data!["caddy.json"]!);
    expect(boot.admin).toEqual({
      listen: "unix//tmp/kengine-admin.sock",
      config: { persist: false },
    });
    expect(Object.keys(boot.apps.http.servers)).toEqual(["kengine-management"]);
    const management = boot.apps.http.servers["kengine-management"];
    expect(management.routes[0].handle[0].upstreams).toEqual([
      { dial: "unix//tmp/kengine-admin.sock" },
    ]);
    // nothing in the templates names a TCP admin address
    for (const file of Object.values(exampleFiles())) expect(file).not.toMatch(/:2019\b/);
    const pod = (
      find(objs, "Deployment") as unknown as {
        spec: {
          template: {
            spec: {
              containers: { volumeMounts: { name: string; mountPath: string }[] }[];
              volumes: { name: string; emptyDir?: object }[];
            };
          };
        };
      }
    ).spec.template.spec;
    const tmp = pod.containers[0]!.volumeMounts.find(m => m.mountPath === "/tmp")!;
    expect(pod.volumes.find(v => v.name === tmp.name)).toEqual({ name: tmp.name, emptyDir: {} });
    const policy = management.tls_connection_policies[0];
    expect(policy.client_authentication).toEqual({
      ca: { provider: "inline", trusted_ca_certs: [ca.certificateDer.toString("base64")] },
      mode: "require_and_verify",
    });
  });

  it("admits the management port only from the controller's pods", () => {
    const np = find(render("Deployment"), "NetworkPolicy") as unknown as {
      spec: { ingress: { from?: unknown[]; ports: { port: number }[] }[] };
    };
    const management = np.spec.ingress.filter(r => r.ports.some(p => p.port === 19443));
    expect(management).toHaveLength(1);
    expect(management[0]!.from).toEqual([
      {
        namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "pepr-system" } },
        podSelector: { matchLabels: { "pepr.dev/controller": "watcher" } },
      },
    ]);
    const open = np.spec.ingress.filter(r => !r.from);
    // the listeners' ports, and the readiness port the kubelet probes
    expect(open.flatMap(r => r.ports.map(p => p.port)).sort((a, b) => a - b)).toEqual([
      53, 80, 19080,
    ]);
  });

  it("names the controller's client certificate Secret in KengineParameters mode External", () => {
    const p = find(render("Deployment"), "KengineParameters");
    expect(p.spec).toEqual({
      mode: "External",
      external: { clientCertificateSecretName: "edge-controller-client" },
    });
    const certs = certManagerTemplates("edge", "apps") as unknown as Obj[];
    const serving = find(certs, "Certificate", "edge-proxy-tls");
    expect(serving.spec!.dnsNames).toEqual([
      "*.edge-proxy-admin.apps.svc",
      "*.edge-proxy-admin.apps.svc.cluster.local",
    ]);
    expect(find(certs, "Certificate", "edge-controller-client").spec!.usages).toContain(
      "client auth",
    );
  });

  it("deploy/proxy/ holds what `npm run templates` renders (run it after changing provisioning)", () => {
    for (const [name, text] of Object.entries(exampleFiles())) {
      const committed = readFileSync(join(__dirname, "..", "deploy", "proxy", name), "utf8");
      expect({ name, text: committed }).toEqual({ name, text });
      if (name !== "cert-manager.yaml") {
        expect(committed).toContain(CA_PLACEHOLDER);
        for (const d of parseAllDocuments(committed)) expect(d.errors).toEqual([]);
      }
    }
  });
});
