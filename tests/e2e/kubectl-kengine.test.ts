/**
 * `kubectl kengine` as a user runs it: the plugin built by `npm run build:cli` (hack/build-cli.ts)
 * put on PATH, found and run by the real kubectl (`kubectl kengine …`), against the local cluster
 * with the module under `pepr dev` and a Gateway of two proxy pods (tests/support/demo-gateway.ts).
 *
 * status: a healthy Gateway exits 0 with 2/2 proxies; explain: a served route names its
 * listener and proxies, a route whose parent has no such listener is not served, says why and
 * exits 1; config: what the proxies last accepted (the last-good Secret), and with --object only
 * that route's parts; top: two scrapes of the controller's /metrics.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { GATEWAY, applyDemoGateway, settled } from "../support/demo-gateway";
import { createNamespace, deleteNamespace, eventually, kubectlOk } from "../support/kube";
import { PeprDev, startModule } from "../support/module";
import { kubeconfigPath, kubectlBin, localDir, repoRoot } from "../support/paths";

const DOMAIN = "kk.test";
const pluginDir = join(localDir, "kubectl-plugin");

/** `kubectl kengine ARGS` with the plugin on PATH, as a user's shell runs it. */
function kengine(args: readonly string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(kubectlBin, ["kengine", ...args], {
    encoding: "utf8",
    timeout: 120_000,
    env: {
      ...process.env,
      KUBECONFIG: kubeconfigPath,
      PATH: `${pluginDir}:${dirname(process.execPath)}:${process.env.PATH ?? ""}`,
    },
  });
  return {
    code: r.status ?? -1,
    stdout: r.stdout ?? "",
    stderr: r.stderr ?? r.error?.message ?? "",
  };
}

describe("kubectl kengine", () => {
  let module: PeprDev | undefined;
  let ns = "";
  let dir = "";

  beforeAll(async () => {
    const built = spawnSync(
      join(repoRoot, "node_modules", ".bin", "tsx"),
      [join(repoRoot, "hack", "build-cli.ts"), relative(repoRoot, pluginDir)],
      { cwd: repoRoot, encoding: "utf8", timeout: 120_000 },
    );
    if (built.status !== 0) throw new Error(`build-cli failed: ${built.stderr}`);
    dir = mkdtempSync(join(tmpdir(), "kg-kubectl-kengine-"));
    ns = createNamespace("kubectl-kengine");
    module = await startModule();
    applyDemoGateway(ns, dir, DOMAIN);
    await settled(ns);
  }, 420_000);

  afterAll(async () => {
    if (ns) deleteNamespace(ns);
    await module?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    rmSync(pluginDir, { recursive: true, force: true });
  });

  test("status: a healthy Gateway, its proxies 2/2, exit code 0", async () => {
    const report = await eventually("status to report the Gateway healthy", () => {
      const r = kengine(["status", "-n", ns, GATEWAY, "-o", "json"]);
      return r.code === 0
        ? (JSON.parse(r.stdout) as { ok: boolean; gateways: unknown[] })
        : undefined;
    });
    expect(report.ok).toBe(true);
    expect(report.gateways).toEqual([
      expect.objectContaining({
        name: GATEWAY,
        proxies: expect.objectContaining({ synced: 2, total: 2 }),
      }),
    ]);
    const table = kengine(["status", "-n", ns]);
    expect(table.code).toBe(0);
    expect(table.stdout.split("\n")[0]).toMatch(/^NAME\s+CLASS\s+PROGRAMMED\s+PROXIES/);
    expect(table.stdout).toMatch(new RegExp(`${GATEWAY}\\s+kengine\\s+True\\s+2/2`));
  });

  test("explain: a served route names its listener; an unattached one says why and exits 1", async () => {
    const served = kengine(["explain", "-n", ns, "echo", "-o", "json"]);
    expect(served.code).toBe(0);
    const ok = JSON.parse(served.stdout) as {
      ok: boolean;
      rows: { hostname: string; served: boolean; listener?: string }[];
    };
    expect(ok.ok).toBe(true);
    expect(ok.rows).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          hostname: `stable.${DOMAIN}`,
          served: true,
          listener: expect.stringContaining(`${ns}/${GATEWAY}/`),
        }),
      ]),
    );

    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "HTTPRoute",
        metadata: { name: "lost", namespace: ns },
        spec: {
          parentRefs: [{ name: GATEWAY, sectionName: "no-such-listener" }],
          hostnames: [`lost.${DOMAIN}`],
          rules: [{ backendRefs: [{ name: "echo", port: 8080 }] }],
        },
      }),
    );
    const lost = await eventually("explain to see the route's stored status", () => {
      const r = kengine(["explain", "-n", ns, "httproute/lost"]);
      return r.code === 1 && /NoMatchingParent/.test(r.stdout) ? r : undefined;
    });
    expect(lost.stdout).toContain(`lost.${DOMAIN}`);
  });

  test("config: what the proxies accepted, and only one route's parts with --object", async () => {
    const report = await eventually("config from the last-good Secret", () => {
      const r = kengine(["config", "-n", ns, GATEWAY, "-o", "json"]);
      if (r.code !== 0) return undefined;
      const parsed = JSON.parse(r.stdout) as { source: string; proxies: { synced: boolean }[] };
      return parsed.source === "running" ? parsed : undefined;
    });
    expect(report.proxies).toHaveLength(2);
    expect(report.proxies.every(p => p.synced)).toBe(true);
    const one = kengine(["config", "-n", ns, GATEWAY, "--object", `HTTPRoute/${ns}/echo`]);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain(`stable.${DOMAIN}`);
    expect(one.stdout).toContain(`# from HTTPRoute ${ns}/echo`);
    expect(one.stdout).not.toContain(`lost.${DOMAIN}`);
    // no private key is ever printed
    expect(kengine(["config", "-n", ns, GATEWAY]).stdout).not.toMatch(/PRIVATE KEY/);
  });

  test("top: requests per Gateway from two scrapes of the controller's /metrics", () => {
    const r = kengine([
      "top",
      "gateways",
      "--window",
      "2s",
      "--metrics-url",
      "https://localhost:3000/metrics",
      "--insecure-skip-tls-verify",
      "-o",
      "json",
    ]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { by: string; windowSeconds: number; rows: unknown[] };
    expect(report.by).toBe("gateways");
    expect(report.windowSeconds).toBe(2);
    expect(Array.isArray(report.rows)).toBe(true);
  });
});
