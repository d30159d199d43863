/**
 * Every flavour loads what the controller pushes. Each golden snapshot is
 * translated for a proxy flavour and sealed exactly as the controller seals it for that flavour
 * (reconcile/plan.ts sealGatewayConfig: management listener with client certificates, readiness
 * server, shutdown delay, traffic metrics), then loaded into the real binary: the Bundled build for
 * Bundled, the same binary with configs free of our modules for stock Caddy, Caddy 2.8.4 for
 * Kengine (which has no layer-4 app: those servers are taken out of the sealed bytes, as in
 * kengine-compat.test.ts, and counted). After each load the proxy must run that very config (its
 * readiness server's @id names the hash).
 *
 * Then the metric series: requests with random Host headers (HTTP and HTTPS) must not add series
 * to the proxy's /metrics. Loopback only.
 */
import { readFileSync, readdirSync } from "node:fs";
import { IncomingMessage, Server, ServerResponse, createServer } from "node:http";
import { AddressInfo } from "node:net";
import { join } from "node:path";
import { request } from "undici";
import { parseSnapshotYAML, translateGolden } from "../../hack/translate";
import { DEFAULT_CERT_TAG, ManagementSpec } from "../../capabilities/caddy";
import {
  createAuthority,
  generateKeyPair,
  issueServerCertificate,
} from "../../capabilities/pki/pki";
import { SecretPem } from "../../capabilities/pki/secret";
import { parsePrometheusText } from "../../capabilities/proxies/prom-text";
import { sealGatewayConfig } from "../../capabilities/reconcile/plan";
import { DEFAULT_PROXY_FLAVOR, ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { Caddy, startCaddy } from "../support/caddy";
import { withProxyFlavor } from "../support/flavor";
import { httpsGet } from "../support/https";
import { withLoopbackEndpoints } from "../support/loopback";
import { freePort, listenerPortOffset } from "../support/ports";

const goldenDir = join(__dirname, "..", "golden");
const cases = readdirSync(goldenDir)
  .filter(f => f.endsWith(".in.yaml"))
  .map(f => f.slice(0, -".in.yaml".length))
  .sort();
const PORT_OFFSET = listenerPortOffset();

const unwrap = <T>(r: { ok: true; value: T } | { ok: false; error: string }): T => {
  if (!r.ok) throw new Error(r.error);
  return r.value;
};
const validity = { notBefore: new Date(Date.now() - 60_000), lifetimeDays: 2 };
const ca = unwrap(
  createAuthority({ commonName: "controller CA", keys: generateKeyPair(), ...validity }),
);
const serving = unwrap(
  issueServerCertificate(ca, {
    commonName: "proxy",
    dnsNames: ["proxy-0.gw-admin.default.svc"],
    keys: generateKeyPair(),
    ...validity,
    lifetimeDays: 1,
  }),
);

const backends: Server[] = [];
async function echoServer(id: string): Promise<number> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on("end", () => res.end(JSON.stringify({ backend: id })));
  });
  backends.push(server);
  await new Promise<void>(r => server.listen(0, "127.0.0.1", () => r()));
  return (server.address() as AddressInfo).port;
}

interface Proxy {
  readonly caddy: Caddy;
  readonly spec: ManagementSpec;
  readonly errorAddr: string;
}

async function startProxy(flavor: ProxyFlavor): Promise<Proxy> {
  const caddy = await startCaddy({
    name: `sealed-${flavor.toLowerCase()}`,
    peer: flavor === "Kengine" ? "caddy-2.8" : "caddy",
  });
  const spec: ManagementSpec = {
    listenAddress: `127.0.0.1:${await freePort()}`,
    readinessAddress: `127.0.0.1:${await freePort()}`,
    adminAddress: caddy.adminAddress,
    serverCertTag: DEFAULT_CERT_TAG,
    clientCaPem: ca.certificatePem,
    serverCertificate: {
      kind: "pem",
      certificatePem: serving.certificatePem,
      privateKey: new SecretPem(serving.privateKey.reveal()),
    },
  };
  return { caddy, spec, errorAddr: `127.0.0.1:${await freePort()}` };
}

/**
 * Seals each Gateway of golden `name` for `flavor` as the controller does and loads it; returns
 * how many layer-4 servers were taken out (Kengine only) and the last sealed bytes.
 */
async function loadSealed(
  proxy: Proxy,
  flavor: ProxyFlavor,
  name: string,
): Promise<{ leftOut: number; config: { apps: { http: Record<string, unknown> } } }> {
  const objects = parseSnapshotYAML(readFileSync(join(goldenDir, `${name}.in.yaml`), "utf8"));
  const result = translateGolden(
    withProxyFlavor(await withLoopbackEndpoints(objects, echoServer), flavor),
  );
  let leftOut = 0;
  let config: { apps: { http: Record<string, unknown>; layer4?: { servers: object } } } | undefined;
  for (const ir of result.gateways) {
    expect(ir.flavor ?? DEFAULT_PROXY_FLAVOR).toBe(flavor);
    const sealed = sealGatewayConfig(ir, proxy.spec, {
      bindHost: "127.0.0.1",
      portOffset: PORT_OFFSET,
      errorResponderListen: proxy.errorAddr,
    });
    if (!sealed.ok) throw new Error(`${name}: not sealed: ${sealed.error.join("; ")}`);
    let bytes = sealed.value.bytes.toString("utf8");
    config = JSON.parse(bytes) as NonNullable<typeof config>;
    if (flavor === "Kengine" && config.apps.layer4) {
      leftOut += Object.keys(config.apps.layer4.servers).length;
      delete config.apps.layer4;
      bytes = JSON.stringify(config);
    }
    const res = await proxy.caddy.load(bytes);
    if (res.status !== 200)
      throw new Error(
        `${name} ${ir.namespace}/${ir.name} (${flavor}): the proxy refused the sealed config (${res.status}): ${res.text}`,
      );
    // it runs that very config
    const id = await proxy.caddy.admin("GET", `/id/kengine-config-${sealed.value.hash}/@id`);
    expect(id.status).toBe(200);
  }
  return { leftOut, config: config! };
}

/** Sample lines of Caddy's HTTP metrics, and the distinct host labels among them. */
async function series(caddy: Caddy): Promise<{ lines: number; hosts: Set<string> }> {
  const text = (await caddy.admin("GET", "/metrics")).text;
  const samples = parsePrometheusText(text, n => n.startsWith("caddy_http_"));
  return {
    lines: samples.length,
    hosts: new Set(samples.flatMap(s => (s.labels.host === undefined ? [] : [s.labels.host]))),
  };
}

const randomHost = (i: number) => `h${i}-${Math.random().toString(36).slice(2, 10)}.flood.test`;

afterAll(async () => {
  await Promise.all(backends.map(s => new Promise(r => s.close(r))));
});

describe.each(["Bundled", "Caddy", "Kengine"] as const)("the %s flavour", flavor => {
  let proxy: Proxy | undefined;
  beforeAll(async () => {
    proxy = await startProxy(flavor);
  });
  afterAll(async () => {
    await proxy?.caddy.stop();
  });

  it.each(cases)(`loads golden %s sealed for ${flavor}`, async name => {
    await loadSealed(proxy!, flavor, name);
  });

  it("turns traffic metrics on the way this flavour accepts", async () => {
    const { leftOut, config } = await loadSealed(proxy!, flavor, "basic");
    expect(leftOut).toBe(0);
    if (flavor === "Kengine") {
      expect(config.apps.http.metrics).toBeUndefined();
      expect(await loadSealed(proxy!, flavor, "tls-passthrough")).toMatchObject({
        leftOut: expect.any(Number),
      });
    } else expect(config.apps.http.metrics).toEqual({ per_host: true });
  });

  it("HTTP: 500 requests with random Host headers add no metric series", async () => {
    await loadSealed(proxy!, flavor, "hostnames");
    const get = (host: string) =>
      request(`http://127.0.0.1:${80 + PORT_OFFSET}/`, { headers: { host }, reset: true }).then(
        async r => {
          await r.body.text();
          return r.statusCode;
        },
      );
    // every kind of answer once (200 and 404 on configured and unknown hosts), then the flood
    for (const h of ["foo.example.com", "a.bar.example.com", "zzz.example.com", "unknown.org"])
      await get(h);
    const before = await series(proxy!.caddy);
    for (let i = 0; i < 500; i++) expect([200, 404]).toContain(await get(randomHost(i)));
    const after = await series(proxy!.caddy);
    expect(after.lines).toBe(before.lines);
    expect([...after.hosts].sort()).toEqual([...before.hosts].sort());
    if (flavor === "Kengine") expect(after.hosts.size).toBe(0);
    else expect([...after.hosts].sort()).toEqual(["_other", "foo.example.com"]);
  });

  it("HTTPS: 200 requests with random server names and Host headers add no metric series", async () => {
    await loadSealed(proxy!, flavor, "https");
    const get = (sni: string, host: string) => httpsGet(443 + PORT_OFFSET, sni, host);
    // Random server names under the wildcard listener, with the same or a random Host (421).
    const flood = async (from: number, n: number) => {
      for (let i = from; i < from + n; i++) {
        const h = `${randomHost(i).split(".")[0]}.example.com`;
        expect([200, 404, 421]).toContain((await get(h, i % 2 ? h : randomHost(i))).status);
      }
    };
    await get("www.example.com", "www.example.com");
    await flood(0, 10); // every kind of answer once
    const before = await series(proxy!.caddy);
    await flood(10, 200);
    const after = await series(proxy!.caddy);
    expect(after.lines).toBe(before.lines);
    expect(after.hosts.size).toBe(0); // no host label where Caddy cannot bound it
  });
});
