/**
 * Ingress v1 on the local cluster with real proxies (docs/ingress.md): an IngressClass naming
 * the demo Gateway, an Ingress with an Exact and a Prefix path and a `tls` Secret, served by
 * the Gateway's proxies next to its own route; a bad Ingress refused at `kubectl apply` with a
 * field path; `status.loadBalancer` showing the Gateway's address (its proxies' Service).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:tls";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { PeprDev, startModule } from "../support/module";
import { applyDemoGateway, jsonpath, selfSigned, settled } from "../support/demo-gateway";
import { get } from "../support/traffic";

const DOMAIN = "ing.kengine.local";
const HOST = "shop.ingress.test";

const ingressClass = (name: string, ns: string) => ({
  apiVersion: "networking.k8s.io/v1",
  kind: "IngressClass",
  metadata: { name },
  spec: {
    controller: "kengine.io/ingress-controller",
    parameters: {
      apiGroup: "gateway.networking.k8s.io",
      kind: "Gateway",
      scope: "Namespace",
      namespace: ns,
      name: "demo",
    },
  },
});

const path = (p: string, pathType: string) => ({
  path: p,
  pathType,
  backend: { service: { name: "echo", port: { name: "http" } } },
});

/** The certificate's subjectAltName the proxy shows for `servername` on port 443. */
const servedNames = (address: string, servername: string): Promise<string> =>
  new Promise(resolve => {
    const s = connect({ host: address, port: 443, servername, rejectUnauthorized: false }, () => {
      resolve(s.getPeerCertificate().subjectaltname ?? "");
      s.end();
    });
    s.on("error", () => resolve(""));
    s.setTimeout(5000, () => {
      resolve("");
      s.destroy();
    });
  });

describe("Ingress v1 on the Gateway's proxies", () => {
  let dev: PeprDev | undefined;
  let ns: string;
  let dir: string;
  let address: string;
  const className = `kengine-e2e-${Date.now().toString(36)}`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "kg-ing-"));
    dev = await startModule();
    ns = createNamespace("ing");
    applyDemoGateway(ns, dir, DOMAIN, { allowedListeners: { namespaces: { from: "Same" } } });
    selfSigned(dir, "shop", ["-addext", `subjectAltName=DNS:${HOST}`]);
    kubectlOk([
      "create",
      "secret",
      "tls",
      "shop-cert",
      "-n",
      ns,
      `--cert=${join(dir, "shop.crt")}`,
      `--key=${join(dir, "shop.key")}`,
    ]);
    kubectlOk(["apply", "-f", "-"], JSON.stringify(ingressClass(className, ns)));
  }, 420_000);

  afterAll(async () => {
    await dev?.stop();
    if (className) kubectl(["delete", "ingressclass", className, "--ignore-not-found"]);
    if (ns) deleteNamespace(ns);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("serves host and path rules through the proxy: Exact vs Prefix, TLS from the Secret", async () => {
    await settled(ns);
    address = jsonpath(["get", "gateway", "demo", "-n", ns], "{.status.addresses[0].value}");
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "networking.k8s.io/v1",
        kind: "Ingress",
        metadata: { name: "shop", namespace: ns },
        spec: {
          ingressClassName: className,
          tls: [{ hosts: [HOST], secretName: "shop-cert" }],
          rules: [
            {
              host: HOST,
              http: { paths: [path("/exact", "Exact"), path("/api", "Prefix")] },
            },
          ],
        },
      }),
    );
    await eventually(
      "a 200 on the Prefix path",
      async () => {
        const r = await get(address, HOST, "/api/items");
        return r.status === 200 ? r : undefined;
      },
      90_000,
    );
    expect((await get(address, HOST, "/api")).status).toBe(200);
    expect((await get(address, HOST, "/exact")).status).toBe(200);
    expect((await get(address, HOST, "/exact/more")).status).toBe(404);
    expect((await get(address, HOST, "/apiary")).status).toBe(404);
    const names = await eventually(
      "the Ingress's certificate on 443",
      async () => {
        const n = await servedNames(address, HOST);
        return n.includes(HOST) ? n : undefined;
      },
      60_000,
    );
    expect(names).toContain(`DNS:${HOST}`);
  });

  it("writes status.loadBalancer with the proxies' address", async () => {
    const shown = await eventually(
      "status.loadBalancer",
      () =>
        jsonpath(["get", "ingress", "shop", "-n", ns], "{.status.loadBalancer.ingress[0].ip}") ||
        undefined,
      60_000,
    );
    expect(shown).toBe(address);
  });

  it("refuses a bad Ingress at kubectl apply with a field path", () => {
    const r = kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "networking.k8s.io/v1",
        kind: "Ingress",
        metadata: { name: "bad", namespace: ns },
        spec: {
          ingressClassName: className,
          rules: [{ host: HOST, http: { paths: [path("/(.*)", "Prefix")] } }],
        },
      }),
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("spec.rules[0].http.paths[0].path");
  });
});
