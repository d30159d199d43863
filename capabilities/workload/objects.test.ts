import fc from "fast-check";
import { DEFAULT_MANAGEMENT_PORT, PROXY_UID, RESERVED_PORTS } from "./pod";
import {
  GatewayRef,
  KubeManifest,
  proxyDisruptionBudget,
  proxyNetworkPolicy,
  proxyWorkload,
  servicePorts,
} from "./objects";
import { DEFAULT_PROXY_SETTINGS, ProxySettings } from "../provision/settings";

const listeners = fc.array(
  fc.record({
    port: fc.integer({ min: 1, max: 65535 }).filter(p => !RESERVED_PORTS.includes(p)),
    protocol: fc.constantFrom("HTTP", "HTTPS", "TLS", "TCP", "UDP"),
  }),
  { maxLength: 8 },
);
const gateway = (ls: GatewayRef["listeners"]): GatewayRef => ({
  namespace: "apps",
  name: "edge",
  uid: "u-1",
  listeners: ls,
});
const settings = fc.record({
  kind: fc.constantFrom("Deployment" as const, "DaemonSet" as const),
  replicas: fc.integer({ min: 0, max: 1000 }),
});

interface Container {
  securityContext: {
    allowPrivilegeEscalation: boolean;
    readOnlyRootFilesystem: boolean;
    capabilities: { drop: string[]; add?: string[] };
  };
  env: { name: string; value?: string }[];
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpec {
  securityContext: {
    runAsNonRoot: boolean;
    runAsUser: number;
    runAsGroup: number;
    seccompProfile: { type: string };
    sysctls?: { name: string; value: string }[];
  };
  containers: Container[];
  volumes: { name: string; emptyDir?: object }[];
}
const podSpec = (m: KubeManifest) => (m.spec as { template: { spec: PodSpec } }).template.spec;

describe("proxy pods are locked down", () => {
  it("run as a fixed non-root user, read-only, no escalation, only NET_BIND_SERVICE and only for low ports", () => {
    fc.assert(
      fc.property(listeners, settings, (ls, s) => {
        const spec = podSpec(proxyWorkload(gateway(ls), { ...DEFAULT_PROXY_SETTINGS, ...s }));
        const low = ls.some(l => l.port < 1024);
        expect(spec.securityContext).toMatchObject({
          runAsNonRoot: true,
          runAsUser: PROXY_UID,
          runAsGroup: PROXY_UID,
          seccompProfile: { type: "RuntimeDefault" },
        });
        expect(spec.securityContext.runAsUser).toBeGreaterThan(0);
        expect(spec.securityContext.sysctls !== undefined).toBe(low);
        const [c] = spec.containers;
        expect(c!.securityContext).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          runAsNonRoot: true,
          capabilities: { drop: ["ALL"], ...(low ? { add: ["NET_BIND_SERVICE"] } : {}) },
        });
      }),
    );
  });

  it("give every directory Caddy writes to (HOME, XDG_DATA_HOME, /tmp) a writable emptyDir", () => {
    const spec = podSpec(proxyWorkload(gateway([]), DEFAULT_PROXY_SETTINGS));
    const [c] = spec.containers;
    const emptyDirs = new Set(spec.volumes.filter(v => v.emptyDir).map(v => v.name));
    const writable = c!.volumeMounts.filter(m => !m.readOnly);
    // every writable mount is scratch space, never the Secret or the ConfigMap
    expect(writable.every(m => emptyDirs.has(m.name))).toBe(true);
    const dirs = [...c!.env.filter(e => ["HOME", "XDG_DATA_HOME"].includes(e.name))].map(
      e => e.value!,
    );
    expect(dirs).toHaveLength(2);
    for (const d of [...dirs, "/tmp"])
      expect(writable.some(m => d === m.mountPath || d.startsWith(`${m.mountPath}/`))).toBe(true);
    // XDG_CONFIG_HOME holds only Caddy's autosave file, which managed proxies read (the
    // last-good Secret, mounted read-only, `--resume`) and never write (`persist: false`).
    const config = c!.env.find(e => e.name === "XDG_CONFIG_HOME")?.value;
    expect(c!.volumeMounts).toContainEqual(
      expect.objectContaining({ mountPath: `${config}/caddy`, readOnly: true }),
    );
  });
});

describe("proxyDisruptionBudget", () => {
  it("lets at most one proxy go at a time and never blocks a drain for good", () => {
    fc.assert(
      fc.property(settings, s => {
        const settings: ProxySettings = { ...DEFAULT_PROXY_SETTINGS, ...s };
        const pdb = proxyDisruptionBudget(gateway([]), settings).spec as {
          minAvailable?: number;
          maxUnavailable?: number;
          selector: unknown;
        };
        const workload = proxyWorkload(gateway([]), settings).spec as { selector: unknown };
        expect(pdb.selector).toEqual(workload.selector);
        if (s.kind === "Deployment" && s.replicas > 1)
          expect(pdb).toMatchObject({ minAvailable: s.replicas - 1 });
        else expect(pdb).toMatchObject({ maxUnavailable: 1 });
        expect("minAvailable" in pdb && "maxUnavailable" in pdb).toBe(false);
      }),
    );
  });
});

describe("proxyNetworkPolicy", () => {
  interface Rule {
    from?: { namespaceSelector?: unknown; podSelector?: unknown }[];
    ports?: { port: number; protocol: string }[];
  }
  const controller = { namespace: "kengine", podLabels: { app: "controller" } };

  it("opens the listeners' ports to all and the management port to the controller's pods only", () => {
    fc.assert(
      fc.property(listeners, ls => {
        const np = proxyNetworkPolicy(gateway(ls), controller).spec as {
          policyTypes: string[];
          ingress: Rule[];
          podSelector: unknown;
        };
        expect(np.policyTypes).toEqual(["Ingress"]);
        // a rule without ports would open every port
        expect(np.ingress.every(r => (r.ports ?? []).length > 0)).toBe(true);
        const open = np.ingress.filter(r => !r.from).flatMap(r => r.ports!);
        for (const p of servicePorts(ls))
          expect(open).toContainEqual({ port: p.port, protocol: p.protocol });
        const management = np.ingress.filter(r =>
          r.ports!.some(p => p.port === DEFAULT_MANAGEMENT_PORT),
        );
        expect(management).toEqual([
          {
            from: [
              {
                namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kengine" } },
                podSelector: { matchLabels: { app: "controller" } },
              },
            ],
            ports: [{ port: DEFAULT_MANAGEMENT_PORT, protocol: "TCP" }],
          },
        ]);
      }),
    );
  });
});
