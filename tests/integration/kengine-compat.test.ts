/**
 * Kengine compatibility: Kengine is Caddy 2.8 renamed, so what the controller emits for the
 * `Kengine` proxy flavour must run on Caddy 2.8. Every golden snapshot, translated as if its
 * Gateways ran Kengine proxies, is loaded into a real Caddy v2.8.4 (POST /load) and must be
 * accepted; real requests check what 2.8 does differently (wildcard server names without
 * `sni_regexp`). The peer has no layer-4 app (hack/peers/caddy-2.8/main.go says why), so the
 * layer-4 servers are taken out of each config first and counted. Loopback only.
 */
import { readFileSync, readdirSync } from "node:fs";
import { IncomingMessage, Server, ServerResponse, createServer } from "node:http";
import { AddressInfo } from "node:net";
import { join } from "node:path";
import { parseSnapshotYAML, translateGolden } from "../../hack/translate";
import { renderCaddyJSON, toCaddyConfig } from "../../capabilities/caddy";
import { Caddy, startCaddy } from "../support/caddy";
import { freePort, listenerPortOffset } from "../support/ports";
import { httpsGet } from "../support/https";
import { withLoopbackEndpoints } from "../support/loopback";
import { withProxyFlavor } from "../support/flavor";

const goldenDir = join(__dirname, "..", "golden");
const cases = readdirSync(goldenDir)
  .filter(f => f.endsWith(".in.yaml"))
  .map(f => f.slice(0, -".in.yaml".length))
  .sort();
const PORT_OFFSET = listenerPortOffset();

let caddy: Caddy | undefined;
let errorAddr = "";
const backends: Server[] = [];

async function echoServer(id: string): Promise<number> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on("end", () => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ backend: id, url: req.url, host: req.headers.host }));
    });
  });
  backends.push(server);
  await new Promise<void>(r => server.listen(0, "127.0.0.1", () => r()));
  return (server.address() as AddressInfo).port;
}

/** Loads golden `name` translated for Kengine; returns how many layer-4 servers were left out. */
async function load(name: string): Promise<number> {
  const objects = parseSnapshotYAML(readFileSync(join(goldenDir, `${name}.in.yaml`), "utf8"));
  const result = translateGolden(
    withProxyFlavor(await withLoopbackEndpoints(objects, echoServer), "Kengine"),
  );
  let leftOut = 0;
  for (const ir of result.gateways) {
    expect(ir.flavor).toBe("Kengine");
    const config = toCaddyConfig(ir, {
      bindHost: "127.0.0.1",
      portOffset: PORT_OFFSET,
      errorResponderListen: errorAddr,
      management: { adminListen: caddy!.adminAddress },
    });
    const apps = config.apps as Record<string, unknown> & { layer4?: { servers: object } };
    leftOut += Object.keys(apps.layer4?.servers ?? {}).length;
    delete apps.layer4;
    const res = await caddy!.load(renderCaddyJSON(config));
    if (res.status !== 200)
      throw new Error(
        `${name} ${ir.namespace}/${ir.name}: Caddy 2.8 refused the config (${res.status}): ${res.text}`,
      );
  }
  return leftOut;
}

beforeAll(async () => {
  caddy = await startCaddy({ name: "kengine-compat", peer: "caddy-2.8" });
  errorAddr = `127.0.0.1:${await freePort()}`;
  const version = await caddy.admin("GET", "/config/");
  expect(version.status).toBe(200);
});

afterAll(async () => {
  await caddy?.stop();
  await Promise.all(backends.map(s => new Promise(r => s.close(r))));
});

describe("Caddy 2.8 accepts every golden config of the Kengine flavour", () => {
  it.each(cases)("%s", async name => {
    await load(name);
  });

  it("the layer-4 part is what was left out (TLS passthrough and TCP/UDP goldens have some)", async () => {
    expect(await load("tls-passthrough")).toBeGreaterThan(0);
    expect(await load("basic")).toBe(0);
  });
});

describe("requests through Caddy 2.8", () => {
  /** The status of GET / over TLS with server name `sni` and Host `host`, and who answered. */
  const get = async (sni: string, host: string): Promise<{ status: number; backend?: string }> => {
    const { status, body } = await httpsGet(443 + PORT_OFFSET, sni, host);
    try {
      return { status, backend: (JSON.parse(body) as { backend?: string }).backend };
    } catch {
      return { status };
    }
  };

  it("a wildcard HTTPS listener serves names of one and of several labels without sni_regexp", async () => {
    await load("https");
    const exact = await get("www.example.com", "www.example.com");
    expect(exact).toEqual({ status: 200, backend: "default/web-1" });
    expect(await get("a.example.com", "a.example.com")).toEqual(exact);
    expect(await get("a.b.c.example.com", "a.b.c.example.com")).toEqual(exact);
    // Misdirected: the server name picked the wildcard listener, Host names the exact one.
    expect((await get("a.example.com", "www.example.com")).status).toBe(421);
  });
});
