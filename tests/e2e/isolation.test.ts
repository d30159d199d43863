/**
 * Failure isolation on the local cluster with real Bundled proxies (issue 15, build item 1):
 * a shared Gateway (an HTTP and an HTTPS listener) with a healthy route, then one object the
 * proxies refuse although admission and the translator let it through: an HTTPRoute whose
 * Service has a BackendTLSPolicy trusting a CA certificate with a negative serial number
 * (Node's X509 parser takes it; Go's, so Caddy's, refuses it: "x509: negative serial number").
 *
 * While it is applied, and after every proxy pod is deleted and replaced (one at a time), a
 * steady client on the healthy route sees no failure; the hostile route's own status says why
 * (Accepted=False, UnsupportedValue, the proxy's error), the Gateway is Programmed=True; a
 * fixed CA brings the route back. Adds an `isolation` section to reports/e2e.json.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { PeprDev, startModule } from "../support/module";
import { demoSample } from "../support/manifests";
import { repoRoot } from "../support/paths";
import { SteadyResult, get, steadyClient } from "../support/traffic";

const HOST = "stable.iso.kengine.local";
const PROXY = "app.kubernetes.io/component=proxy";
const rows: { scenario: string; requests: number; failures: number; details: object }[] = [];

const jsonpath = (args: string[], path: string): string =>
  kubectl([...args, "-o", `jsonpath=${path}`]).stdout.trim();

/** A self-signed certificate and key in `dir` (`<name>.crt`, `<name>.key`); returns the PEM. */
function selfSigned(dir: string, name: string, extra: readonly string[]): string {
  execFileSync("openssl", [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    join(dir, `${name}.key`),
    "-out",
    join(dir, `${name}.crt`),
    "-days",
    "30",
    "-subj",
    `/CN=${name}`,
    ...extra,
  ]);
  return readFileSync(join(dir, `${name}.crt`), "utf8");
}

/** A self-signed CA certificate (PEM); `serial` may be negative. */
const caPem = (dir: string, name: string, serial: string): string =>
  selfSigned(dir, name, ["-set_serial", serial]);

const caConfigMap = (ns: string, pem: string): string =>
  JSON.stringify({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "secure-ca", namespace: ns },
    data: { "ca.crt": pem },
  });

function writeReport(): void {
  const file = join(repoRoot, "reports", "e2e.json");
  const report = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  const commit = spawnSync("git", ["rev-parse", "--short", "HEAD"], {
    cwd: repoRoot,
    encoding: "utf8",
  }).stdout.trim();
  report.isolation = {
    suite: "tests/e2e/isolation.test.ts",
    date: new Date().toISOString(),
    commit,
    proxyReplicas: 2,
    client: "one GET at a time on the healthy route, new connection each, 20 ms apart",
    scenarios: rows,
  };
  writeFileSync(file, JSON.stringify(report, null, 2) + "\n");
}

function proxyPods(ns: string): { name: string; ready: boolean }[] {
  return jsonpath(
    ["get", "pods", "-n", ns, "-l", PROXY],
    "{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=='Ready')].status}={.metadata.deletionTimestamp} {end}",
  )
    .split(" ")
    .filter(Boolean)
    .map(r => r.split("="))
    .filter(([, , deleting]) => !deleting)
    .map(([name, ready]) => ({ name: name!, ready: ready === "True" }));
}

function condition(ns: string, kind: string, name: string, path: string): string {
  return jsonpath(["get", kind, name, "-n", ns], path);
}

const gatewayProgrammed = (ns: string): string =>
  condition(
    ns,
    "gateway",
    "demo",
    "{.status.conditions[?(@.type=='Programmed')].status}|{.status.conditions[?(@.type=='Programmed')].message}",
  );

const hostileAccepted = (ns: string): string =>
  condition(
    ns,
    "httproute",
    "hostile",
    "{.status.parents[0].conditions[?(@.type=='Accepted')].status}|{.status.parents[0].conditions[?(@.type=='Accepted')].reason}|{.status.parents[0].conditions[?(@.type=='Accepted')].message}",
  );

/** Both proxies run the Gateway's current config. */
const allProgrammed = (ns: string) =>
  eventually(
    "the Gateway to be Programmed=True with 2/2 proxies",
    () => {
      const g = gatewayProgrammed(ns);
      return g.startsWith("True|2/2 ") ? g : undefined;
    },
    180_000,
    500,
  );

/**
 * Settled: exactly two proxy pods, both ready, and the Gateway 2/2 (adding the HTTPS listener
 * rolls the proxies' Deployment: a third pod may come and go after the first 2/2).
 */
const settled = (ns: string) =>
  eventually(
    "two ready proxy pods and the Gateway Programmed=True 2/2",
    () => {
      const pods = proxyPods(ns);
      const g = gatewayProgrammed(ns);
      // the Deployment's rollout is over: its generation observed, every replica updated and ready
      const [generation, observed, replicas, updated, ready] = jsonpath(
        ["get", "deployment", "-n", ns, "-l", "gateway.networking.k8s.io/gateway-name=demo"],
        "{.items[0].metadata.generation} {.items[0].status.observedGeneration} {.items[0].status.replicas} {.items[0].status.updatedReplicas} {.items[0].status.readyReplicas}",
      ).split(" ");
      const rolledOut =
        generation === observed && replicas === "2" && updated === "2" && ready === "2";
      return rolledOut && pods.length === 2 && pods.every(p => p.ready) && g.startsWith("True|2/2 ")
        ? pods
        : undefined;
    },
    180_000,
    500,
  );

describe("failure isolation: one refused object never takes a shared Gateway down", () => {
  let dev: PeprDev | undefined;
  let ns: string;
  let address: string;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "kg-iso-"));
    dev = await startModule();
    ns = createNamespace("iso");
    kubectlOk(["apply", "-f", "-"], demoSample(ns, HOST));
    // The shared Gateway: HTTP and HTTPS listeners.
    selfSigned(dir, "tls", ["-addext", "subjectAltName=DNS:*.iso.kengine.local"]);
    kubectlOk([
      "create",
      "secret",
      "tls",
      "shared-cert",
      "-n",
      ns,
      `--cert=${join(dir, "tls.crt")}`,
      `--key=${join(dir, "tls.key")}`,
    ]);
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "Gateway",
        metadata: { name: "demo", namespace: ns },
        spec: {
          gatewayClassName: "kengine",
          listeners: [
            { name: "http", protocol: "HTTP", port: 80 },
            {
              name: "https",
              protocol: "HTTPS",
              port: 443,
              hostname: "*.iso.kengine.local",
              tls: { certificateRefs: [{ name: "shared-cert" }] },
            },
          ],
        },
      }),
    );
  }, 420_000);

  afterAll(async () => {
    if (rows.length) writeReport();
    await dev?.stop();
    if (ns) deleteNamespace(ns);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("programs the shared Gateway and serves the healthy route", async () => {
    await settled(ns);
    address = jsonpath(["get", "gateway", "demo", "-n", ns], "{.status.addresses[0].value}");
    expect(address).toMatch(/^127\./);
    await eventually("a 200 on the healthy route", async () => {
      const r = await get(address, HOST, "/");
      return r.status === 200 ? r : undefined;
    });
  });

  it("leaves out a route the proxies refuse, says why on it, and keeps serving while every proxy pod is replaced", async () => {
    const client = steadyClient(address, HOST, { max: 30_000 });
    let traffic: SteadyResult | undefined;
    try {
      const negative = caPem(dir, "negative-ca", "-12345");
      kubectlOk(
        ["apply", "-f", "-"],
        [
          caConfigMap(ns, negative),
          JSON.stringify({
            apiVersion: "v1",
            kind: "Service",
            metadata: { name: "secure", namespace: ns },
            spec: {
              selector: { app: "echo" },
              ports: [{ name: "https", port: 8443, targetPort: 3000 }],
            },
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
          JSON.stringify({
            apiVersion: "gateway.networking.k8s.io/v1",
            kind: "HTTPRoute",
            metadata: { name: "hostile", namespace: ns },
            spec: {
              parentRefs: [{ name: "demo" }],
              hostnames: ["hostile.iso.kengine.local"],
              rules: [{ backendRefs: [{ name: "secure", port: 8443 }] }],
            },
          }),
        ].join("\n---\n"),
      );
      const refused = await eventually(
        "the hostile route to say the proxies refused it",
        () => {
          const a = hostileAccepted(ns);
          return a.startsWith("False|UnsupportedValue|") ? a : undefined;
        },
        120_000,
        500,
      );
      expect(refused).toContain(
        `the proxies of Gateway ${ns}/demo refused this route's configuration`,
      );
      expect(refused).toContain("negative serial number");
      const programmed = await allProgrammed(ns);
      // the healthy route is still accepted
      expect(
        condition(
          ns,
          "httproute",
          "echo",
          "{.status.parents[0].conditions[?(@.type=='Accepted')].status}",
        ),
      ).toBe("True");

      // every proxy pod deleted and replaced, one at a time: the new ones get the isolated config
      const original = (await settled(ns)).map(p => p.name);
      expect(original).toHaveLength(2);
      for (const pod of original) {
        kubectlOk(["delete", "pod", pod, "-n", ns, "--wait=true"]);
        await eventually(
          `a replacement for ${pod}, both proxies ready`,
          () => {
            const pods = proxyPods(ns);
            return pods.length === 2 && pods.every(p => p.ready && p.name !== pod)
              ? pods
              : undefined;
          },
          180_000,
          500,
        );
        await allProgrammed(ns);
      }
      expect(proxyPods(ns).some(p => original.includes(p.name))).toBe(false);
      expect(hostileAccepted(ns)).toBe(refused);
      traffic = await client.stop();
      rows.push({
        scenario:
          "route refused by the proxies (BackendTLSPolicy CA with a negative serial), proxy pods replaced",
        requests: traffic.sent,
        failures: traffic.failures.length,
        details: {
          routeStatus: refused,
          gatewayProgrammed: programmed,
          replacedPods: original.length,
        },
      });
      expect(traffic.sent).toBeGreaterThan(10);
      expect(traffic.failures).toEqual([]);
    } finally {
      if (!traffic) await client.stop();
    }
  }, 900_000);

  it("tries the route again once its CA is fixed", async () => {
    const client = steadyClient(address, HOST, { max: 30_000 });
    let traffic: SteadyResult | undefined;
    try {
      kubectlOk(["apply", "-f", "-"], caConfigMap(ns, caPem(dir, "fixed-ca", "12345")));
      const accepted = await eventually(
        "the hostile route to be accepted",
        () => {
          const a = hostileAccepted(ns);
          return a.startsWith("True|") ? a : undefined;
        },
        120_000,
        500,
      );
      const programmed = await allProgrammed(ns);
      traffic = await client.stop();
      rows.push({
        scenario: "refused route fixed (valid CA)",
        requests: traffic.sent,
        failures: traffic.failures.length,
        details: { routeStatus: accepted, gatewayProgrammed: programmed },
      });
      expect(traffic.failures).toEqual([]);
    } finally {
      if (!traffic) await client.stop();
    }
  }, 600_000);
});
