/**
 * Failure isolation on the local cluster with real Bundled proxies:
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
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createNamespace, deleteNamespace, eventually, kubectlOk } from "../support/kube";
import { PeprDev, startModule } from "../support/module";
import {
  allProgrammed,
  applyDemoGateway,
  condition,
  healthyAccepted,
  jsonpath,
  proxyPods,
  replaceEveryProxyPod,
  selfSigned,
  settled,
  writeReportSection,
} from "../support/demo-gateway";
import { SteadyResult, get, steadyClient } from "../support/traffic";

const DOMAIN = "iso.kengine.local";
const HOST = `stable.${DOMAIN}`;
const rows: { scenario: string; requests: number; failures: number; details: object }[] = [];

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

const writeReport = (): void =>
  writeReportSection("isolation", "tests/e2e/isolation.test.ts", {
    proxyReplicas: 2,
    client: "one GET at a time on the healthy route, new connection each, 20 ms apart",
    scenarios: rows,
  });

const hostileAccepted = (ns: string): string =>
  condition(
    ns,
    "httproute",
    "hostile",
    "{.status.parents[0].conditions[?(@.type=='Accepted')].status}|{.status.parents[0].conditions[?(@.type=='Accepted')].reason}|{.status.parents[0].conditions[?(@.type=='Accepted')].message}",
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
    applyDemoGateway(ns, dir, DOMAIN);
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
      expect(healthyAccepted(ns)).toBe("True");

      // every proxy pod deleted and replaced, one at a time: the new ones get the isolated config
      const original = await replaceEveryProxyPod(ns);
      expect(original).toHaveLength(2);
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
