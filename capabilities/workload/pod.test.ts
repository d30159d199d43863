import { bootstrapConfig, checkConfig, MANAGEMENT_SERVER } from "../caddy/management";
import { sealConfig } from "../caddy/seal";
import { createAuthority, generateKeyPair } from "../pki/pki";
import {
  ADMIN_SOCKET,
  bootstrapConfigMapData,
  lastGoodKey,
  podManagementSpec,
  proxyContainer,
  proxyVolumes,
  RESERVED_PORTS,
  TMP_DIR,
} from "./pod";

const ca = createAuthority({
  commonName: "CA",
  keys: generateKeyPair(),
  notBefore: new Date("2026-11-21T00:00:00Z"),
  lifetimeDays: 10,
});
if (!ca.ok) throw new Error(ca.error);
const spec = podManagementSpec(ca.value.certificatePem);

describe("proxy pod pieces", () => {
  it("share one management spec across pods: pod IP from the environment, admin on a unix socket, cert files from the Secret", () => {
    expect(spec).toMatchObject({
      listenAddress: "{env.KENGINE_POD_IP}:19443",
      adminAddress: "unix//tmp/kengine-admin.sock",
      readinessAddress: ":19080",
      serverCertificate: {
        kind: "files",
        certificateFile: "/etc/kengine/management/tls.crt",
        keyFile: "/etc/kengine/management/tls.key",
      },
    });
    const boot = bootstrapConfig(spec);
    expect(boot.ok && checkConfig(boot.value, spec).ok).toBe(true);
    if (boot.ok) {
      const data = bootstrapConfigMapData(boot.value);
      expect(Object.keys(data)).toEqual(["caddy.json"]);
      expect(data["caddy.json"]).not.toMatch(/PRIVATE KEY/);
      expect(JSON.parse(data["caddy.json"]!).apps.http.servers[MANAGEMENT_SERVER].listen).toEqual([
        "{env.KENGINE_POD_IP}:19443",
      ]);
    }
  });

  it("probe readiness on the port only pushed configs open", () => {
    const c = proxyContainer({ image: "kengine/proxy:dev" });
    expect(c.command).toEqual(["caddy", "run", "--config", "/etc/kengine/bootstrap/caddy.json"]);
    expect(c.readinessProbe?.httpGet).toEqual({ path: "/ready", port: 19080 });
    expect(c.env?.find(e => e.name === "KENGINE_POD_IP")?.valueFrom?.fieldRef?.fieldPath).toBe(
      "status.podIP",
    );
    expect(c.ports?.find(p => p.name === "admin")?.containerPort).toBe(19443);
    const boot = bootstrapConfig(spec);
    expect(boot.ok && JSON.stringify(boot.value).includes(":19080")).toBe(false);
    const sealed = boot.ok ? sealConfig(JSON.stringify(boot.value), spec) : undefined;
    expect(sealed?.ok && sealed.value.bytes.toString().includes('"listen":[":19080"]')).toBe(true);
  });

  it("start from the last-good Secret's file when it is there (caddy --resume), else from the bootstrap", () => {
    const key = lastGoodKey({ image: "kengine/proxy:dev", flavor: "Bundled" });
    expect(key).toMatch(/^config-[0-9a-f]{12}\.json$/);
    const c = proxyContainer({ image: "kengine/proxy:dev", lastGoodKey: key });
    expect(c.command).toEqual([
      "caddy",
      "run",
      "--config",
      "/etc/kengine/bootstrap/caddy.json",
      "--resume",
    ]);
    // Caddy resumes from $XDG_CONFIG_HOME/caddy/autosave.json: the mounted key
    expect(c.env?.find(e => e.name === "XDG_CONFIG_HOME")?.value).toBe("/etc/kengine/last-good");
    expect(c.volumeMounts).toContainEqual({
      name: "last-good",
      mountPath: "/etc/kengine/last-good/caddy",
      readOnly: true,
    });
    expect(proxyVolumes("web", key)).toContainEqual({
      name: "last-good",
      secret: {
        secretName: "web-kengine-last-good",
        optional: true,
        items: [{ key, path: "autosave.json" }],
        defaultMode: 0o440,
      },
    });
    // another image, command or flavour: another key (a config is kept for the build that took it)
    const keys = new Set([
      key,
      lastGoodKey({ image: "kengine/proxy:dev2", flavor: "Bundled" }),
      lastGoodKey({ image: "kengine/proxy:dev", flavor: "Caddy" }),
      lastGoodKey({ image: "kengine/proxy:dev", command: ["kengine"], flavor: "Bundled" }),
    ]);
    expect(keys.size).toBe(4);
  });

  it("mount the per-Gateway Secret and ConfigMap, and keep Caddy's files in emptyDirs", () => {
    expect(proxyVolumes("web")).toEqual([
      { name: "management-tls", secret: { secretName: "web-kengine-admin", defaultMode: 0o440 } },
      { name: "bootstrap", configMap: { name: "web-kengine-bootstrap" } },
      { name: "data", emptyDir: {} },
      { name: "tmp", emptyDir: {} },
    ]);
    expect(RESERVED_PORTS).toEqual([2019, 19443, 19080]);
  });

  it("put the admin socket in the pod's own /tmp emptyDir, which only the proxy container mounts", () => {
    expect(ADMIN_SOCKET).toBe(`unix/${TMP_DIR}/kengine-admin.sock`);
    const tmp = proxyContainer({ image: "kengine" }).volumeMounts!.filter(
      m => m.mountPath === TMP_DIR,
    );
    expect(tmp).toEqual([{ name: "tmp", mountPath: TMP_DIR }]);
    expect(proxyVolumes("web").find(v => v.name === "tmp")).toEqual({
      name: "tmp",
      emptyDir: {},
    });
  });
});
