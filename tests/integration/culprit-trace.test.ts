/**
 * Culprit tracing on every proxy flavour: a Gateway (HTTP and HTTPS
 * listeners) with a healthy route and two routes whose backends' BackendTLSPolicies trust a CA
 * certificate on secp256k1 (node:crypto parses it, Go's x509 does not: every Caddy refuses the
 * whole config with "x509: unsupported elliptic curve", naming the route of the backend).
 *
 * The controller's isolation stage (reconcile/isolation.ts) runs for real, with the real
 * translator, renderer and source map, against real proxies: Bundled (our build, which
 * validates), stock Caddy (the same binary, treated as a proxy without our validation route)
 * and Kengine (Caddy 2.8.4). Configs are pushed with POST /load as the push engine does; each
 * refusal is handed to the stage, which names the refused routes; the next push leaves them
 * out. At the end each refused route is reported on itself (Accepted=False, UnsupportedValue,
 * with Caddy's error), no config was pushed twice, and the healthy route answers real requests
 * on both listeners. The same for a listener: client certificates checked against that CA
 * (Gateway spec.tls.frontend) make Caddy refuse the HTTPS listener's TLS connection policy;
 * that listener alone is reported (Programmed=False, Invalid) and HTTP keeps serving. Loopback
 * only.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { IncomingMessage, Server, ServerResponse, createServer } from "node:http";
import { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { SealedConfig, caddySourceMap, toCaddyConfig } from "../../capabilities/caddy";
import { ProxyEndpoint } from "../../capabilities/proxies";
import { Isolation, IsolationDeps } from "../../capabilities/reconcile/isolation";
import { KubeObject, snapshotOf } from "../../capabilities/snapshot";
import { RefusedObject, identityOf, translate } from "../../capabilities/translate";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { CONTROLLER_NAME } from "../../capabilities/ownership";
import { Caddy, startCaddy } from "../support/caddy";
import { loopbackService, ns } from "../support/arbitrary-hostile";
import { selfSigned } from "../support/demo-gateway";
import { withProxyFlavor } from "../support/flavor";
import { httpsGet } from "../support/https";
import { withLoopbackEndpoints } from "../support/loopback";
import { freePort, listenerPortOffset } from "../support/ports";

const GW = "gateway.networking.k8s.io/v1";
const GATEWAY = "default/gw";
const PORT_OFFSET = listenerPortOffset();
const HOST = "app.test";

const dir = mkdtempSync(join(tmpdir(), "kg-culprit-"));
const b64 = (s: string): string => Buffer.from(s).toString("base64");

/** A self-signed CA certificate on secp256k1: parsed by node:crypto, refused by Go. */
const k1Certificate = (): string => selfSigned(dir, "k1-ca", [], "secp256k1");

const route = (name: string, path: string, service: string, port: number): KubeObject =>
  ({
    apiVersion: GW,
    kind: "HTTPRoute",
    metadata: { name, namespace: "default", generation: 1 },
    spec: {
      parentRefs: [{ name: "gw" }],
      hostnames: [HOST],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: path } }],
          backendRefs: [{ name: service, port }],
        },
      ],
    },
  }) as KubeObject;

const service = (name: string, port: number): KubeObject[] =>
  loopbackService("default", name, port, port);

/** The policy making `svc`'s backend trust the secp256k1 CA. */
const hostilePolicy = (svc: string): KubeObject =>
  ({
    apiVersion: GW,
    kind: "BackendTLSPolicy",
    metadata: { name: svc, namespace: "default", generation: 1 },
    spec: {
      targetRefs: [{ group: "", kind: "Service", name: svc }],
      validation: {
        caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "k1-ca" }],
        hostname: "backend.internal",
      },
    },
  }) as KubeObject;

/**
 * The Gateway (HTTP and HTTPS listeners) and its healthy route, with the two hostile routes
 * (`hostile`), or with client certificates checked against the secp256k1 CA on HTTPS
 * (`clientCa`: Gateway spec.tls.frontend, the HTTPS listener's TLS connection policy).
 */
function objects(o: { readonly hostile: boolean; readonly clientCa: boolean }): KubeObject[] {
  const serving = selfSigned(dir, HOST, ["-addext", `subjectAltName=DNS:${HOST}`]);
  return [
    ns("default"),
    {
      apiVersion: GW,
      kind: "GatewayClass",
      metadata: { name: "kengine", generation: 1 },
      spec: { controllerName: CONTROLLER_NAME },
    },
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "serving", namespace: "default" },
      type: "kubernetes.io/tls",
      data: {
        "tls.crt": b64(serving),
        "tls.key": b64(readFileSync(join(dir, `${HOST}.key`), "utf8")),
      },
    },
    {
      apiVersion: GW,
      kind: "Gateway",
      metadata: { name: "gw", namespace: "default", generation: 1 },
      spec: {
        gatewayClassName: "kengine",
        ...(o.clientCa && {
          tls: {
            frontend: {
              default: {
                validation: {
                  caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "k1-ca" }],
                },
              },
            },
          },
        }),
        listeners: [
          { name: "http", port: 7931, protocol: "HTTP" },
          {
            name: "https",
            port: 7943,
            protocol: "HTTPS",
            hostname: HOST,
            tls: { certificateRefs: [{ name: "serving" }] },
          },
        ],
      },
    },
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "k1-ca", namespace: "default" },
      data: { "ca.crt": k1Certificate() },
    },
    route("healthy", "/healthy", "echo", 8080),
    ...service("echo", 8080),
    ...(o.hostile
      ? [
          route("hostile-a", "/hostile-a", "secure-a", 443),
          route("hostile-b", "/hostile-b", "secure-b", 443),
          ...service("secure-a", 443),
          ...service("secure-b", 443),
          hostilePolicy("secure-a"),
          hostilePolicy("secure-b"),
        ]
      : []),
  ] as KubeObject[];
}

const backends: Server[] = [];
async function echoServer(id: string): Promise<number> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on("end", () => res.end(JSON.stringify({ backend: id, url: req.url })));
  });
  backends.push(server);
  await new Promise<void>(r => server.listen(0, "127.0.0.1", () => r()));
  return (server.address() as AddressInfo).port;
}

afterAll(async () => {
  await Promise.all(backends.map(s => new Promise(r => s.close(r))));
  rmSync(dir, { recursive: true, force: true });
});

const hashOf = (bytes: Buffer): string => createHash("sha256").update(bytes).digest("hex");

const FLAVORS: readonly [ProxyFlavor, "caddy" | "caddy-2.8"][] = [
  ["Bundled", "caddy"],
  ["Caddy", "caddy"],
  ["Kengine", "caddy-2.8"],
];

/**
 * The controller's part, run for real on `objects` against `proxy`: the isolation stage (with
 * the reconciler's translate, render and source map) and the push engine's (push what a
 * build would push, report what the proxy said) until the proxy accepts the current config.
 */
async function converge(flavor: ProxyFlavor, proxy: Caddy, objects: KubeObject[]) {
  const snapshot = snapshotOf(
    await withLoopbackEndpoints(withProxyFlavor(objects, flavor), echoServer),
  );
  const errorListen = `127.0.0.1:${await freePort("127.0.0.1")}`;
  const endpoint: ProxyEndpoint = {
    name: "default/proxy-0",
    address: "127.0.0.1",
    port: 0,
    serverName: "proxy-0",
  };
  let validations = 0;
  const configOf: IsolationDeps["configOf"] = (gateway, refused) => {
    const t = translate(snapshot, { controllerName: CONTROLLER_NAME, refused, candidates: true });
    const ir = t.gateways.find(g => `${g.namespace}/${g.name}` === gateway);
    if (!ir) return undefined;
    const config = toCaddyConfig(ir, {
      bindHost: "127.0.0.1",
      portOffset: PORT_OFFSET,
      errorResponderListen: errorListen,
      management: { adminListen: proxy.adminAddress },
    });
    const bytes = Buffer.from(JSON.stringify(config));
    return {
      hash: hashOf(bytes),
      bytes,
      candidates: t.candidates?.get(gateway) ?? [],
      // as the reconciler computes it: from the IR alone, whatever the bind options
      sources: caddySourceMap(ir),
      validates: flavor === "Bundled",
    };
  };
  const isolation = new Isolation({
    configOf,
    validate: async (_e, bytes) => {
      validations++;
      const r = await proxy.admin("POST", "/kengine/validate", bytes.toString());
      if (r.status === 200) return { ok: true, value: { accepted: true } };
      const message = (JSON.parse(r.text) as { error?: string }).error ?? r.text;
      if (r.status === 400) return { ok: true, value: { accepted: false, message } };
      return { ok: false, error: { kind: "rejected", status: r.status, message } };
    },
    onChange: () => undefined,
    log: () => undefined,
  });

  // The push engine's part: push what a build would push now, report what the proxy said.
  const pushes: string[] = [];
  const refusals: string[] = [];
  for (let attempt = 0; attempt < 8; attempt++) {
    const current = configOf(GATEWAY, isolation.refused())!;
    const config: SealedConfig = { bytes: current.bytes, hash: current.hash };
    const gated = isolation.gate({
      key: GATEWAY,
      targets: [{ endpoint, config }],
      desiredHash: config.hash,
      configProblem: undefined,
    });
    expect(gated.targets).toHaveLength(1);
    const sent = gated.targets[0].config;
    pushes.push(sent.hash);
    const r = await proxy.load(sent.bytes.toString());
    if (r.status === 200) {
      isolation.observe(
        { type: "pushed", name: endpoint.name, hash: sent.hash, durationMs: 1 },
        GATEWAY,
        endpoint,
      );
      if (sent.hash === config.hash) break;
      continue;
    }
    expect(r.status).toBe(400);
    const message = (JSON.parse(r.text) as { error: string }).error;
    refusals.push(message);
    isolation.observe(
      {
        type: "failed",
        name: endpoint.name,
        hash: sent.hash,
        error: { kind: "rejected", status: 400, message },
        attempts: 1,
        retryInMs: 1000,
      },
      GATEWAY,
      endpoint,
    );
    await isolation.idle();
  }

  return { isolation, snapshot, pushes, refusals, validations };
}

describe.each(FLAVORS)("a refused object on %s proxies (peer %s)", (flavor, peer) => {
  let caddy: Caddy | undefined;
  beforeAll(async () => {
    caddy = await startCaddy({ peer, name: `culprit-${flavor}` });
  }, 120_000);
  afterAll(() => caddy?.stop());

  it("a route it refuses is reported on itself; the rest is loaded and answers", async () => {
    const { isolation, snapshot, pushes, refusals, validations } = await converge(
      flavor,
      caddy!,
      objects({ hostile: true, clientCa: false }),
    );
    // Every refusal named a route of a hostile backend; no config was pushed twice.
    expect(refusals.length).toBeGreaterThan(0);
    for (const m of refusals) expect(m).toContain("x509: unsupported elliptic curve");
    expect(new Set(pushes).size).toBe(pushes.length);
    // Stock flavours trace without validating: one refused push per hostile route, then the
    // accepted one. Bundled traces the first refusal, validates the config without that route
    // (refused: its error names the other one, traced too) and without both (accepted).
    if (flavor === "Bundled") {
      expect(validations).toBe(2);
      expect(refusals).toHaveLength(1);
    } else {
      expect(validations).toBe(0);
      expect(refusals).toHaveLength(2);
    }
    expect(pushes).toHaveLength(refusals.length + 1);

    const refused: readonly RefusedObject[] = isolation.refused();
    expect(refused.map(identityOf).sort()).toEqual([
      "HTTPRoute/default/hostile-a",
      "HTTPRoute/default/hostile-b",
    ]);
    const statuses = translate(snapshot, { controllerName: CONTROLLER_NAME, refused }).statuses;
    const accepted = (name: string) =>
      statuses.routes
        .find(r => r.name === name)!
        .parents[0].conditions.find(c => c.type === "Accepted")!;
    for (const name of ["hostile-a", "hostile-b"]) {
      expect(accepted(name)).toMatchObject({ status: "False", reason: "UnsupportedValue" });
      expect(accepted(name).message).toContain("x509: unsupported elliptic curve");
    }
    expect(accepted("healthy").status).toBe("True");

    // The proxy runs the config without them: the healthy route answers on both listeners.
    const http = await request(`http://127.0.0.1:${7931 + PORT_OFFSET}/healthy`, {
      headers: { host: HOST },
      reset: true,
    });
    const body = JSON.parse(await http.body.text()) as { backend: string };
    expect(http.statusCode).toBe(200);
    expect(body.backend).toBe("default/echo-1");
    const https = await httpsGet(7943 + PORT_OFFSET, HOST, HOST, "/healthy");
    expect(https.status).toBe(200);
    const gone = await request(`http://127.0.0.1:${7931 + PORT_OFFSET}/hostile-a`, {
      headers: { host: HOST },
      reset: true,
    });
    await gone.body.dump();
    expect(gone.statusCode).toBe(404);
  }, 120_000);

  it("a listener it refuses is reported on itself; the other listener serves", async () => {
    const { isolation, snapshot, pushes, refusals, validations } = await converge(
      flavor,
      caddy!,
      objects({ hostile: false, clientCa: true }),
    );
    // Caddy names the HTTPS server's first TLS connection policy: the https listener's.
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toContain("setting up TLS connection policies: connection policy 0");
    expect(refusals[0]).toContain("x509: unsupported elliptic curve");
    expect(validations).toBe(flavor === "Bundled" ? 1 : 0);
    expect(pushes).toHaveLength(2);
    expect(new Set(pushes).size).toBe(2);
    const refused = isolation.refused();
    expect(refused.map(identityOf)).toEqual(["Listener/default/gw/https"]);

    const gateway = translate(snapshot, {
      controllerName: CONTROLLER_NAME,
      refused,
    }).statuses.gateways.find(g => g.name === "gw")!;
    const programmed = (listener: string) =>
      gateway.listeners
        .find(l => l.name === listener)!
        .conditions.find(c => c.type === "Programmed")!;
    expect(programmed("https")).toMatchObject({ status: "False", reason: "Invalid" });
    expect(programmed("https").message).toContain("x509: unsupported elliptic curve");
    expect(programmed("http").status).toBe("True");

    const http = await request(`http://127.0.0.1:${7931 + PORT_OFFSET}/healthy`, {
      headers: { host: HOST },
      reset: true,
    });
    await http.body.dump();
    expect(http.statusCode).toBe(200);
  }, 120_000);
});
