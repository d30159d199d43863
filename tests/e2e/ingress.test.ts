/**
 * Ingress v1 on the local cluster with real proxies (docs/ingress.md): an IngressClass naming
 * the demo Gateway, an Ingress with an Exact and a Prefix path and a `tls` Secret, served by
 * the Gateway's proxies next to its own route; a bad Ingress refused at `kubectl apply` with a
 * field path; `status.loadBalancer` showing the Gateway's address (its proxies' Service); once
 * the class opts in, ingress-nginx annotations on real traffic (redirects, ssl-redirect,
 * rewrite-target, CORS, cookie affinity, a header and cookie canary, a canary-weight split,
 * server-alias) and a
 * snippet refused at `kubectl apply`; a healthy Ingress answering every request while broken
 * ones arrive beside it; the connection timeouts and the session cookie's SameSite.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "node:http";
import { type Socket, createServer } from "node:net";
import { connect } from "node:tls";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { PeprDev, startModule } from "../support/module";
import {
  applyDemoGateway,
  jsonpath,
  selfSigned,
  settled,
  ScenarioRow,
  writeScenarioRows,
} from "../support/demo-gateway";
import { call, get, steadyClient } from "../support/traffic";

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

/** The sample's echo Service, by port name. */
const ECHO = { name: "echo", port: { name: "http" } };

/** What differs between the test's Ingresses (path "/api" and the echo unless given). */
interface IngressShape {
  readonly annotations?: Record<string, string>;
  readonly path?: string;
  readonly service?: object;
  readonly tls?: object[];
}

/** An Ingress of class `className`: one rule (no host: every host) with one Prefix path. */
const ingressOf = (
  ns: string,
  className: string,
  name: string,
  host: string,
  o: IngressShape = {},
) => ({
  apiVersion: "networking.k8s.io/v1",
  kind: "Ingress",
  metadata: { name, namespace: ns, annotations: o.annotations ?? {} },
  spec: {
    ingressClassName: className,
    ...(o.tls && { tls: o.tls }),
    rules: [
      {
        ...(host && { host }),
        http: {
          paths: [
            { path: o.path ?? "/api", pathType: "Prefix", backend: { service: o.service ?? ECHO } },
          ],
        },
      },
    ],
  },
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

/** Status and Location of a plain HTTP GET on port 80 (redirects are not followed). */
const located = (address: string, host: string, p: string): Promise<[number, string]> =>
  new Promise(resolve => {
    const req = request(
      { host: address, port: 80, path: p, headers: { Host: host }, timeout: 5000, agent: false },
      res => {
        res.resume();
        resolve([res.statusCode ?? 0, String(res.headers.location ?? "")]);
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", () => resolve([0, ""]));
    req.end();
  });

describe("Ingress v1 on the Gateway's proxies", () => {
  let dev: PeprDev | undefined;
  let ns: string;
  let dir: string;
  let address: string;
  const className = `kengine-e2e-${Date.now().toString(36)}`;
  const started = Date.now();
  /** One row per test that passed: what it proved and how many checks on real traffic/API. */
  const rows: ScenarioRow[] = [];

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
    writeScenarioRows("ingress", "tests/e2e/ingress.test.ts", started, rows);
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
    rows.push({
      scenario: "host and path rules, TLS from a Secret",
      proved: "Exact vs Prefix matching on 4 paths, the Secret's certificate served on 443",
      checks: 5,
    });
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
    rows.push({
      scenario: "status.loadBalancer",
      proved: "the Ingress shows the proxies' Service address",
      checks: 1,
    });
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
    rows.push({
      scenario: "admission",
      proved: "a bad path is refused at kubectl apply with its field path",
      checks: 2,
    });
  });

  it("reads ingress-nginx annotations once the class opts in, on real traffic", async () => {
    const P = "nginx.ingress.kubernetes.io/";
    kubectlOk([
      "annotate",
      "ingressclass",
      className,
      "kengine.io/ingress-nginx-annotations=true",
      "--overwrite",
    ]);
    const annotated = (name: string, host: string, annotations: Record<string, string>) =>
      JSON.stringify(ingressOf(ns, className, name, host, { annotations }));
    kubectlOk(
      ["apply", "-f", "-"],
      annotated("rewritten", "rewritten.ingress.test", {
        [`${P}rewrite-target`]: "/v2",
        [`${P}app-root`]: "/home",
      }),
    );
    kubectlOk(
      ["apply", "-f", "-"],
      annotated("moved", "moved.ingress.test", {
        [`${P}permanent-redirect`]: "https://new.ingress.test/shop",
      }),
    );
    await eventually(
      "the permanent redirect",
      async () => {
        const r = await located(address, "moved.ingress.test", "/api/x");
        return r[0] === 301 ? r : undefined;
      },
      90_000,
    );
    expect(await located(address, "moved.ingress.test", "/api/x")).toEqual([
      301,
      "https://new.ingress.test/shop",
    ]);
    expect(await located(address, "rewritten.ingress.test", "/")).toEqual([
      302,
      "http://rewritten.ingress.test/home",
    ]);
    const r = await get(address, "rewritten.ingress.test", "/api/items");
    expect(r.status).toBe(200);
    expect((JSON.parse(r.body) as { path: string }).path).toBe("/v2");
    // ssl-redirect is on by default for the tls host of the first test's Ingress.
    const toHTTPS = await eventually(
      "the redirect to https",
      async () => {
        const x = await located(address, HOST, "/api");
        return x[0] === 308 ? x : undefined;
      },
      30_000,
    );
    expect(toHTTPS).toEqual([308, `https://${HOST}/api`]);
    // Admission reads the class through a look-up cache (at most 5 s old, docs/ingress.md): an
    // Ingress applied sooner after the opt-in is judged without it, as a user's would be. Each
    // try is a new object (an unchanged re-apply sends nothing); one admitted is deleted.
    let tries = 0;
    const refused = await eventually(
      "the snippet refused at admission",
      () => {
        const name = `snippet-${tries++}`;
        const r = kubectl(
          ["apply", "-f", "-"],
          annotated(name, "snippet.ingress.test", { [`${P}server-snippet`]: "return 200;" }),
        );
        if (r.code === 0) kubectl(["delete", "ingress", name, "-n", ns, "--wait=false"]);
        return r.code !== 0 ? r : undefined;
      },
      20_000,
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`metadata.annotations["${P}server-snippet"]`);
    rows.push({
      scenario: "ingress-nginx annotations",
      proved:
        "permanent-redirect, app-root, rewrite-target, ssl-redirect on traffic; server-snippet refused at admission",
      checks: 7,
    });
  });

  it("maps CORS, cookie affinity, a header or cookie canary and server-alias onto real traffic", async () => {
    // The class opted in in the previous test.
    const P = "nginx.ingress.kubernetes.io/";
    const ingress = (name: string, host: string, annotations: Record<string, string>) =>
      ingressOf(ns, className, name, host, { annotations });
    for (const object of [
      ingress("cors", "cors.ingress.test", {
        [`${P}enable-cors`]: "true",
        [`${P}cors-allow-origin`]: "https://app.example.org",
        [`${P}cors-allow-methods`]: "GET, PUT",
        [`${P}cors-max-age`]: "600",
      }),
      ingress("sticky", "sticky.ingress.test", {
        [`${P}affinity`]: "cookie",
        [`${P}session-cookie-name`]: "route",
      }),
      ingress("main", "canary.ingress.test", {}),
      ingress("canary", "canary.ingress.test", {
        [`${P}canary`]: "true",
        [`${P}canary-by-header`]: "X-Canary",
        [`${P}canary-by-cookie`]: "beta",
        [`${P}rewrite-target`]: "/canary",
      }),
      ingress("vhost", "vhost.ingress.test", {
        [`${P}upstream-vhost`]: "internal.example.org",
        [`${P}affinity`]: "cookie",
        [`${P}session-cookie-path`]: "/api",
        [`${P}session-cookie-max-age`]: "3600",
      }),
      ingress("temporal", "temporal.ingress.test", {
        [`${P}temporal-redirect`]: "https://maintenance.ingress.test/",
        [`${P}temporal-redirect-code`]: "307",
      }),
      ingress("by-value", "canary.ingress.test", {
        [`${P}canary`]: "true",
        [`${P}canary-by-header`]: "X-Version",
        [`${P}canary-by-header-value`]: "v2",
        [`${P}rewrite-target`]: "/v2",
      }),
      ingress("limited", "limited.ingress.test", { [`${P}proxy-body-size`]: "1k" }),
      ingress("allowed", "allowed.ingress.test", {
        [`${P}whitelist-source-range`]: "0.0.0.0/0, ::/0",
      }),
      ingress("outside", "outside.ingress.test", {
        [`${P}whitelist-source-range`]: "192.0.2.0/24",
      }),
      ingress("denied", "denied.ingress.test", {
        [`${P}denylist-source-range`]: "0.0.0.0/0, ::/0",
      }),
      ingressOf(ns, className, "regex", "regex.ingress.test", {
        annotations: { [`${P}use-regex`]: "true" },
        path: "/items/[0-9]+",
      }),
      ingress("aliased", "primary.ingress.test", { [`${P}server-alias`]: "alias.ingress.test" }),
    ])
      kubectlOk(["apply", "-f", "-"], JSON.stringify(object));

    // server-alias: the alias answers with the Ingress's paths (the last Ingress applied).
    const aliased = await eventually(
      "the alias served",
      async () => {
        const r = await call(address, "alias.ingress.test", "/api/x");
        return r.status === 200 ? r : undefined;
      },
      90_000,
    );
    expect(JSON.parse(aliased.body).path).toBe("/api/x");
    expect((await call(address, "primary.ingress.test", "/api/x")).status).toBe(200);

    // CORS: a preflight from the allowed origin, and a simple request's headers.
    const preflight = await call(address, "cors.ingress.test", "/api/x", "OPTIONS", {
      Origin: "https://app.example.org",
      "Access-Control-Request-Method": "PUT",
    });
    expect(preflight.headers["access-control-allow-origin"]).toBe("https://app.example.org");
    expect(String(preflight.headers["access-control-allow-methods"])).toMatch(/PUT/);
    expect(preflight.headers["access-control-max-age"]).toBe("600");
    const simple = await call(address, "cors.ingress.test", "/api/x", "GET", {
      Origin: "https://app.example.org",
    });
    expect(simple.status).toBe(200);
    expect(simple.headers["access-control-allow-origin"]).toBe("https://app.example.org");
    const foreign = await call(address, "cors.ingress.test", "/api/x", "GET", {
      Origin: "https://evil.example.net",
    });
    expect(foreign.headers["access-control-allow-origin"]).toBeUndefined();

    // Affinity: the cookie the first answer sets keeps every later request on one echo pod.
    const first = await call(address, "sticky.ingress.test", "/api/x");
    expect(first.status).toBe(200);
    const cookie = String(first.headers["set-cookie"] ?? "").match(/^route=[^;]+/)?.[0];
    expect(cookie).toBeDefined();
    const pods = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const r = await call(address, "sticky.ingress.test", "/api/x", "GET", { Cookie: cookie! });
      expect(r.status).toBe(200);
      pods.add(JSON.parse(r.body).pod);
    }
    expect([...pods]).toEqual([JSON.parse(first.body).pod]);

    // Canary: the header or cookie selects it (its rewrite shows it), anything else the main.
    const canaryPath = async (headers: Record<string, string>): Promise<string> =>
      JSON.parse((await call(address, "canary.ingress.test", "/api/x", "GET", headers)).body).path;
    await eventually(
      "the canary selected by its header",
      async () => ((await canaryPath({ "X-Canary": "always" })) === "/canary" ? true : undefined),
      30_000,
    );
    expect(await canaryPath({})).toBe("/api/x");
    expect(await canaryPath({ "X-Canary": "never" })).toBe("/api/x");
    expect(await canaryPath({ Cookie: "a=1; beta=always" })).toBe("/canary");
    expect(await canaryPath({ Cookie: "beta=never" })).toBe("/api/x");
    expect(await canaryPath({ "X-Version": "v2" })).toBe("/v2");
    expect(await canaryPath({ "X-Version": "v3" })).toBe("/api/x");

    // upstream-vhost: the backend sees the Host; a Permanent session cookie on its path.
    const vhost = await call(address, "vhost.ingress.test", "/api/x");
    expect(vhost.status).toBe(200);
    expect(JSON.parse(vhost.body).host).toBe("internal.example.org");
    const setCookie = String(vhost.headers["set-cookie"] ?? "");
    expect(setCookie).toMatch(/^INGRESSCOOKIE=/);
    expect(setCookie).toMatch(/Path=\/api/);
    expect(setCookie).toMatch(/Max-Age=3600/);
    // proxy-body-size: 1 KiB passes, one byte more is answered 413
    const post = (n: number) =>
      call(address, "limited.ingress.test", "/api/x", "POST", {}, Buffer.alloc(n, 120));
    expect((await post(1024)).status).toBe(200);
    expect((await post(1025)).status).toBe(413);
    // source ranges: every address allowed, none (TEST-NET-1 only), every address denied
    expect((await call(address, "allowed.ingress.test", "/api/x")).status).toBe(200);
    expect((await call(address, "outside.ingress.test", "/api/x")).status).toBe(403);
    expect((await call(address, "denied.ingress.test", "/api/x")).status).toBe(403);
    // use-regex: from the path's start
    expect((await call(address, "regex.ingress.test", "/items/42/x")).status).toBe(200);
    expect((await call(address, "regex.ingress.test", "/items/abc")).status).toBe(404);
    // temporal-redirect with its code
    expect(await located(address, "temporal.ingress.test", "/api/x")).toEqual([
      307,
      "https://maintenance.ingress.test/",
    ]);
    rows.push({
      scenario: "ingress-nginx CORS, affinity, canary, server-alias",
      proved:
        "enable-cors preflight and simple requests (allowed and foreign origin); affinity cookie keeps one pod over 12 requests, with session-cookie-path and -max-age in Set-Cookie; canary-by-header, -header-value and canary-by-cookie select the canary, others the main Ingress; upstream-vhost's Host at the backend; proxy-body-size 1k (1,024 bytes pass, 1,025 get 413); whitelist/denylist-source-range (200 inside, 403 outside or denied); use-regex (/items/42/x served by /items/[0-9]+, /items/abc not); temporal-redirect with its code; server-alias answers",
      checks: 30,
    });
  });

  it("splits a path by canary-weight between the main Ingress's backend and the canary's", async () => {
    const P = "nginx.ingress.kubernetes.io/";
    // One echo pod behind each Service, so the answering pod tells which backend took it.
    const pods = jsonpath(["get", "pods", "-n", ns, "-l", "app=echo"], "{.items[*].metadata.name}")
      .split(" ")
      .sort();
    expect(pods).toHaveLength(2);
    kubectlOk(["label", "pod", "-n", ns, pods[0]!, "split=main", "--overwrite"]);
    kubectlOk(["label", "pod", "-n", ns, pods[1]!, "split=canary", "--overwrite"]);
    const service = (name: string, split: string) => ({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name, namespace: ns },
      spec: {
        selector: { app: "echo", split },
        ports: [{ name: "http", port: 8080, targetPort: 3000 }],
      },
    });
    const ingress = (name: string, backend: string, annotations: Record<string, string>) =>
      ingressOf(ns, className, name, "weighted.ingress.test", {
        annotations,
        path: "/",
        service: { name: backend, port: { number: 8080 } },
      });
    for (const object of [
      service("echo-main", "main"),
      service("echo-canary", "canary"),
      ingress("weighted-main", "echo-main", {}),
      ingress("weighted-canary", "echo-canary", {
        [`${P}canary`]: "true",
        [`${P}canary-weight`]: "30",
      }),
    ])
      kubectlOk(["apply", "-f", "-"], JSON.stringify(object));
    const podOf = async (): Promise<string> => {
      const r = await call(address, "weighted.ingress.test", "/w");
      return r.status === 200 ? (JSON.parse(r.body) as { pod: string }).pod : `status ${r.status}`;
    };
    await eventually(
      "the canary's pod answering",
      async () => ((await podOf()) === pods[1] ? true : undefined),
      90_000,
    );
    const counts = new Map<string, number>();
    for (let i = 0; i < 200; i++) {
      const pod = await podOf();
      counts.set(pod, (counts.get(pod) ?? 0) + 1);
    }
    // 30 % of 200 is 60; the binomial's standard deviation is 6.5: 30..100 is beyond 4 of them.
    expect([...counts.keys()].sort()).toEqual(pods);
    expect(counts.get(pods[1]!)).toBeGreaterThan(30);
    expect(counts.get(pods[1]!)).toBeLessThan(100);
    rows.push({
      scenario: "ingress-nginx canary-weight",
      proved: `a canary-weight of 30 sent ${counts.get(pods[1]!)} of 200 requests to the canary's pod, the rest to the main Ingress's`,
      checks: 4,
    });
  });

  it("keeps a healthy Ingress answering every request while broken ones arrive beside it", async () => {
    const P = "nginx.ingress.kubernetes.io/";
    const ingress = (name: string, host: string, service: object, o: IngressShape = {}) =>
      ingressOf(ns, className, name, host, { ...o, path: "/", service });
    const echo = ECHO;
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify(ingress("healthy", "healthy.ingress.test", echo)),
    );
    await eventually(
      "the healthy Ingress served",
      async () =>
        (await get(address, "healthy.ingress.test", "/")).status === 200 ? true : undefined,
      60_000,
    );
    // A Secret that is no certificate, for a tls entry.
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Secret",
        type: "kubernetes.io/tls",
        metadata: { name: "not-a-cert", namespace: ns },
        data: {
          "tls.crt": Buffer.from("garbage").toString("base64"),
          "tls.key": Buffer.from("garbage").toString("base64"),
        },
      }),
    );
    const client = steadyClient(address, "healthy.ingress.test", { max: 5_000 });
    const broken = [
      // the healthy host and path again, newer: precedence keeps the older one
      ingress("same-host", "healthy.ingress.test", { name: "missing", port: { number: 80 } }),
      // a named port of a Service that does not exist
      ingress("no-service", "b1.ingress.test", { name: "missing", port: { name: "http" } }),
      // a tls Secret that holds no certificate
      ingress("bad-tls", "b2.ingress.test", echo, {
        tls: [{ hosts: ["b2.ingress.test"], secretName: "not-a-cert" }],
      }),
      // a canary whose weight has no main Ingress
      ingress("lonely-canary", "b3.ingress.test", echo, {
        annotations: { [`${P}canary`]: "true", [`${P}canary-weight`]: "50" },
      }),
      // a rule for every host, its Service missing: the healthy host's own rule is more specific
      ingress("empty-default", "", { name: "missing", port: { number: 80 } }),
    ];
    for (const object of broken) kubectlOk(["apply", "-f", "-"], JSON.stringify(object));
    // each broken one is reported on itself
    const reported = await eventually(
      "an IngressNotServed Event on each broken Ingress",
      () => {
        const names = kubectl([
          "get",
          "events",
          "-n",
          ns,
          "--field-selector",
          "reason=IngressNotServed",
          "-o",
          "jsonpath={.items[*].involvedObject.name}",
        ]).stdout.split(" ");
        const want = ["same-host", "no-service", "bad-tls", "lonely-canary"];
        return want.every(n => names.includes(n)) ? want : undefined;
      },
      60_000,
    );
    await new Promise(r => setTimeout(r, 5_000));
    const result = await client.stop();
    for (const object of broken)
      kubectl(["delete", "ingress", object.metadata.name, "-n", ns, "--wait=false"]);
    expect(result.sent).toBeGreaterThan(100);
    expect(result.failures).toEqual([]);
    rows.push({
      scenario: "a broken Ingress next to a healthy one",
      proved: `${result.sent} requests to the healthy Ingress, 0 failed, while 5 broken Ingresses arrived (${reported.join(", ")} reported in IngressNotServed Events)`,
      checks: 3,
    });
  });

  it("publishes the configured static addresses in status.loadBalancer instead", async () => {
    // The configuration override (docs/ingress.md, "status.loadBalancer"): the module is
    // restarted with KENGINE_INGRESS_STATUS_ADDRESSES in its environment.
    await dev?.stop();
    process.env.KENGINE_INGRESS_STATUS_ADDRESSES = "203.0.113.9, ingress.example.org";
    try {
      dev = await startModule();
    } finally {
      delete process.env.KENGINE_INGRESS_STATUS_ADDRESSES;
    }
    const shown = await eventually(
      "the static addresses",
      () => {
        const v = jsonpath(
          ["get", "ingress", "shop", "-n", ns],
          "{.status.loadBalancer.ingress[*].ip}|{.status.loadBalancer.ingress[*].hostname}",
        );
        return v === "203.0.113.9|ingress.example.org" ? v : undefined;
      },
      120_000,
    );
    expect(shown).toBe("203.0.113.9|ingress.example.org");
    rows.push({
      scenario: "status.loadBalancer from static addresses",
      proved:
        "KENGINE_INGRESS_STATUS_ADDRESSES (an IP and a host name) replaces the proxies' address",
      checks: 1,
    });
  }, 300_000);

  it("bounds the backend connection by proxy-connect/send-timeout and sets session-cookie-samesite", async () => {
    const P = "nginx.ingress.kubernetes.io/";
    // A proxy pod's network: its /24 and the node's address it reaches (the pod bridge's).
    const [podIP = "", hostIP = ""] = jsonpath(
      ["get", "pods", "-n", ns, "-l", "app.kubernetes.io/component=proxy"],
      "{.items[0].status.podIP} {.items[0].status.hostIP}",
    ).split(" ");
    expect(podIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    // A black hole: an address of the pods' subnet that no pod holds, so the proxy's dial
    // waits for an ARP answer that never comes (the kernel gives up after about 3 s).
    const used = new Set(jsonpath(["get", "pods", "-A"], "{.items[*].status.podIP}").split(" "));
    const subnet = podIP.split(".").slice(0, 3).join(".");
    const hole = [254, 253, 252, 251, 250].map(h => `${subnet}.${h}`).find(a => !used.has(a))!;
    // A backend that accepts and never reads: the node's address, a port of this process.
    const stalled: Socket[] = [];
    const sink = createServer({ pauseOnConnect: true }, c => {
      c.on("error", () => {});
      stalled.push(c);
    });
    await new Promise<void>(r => sink.listen(0, "0.0.0.0", r));
    const sinkPort = (sink.address() as { port: number }).port;
    const manual = (name: string, address: string, port: number) => [
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name, namespace: ns },
        spec: { ports: [{ name: "http", port: 80, targetPort: port }] },
      },
      {
        apiVersion: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        metadata: {
          name: `${name}-1`,
          namespace: ns,
          labels: { "kubernetes.io/service-name": name },
        },
        addressType: "IPv4",
        ports: [{ name: "http", port, protocol: "TCP" }],
        endpoints: [{ addresses: [address], conditions: { ready: true } }],
      },
    ];
    const to = (service: string) => ({ name: service, port: { number: 80 } });
    const ingress = (name: string, service: object, annotations: Record<string, string>) =>
      ingressOf(ns, className, name, `${name}.ingress.test`, { annotations, service });
    try {
      for (const object of [
        ...manual("blackhole", hole, 80),
        ...manual("sink", hostIP, sinkPort),
        ingress("dial-fast", to("blackhole"), { [`${P}proxy-connect-timeout`]: "1" }),
        ingress("dial-default", to("blackhole"), {}),
        ingress("send-bounded", to("sink"), { [`${P}proxy-send-timeout`]: "2s" }),
        ingress("send-unbounded", to("sink"), {}),
        ingress("strict", ECHO, {
          [`${P}affinity`]: "cookie",
          [`${P}session-cookie-samesite`]: "Strict",
        }),
        ingress("lax-none", ECHO, {
          [`${P}affinity`]: "cookie",
          [`${P}session-cookie-name`]: "cross",
          [`${P}session-cookie-samesite`]: "None",
        }),
      ])
        kubectlOk(["apply", "-f", "-"], JSON.stringify(object));

      // SameSite: Strict, and None with Secure (on plain HTTP too: browsers drop it otherwise).
      const cookieOf = async (host: string): Promise<string> =>
        eventually(
          `the session cookie of ${host}`,
          async () => {
            const r = await call(address, host, "/api/x");
            return r.status === 200 && r.headers["set-cookie"]
              ? String(r.headers["set-cookie"])
              : undefined;
          },
          90_000,
        );
      const strict = await cookieOf("strict.ingress.test");
      expect(strict).toMatch(/^INGRESSCOOKIE=/);
      expect(strict).toMatch(/SameSite=Strict/);
      expect(strict).not.toMatch(/Secure/);
      const none = await cookieOf("lax-none.ingress.test");
      expect(none).toMatch(/^cross=/);
      expect(none).toMatch(/SameSite=None/);
      expect(none).toMatch(/Secure/);

      // proxy-connect-timeout "1": 502 after about a second; the same backend without it
      // waits for the default (3 s) or the kernel's own ARP failure, whichever comes first.
      const timed = async (host: string): Promise<[number, number]> => {
        const t0 = Date.now();
        const r = await call(address, host, "/api/x");
        return [r.status, Date.now() - t0];
      };
      await eventually(
        "the black-holed Ingresses served",
        async () =>
          (await timed("dial-fast.ingress.test"))[0] === 502 &&
          (await timed("dial-default.ingress.test"))[0] === 502
            ? true
            : undefined,
        90_000,
      );
      const [fast, fastMs] = await timed("dial-fast.ingress.test");
      expect(fast).toBe(502);
      expect(fastMs).toBeGreaterThanOrEqual(900);
      expect(fastMs).toBeLessThan(2500);
      const [slow, slowMs] = await timed("dial-default.ingress.test");
      expect(slow).toBe(502);
      expect(slowMs).toBeGreaterThanOrEqual(2500);

      // proxy-send-timeout "2s": a backend that stops reading the request body fails it with
      // 504 once a write has stalled 2 s; without it the proxy keeps waiting.
      const stalledPost = (host: string, waitMs: number): Promise<number> =>
        new Promise(resolve => {
          const req = request(
            {
              host: address,
              port: 80,
              path: "/api/x",
              method: "POST",
              headers: { Host: host },
              agent: false,
            },
            res => {
              res.resume();
              resolve(res.statusCode ?? 0);
              req.destroy();
            },
          );
          const timer = setTimeout(() => {
            resolve(0);
            req.destroy();
          }, waitMs);
          req.on("close", () => clearTimeout(timer));
          req.on("error", () => {});
          // far more than the sockets' buffers on the way hold
          req.end(Buffer.alloc(64 << 20, 120));
        });
      await eventually(
        "the stalled backend's Ingresses served",
        async () => {
          const r = await call(address, "send-unbounded.ingress.test", "/api/x");
          return r.status !== 404 ? true : undefined;
        },
        90_000,
      );
      expect(await stalledPost("send-bounded.ingress.test", 20_000)).toBe(504);
      expect(await stalledPost("send-unbounded.ingress.test", 8_000)).toBe(0);
      rows.push({
        scenario: "ingress-nginx connection timeouts and SameSite",
        proved: `proxy-connect-timeout 1 answers a black-holed backend 502 in ${fastMs} ms, the same backend without it in ${slowMs} ms (per route); proxy-send-timeout 2s answers 504 once a backend stops reading a 64 MiB body, which without it hangs; session-cookie-samesite Strict, and None with Secure on plain HTTP`,
        checks: 14,
      });
    } finally {
      for (const c of stalled) c.destroy();
      sink.close();
    }
  }, 300_000);
});
