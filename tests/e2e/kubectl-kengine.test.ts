/**
 * `kubectl kengine` as a user runs it: the plugin built by `npm run build:cli` (hack/build-cli.ts)
 * put on PATH, found and run by the real kubectl (`kubectl kengine …`), against the local cluster
 * with the module under `pepr dev` and a Gateway of two proxy pods (tests/support/demo-gateway.ts).
 *
 * status: a healthy Gateway exits 0 with 2/2 proxies; a listener with a missing certificate
 * makes it exit 1 and names the listener and reason. explain: a served route names its listener
 * and proxies; a route whose parent has no such listener, a route shadowed by an older one with
 * the same match, and a route the proxies refuse (a BackendTLSPolicy CA with a negative serial:
 * Node parses it, Go refuses it) are not served, say why and exit 1. config: what the proxies
 * last accepted (the last-good Secret) equals what each proxy returns for GET /config/ over the
 * controller's management channel, every route has provenance, and with --object only that
 * route's parts. top: the requests the test sent through the Gateway, counted once across its
 * two proxies (per Gateway: an HTTPS listener leaves Caddy's metrics without host labels).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { parse } from "yaml";
import { describeAdminError } from "../../capabilities/proxies";
import { redact } from "../../cli/config";
import { adminClient, proxyEndpoints } from "../support/admin-channel";
import { caddyPidsOfPod } from "../support/boundary";
import { GATEWAY, applyDemoGateway, jsonpath, selfSigned, settled } from "../support/demo-gateway";
import { createNamespace, deleteNamespace, eventually, kubectlOk } from "../support/kube";
import { PeprDev, startModule } from "../support/module";
import { kubeconfigPath, kubectlBin, localDir, repoRoot } from "../support/paths";
import { get } from "../support/traffic";

const DOMAIN = "kk.test";
const pluginDir = join(localDir, "kubectl-plugin");

const pluginEnv = (): NodeJS.ProcessEnv => ({
  ...process.env,
  KUBECONFIG: kubeconfigPath,
  PATH: `${pluginDir}:${dirname(process.execPath)}:${process.env.PATH ?? ""}`,
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `kubectl kengine ARGS` with the plugin on PATH, as a user's shell runs it. */
function kengine(args: readonly string[]): Run {
  const r = spawnSync(kubectlBin, ["kengine", ...args], {
    encoding: "utf8",
    timeout: 120_000,
    env: pluginEnv(),
  });
  return {
    code: r.status ?? -1,
    stdout: r.stdout ?? "",
    stderr: r.stderr ?? r.error?.message ?? "",
  };
}

/** `kubectl kengine ARGS` in the background; `onStderr` sees its stderr as it comes. */
function kengineAsync(args: readonly string[], onStderr: (text: string) => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(kubectlBin, ["kengine", ...args], { env: pluginEnv() });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString("utf8");
      onStderr(stderr);
    });
    child.on("error", reject);
    child.on("close", code => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

const httpRoute = (ns: string, name: string, host: string, backend = "echo", port = 8080) =>
  JSON.stringify({
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: { name, namespace: ns },
    spec: {
      parentRefs: [{ name: GATEWAY }],
      hostnames: [host],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: "/" } }],
          backendRefs: [{ name: backend, port }],
        },
      ],
    },
  });

interface ExplainJson {
  ok: boolean;
  rows: { hostname: string; served: boolean; why?: string; shadowedBy?: string }[];
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

  test("config: what the proxies run (read over the management channel), with provenance", async () => {
    const report = await eventually("config from the last-good Secret", () => {
      const r = kengine(["config", "-n", ns, GATEWAY, "-o", "json"]);
      if (r.code !== 0) return undefined;
      const parsed = JSON.parse(r.stdout) as {
        source: string;
        hash?: string;
        proxies: { pod: string; synced: boolean; runsThisConfig?: boolean }[];
        provenance: { path: string; sources: string[] }[];
        config: unknown;
      };
      return parsed.source === "running" && parsed.proxies.every(p => p.runsThisConfig)
        ? parsed
        : undefined;
    });
    expect(report.proxies).toHaveLength(2);
    expect(report.proxies.every(p => p.synced && p.runsThisConfig)).toBe(true);
    // every route the Gateway serves has provenance (the unattached `lost` has none)
    expect(report.provenance.some(p => p.sources.includes(`HTTPRoute ${ns}/echo`))).toBe(true);
    // each proxy, asked over the controller's authenticated channel, runs exactly that config
    const endpoints = proxyEndpoints(ns, GATEWAY);
    expect(endpoints.map(e => e.name).sort()).toEqual(report.proxies.map(p => p.pod).sort());
    const admin = adminClient();
    try {
      for (const e of endpoints) {
        const read = await admin.getConfig(e);
        if (!read.ok) throw new Error(`${e.name}: ${describeAdminError(read.error)}`);
        expect(redact(JSON.parse(read.value.body))).toEqual(report.config);
        expect(await admin.runsConfig(e, report.hash ?? "")).toEqual({ ok: true, value: true });
      }
    } finally {
      await admin.close();
    }
    const one = kengine(["config", "-n", ns, GATEWAY, "--object", `HTTPRoute/${ns}/echo`]);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain(`stable.${DOMAIN}`);
    expect(one.stdout).toContain(`# from HTTPRoute ${ns}/echo`);
    expect(one.stdout).not.toContain(`lost.${DOMAIN}`);
    // no private key is ever printed
    expect(kengine(["config", "-n", ns, GATEWAY]).stdout).not.toMatch(/PRIVATE KEY/);
  });

  test("top: the requests sent through the Gateway, counted once across its two proxies", async () => {
    const address = jsonpath(["get", "gateway", GATEWAY, "-n", ns], "{.status.addresses[0].value}");
    expect(address).toMatch(/^127\./);
    const SENT = 40;
    let sending: Promise<number[]> | undefined;
    // The controller reads the proxies every 15 s: a 35 s window holds the sends and at least one
    // full reading cycle after them, whatever the send time (a 22 s window left a thin margin).
    const run = await kengineAsync(
      [
        "top",
        "gateways",
        "--window",
        "35s",
        "--metrics-url",
        "https://localhost:3000/metrics",
        "--insecure-skip-tls-verify",
        "-o",
        "yaml",
      ],
      // "counting for…" is written after the first scrape: the requests fall in the window
      err => {
        if (!sending && /counting for/.test(err))
          sending = (async () => {
            const codes: number[] = [];
            for (let i = 0; i < SENT; i++)
              codes.push((await get(address, `stable.${DOMAIN}`, `/top/${i}`)).status);
            return codes;
          })();
      },
    );
    expect(sending).toBeDefined();
    expect(await sending).toEqual(Array<number>(SENT).fill(200));
    expect(run.code).toBe(0);
    const report = parse(run.stdout) as {
      by: string;
      windowSeconds: number;
      rows: { gateway: string; requests: number; errors5xx: number }[];
    };
    expect(report).toMatchObject({ by: "gateways", windowSeconds: 35 });
    const row = report.rows.find(r => r.gateway === `${ns}/${GATEWAY}`);
    // every request counted, none twice (two proxies behind one address)
    expect(row?.requests).toBeGreaterThanOrEqual(SENT);
    expect(row?.requests).toBeLessThan(2 * SENT);
    expect(row?.errors5xx).toBe(0);
  }, 90_000);

  test("explain: a route shadowed by an older one with the same match, and one the proxies refuse", async () => {
    kubectlOk(["apply", "-f", "-"], httpRoute(ns, "shadow", `stable.${DOMAIN}`));
    const shadowed = await eventually("explain to see the shadowed route", () => {
      const r = kengine(["explain", "-n", ns, "httproute/shadow", "-o", "json"]);
      return r.code === 1 && (JSON.parse(r.stdout) as ExplainJson).rows.length > 0 ? r : undefined;
    });
    const s = JSON.parse(shadowed.stdout) as ExplainJson;
    expect(s.ok).toBe(false);
    expect(s.rows.length).toBeGreaterThan(0);
    for (const row of s.rows) {
      expect(row.served).toBe(false);
      expect(row.shadowedBy).toBe(`HTTPRoute ${ns}/echo (rule 0, match 0)`);
      expect(row.why).toMatch(/Gateway API precedence gives it to the older route/);
    }
    // the winner is still served
    expect(kengine(["explain", "-n", ns, "echo"]).code).toBe(0);

    // A route the proxies refuse although admission and the translator let it through.
    const negative = selfSigned(dir, "negative-ca", ["-set_serial", "-12345"]);
    kubectlOk(
      ["apply", "-f", "-"],
      [
        JSON.stringify({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "secure-ca", namespace: ns },
          data: { "ca.crt": negative },
        }),
        JSON.stringify({
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "secure", namespace: ns },
          spec: { selector: { app: "echo" }, ports: [{ port: 8443, targetPort: 3000 }] },
        }),
        JSON.stringify({
          apiVersion: "gateway.networking.k8s.io/v1",
          kind: "BackendTLSPolicy",
          metadata: { name: "secure", namespace: ns },
          spec: {
            targetRefs: [{ group: "", kind: "Service", name: "secure" }],
            validation: {
              caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "secure-ca" }],
              hostname: "secure.internal",
            },
          },
        }),
        httpRoute(ns, "hostile", `hostile.${DOMAIN}`, "secure", 8443),
      ].join("\n---\n"),
    );
    const refused = await eventually(
      "explain to show the proxies' refusal",
      () => {
        const r = kengine(["explain", "-n", ns, "httproute/hostile"]);
        return r.code === 1 && /negative serial number/.test(r.stdout) ? r : undefined;
      },
      120_000,
      500,
    );
    expect(refused.stdout).toContain(`hostile.${DOMAIN}`);
    expect(refused.stdout).toContain(
      `the proxies of Gateway ${ns}/${GATEWAY} refused this route's configuration`,
    );
  }, 180_000);

  test("status: a listener whose certificate is missing makes the Gateway wrong: exit 1 and why", async () => {
    // only the listener is wrong: the routes that are not served go
    kubectlOk(["delete", "httproute", "lost", "shadow", "hostile", "-n", ns, "--wait=true"]);
    kubectlOk([
      "patch",
      "gateway",
      GATEWAY,
      "-n",
      ns,
      "--type=json",
      "-p",
      JSON.stringify([
        {
          op: "add",
          path: "/spec/listeners/-",
          value: {
            name: "broken",
            protocol: "HTTPS",
            port: 443,
            hostname: "broken.example.test",
            tls: { certificateRefs: [{ name: "no-such-cert" }] },
          },
        },
      ]),
    ]);
    type Report = {
      ok: boolean;
      gateways: {
        refused: { kind: string; listener?: string; condition: string; reason?: string }[];
        problems: string[];
      }[];
    };
    const broken = await eventually(
      "status to report the broken listener",
      () => {
        const r = kengine(["status", "-n", ns, GATEWAY, "-o", "json"]);
        if (r.code !== 1) return undefined;
        const report = JSON.parse(r.stdout) as Report;
        const refused = report.gateways[0]?.refused ?? [];
        return refused.length > 0 &&
          refused.every(o => o.kind === "Listener" && o.listener === "broken") &&
          refused.some(o => o.reason === "InvalidCertificateRef")
          ? report
          : undefined;
      },
      60_000,
      500,
    );
    expect(broken.ok).toBe(false);
    const table = kengine(["status", "-n", ns, GATEWAY]);
    expect(table.code).toBe(1);
    expect(table.stdout).toMatch(
      new RegExp(
        `Listener ${ns}/${GATEWAY} listener broken: ResolvedRefs=False InvalidCertificateRef`,
      ),
    );
  }, 90_000);

  test("explain: a route pending on a proxy that has not taken the current config", async () => {
    // One proxy's Caddy is stopped (SIGSTOP): it cannot take the config that a change to the
    // route makes, so the route is served by the other proxy and pending on this one until it
    // runs again.
    const pods = kubectlOk(["get", "kengineproxies", "-n", ns, "-o", "name"])
      .split("\n")
      .filter(Boolean)
      .map(n => n.replace(/^.*\//, ""))
      .sort();
    const stopped = pods[0] ?? "";
    const uid = jsonpath(["get", "pod", stopped, "-n", ns], "{.metadata.uid}");
    const pids = caddyPidsOfPod(uid);
    expect(pids.length).toBeGreaterThan(0);
    for (const pid of pids) process.kill(pid, "SIGSTOP");
    try {
      kubectlOk([
        "patch",
        "httproute",
        "echo",
        "-n",
        ns,
        "--type=json",
        "-p",
        JSON.stringify([{ op: "add", path: "/spec/hostnames/-", value: `pending.${DOMAIN}` }]),
      ]);
      type Row = {
        hostname: string;
        served: boolean;
        why?: string;
        proxies?: { synced: number; total: number; pending: string[] };
      };
      const rows = await eventually(
        "explain to show the route pending on the stopped proxy",
        () => {
          const r = kengine(["explain", "-n", ns, "echo", "-o", "json"]);
          const all = (JSON.parse(r.stdout || "{}") as { rows?: Row[] }).rows ?? [];
          const row = all.find(x => x.hostname === `pending.${DOMAIN}`);
          return row?.proxies?.pending.includes(stopped) ? all : undefined;
        },
        120_000,
      );
      const row = rows.find(x => x.hostname === `pending.${DOMAIN}`);
      expect(row?.proxies).toMatchObject({ synced: 1, total: 2, pending: [stopped] });
      expect(row?.why).toMatch(new RegExp(`pending on ${stopped}`));
    } finally {
      for (const pid of pids) process.kill(pid, "SIGCONT");
    }
  }, 180_000);
});
