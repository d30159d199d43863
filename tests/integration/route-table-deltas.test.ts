/**
 * Route-table deltas against a real Bundled proxy: the real
 * translator, renderer and sealing, the real push engine and admin client over the mTLS
 * management listener, a real Caddy (our build, proxy/routetable) and real HTTP on loopback.
 *
 * - A route change on a host, and a route with a new hostname, reach the proxy as deltas: the
 *   table's `version` goes up, Caddy logs no new config load, `GET /config/` is unchanged, and
 *   a client sending a request every 20 ms to another route of the same listener sees no
 *   failure; the changed route answers at once.
 * - A delta the proxy refuses answers 400 naming the host, which the push engine turns into the
 *   words of a `/load` error: caddy/load-errors.ts locates it inside that host's list.
 * - A listener change is a `/load`.
 * - A new push engine (a restarted controller) adopts the proxy as it runs after deltas.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { IncomingMessage, Server, ServerResponse, createServer } from "node:http";
import { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AdminClient, Fleet, FleetEvent, ProxyEndpoint } from "../../capabilities/proxies";
import { ManagementSpec } from "../../capabilities/caddy";
import { deltaRefusal } from "../../capabilities/caddy/table-deltas";
import { sealGatewayConfig } from "../../capabilities/reconcile/plan";
import { errorLocation } from "../../capabilities/caddy/load-errors";
import { KubeObject, snapshotOf } from "../../capabilities/snapshot";
import { translate } from "../../capabilities/translate";
import { CONTROLLER_NAME } from "../../capabilities/ownership";
import { Caddy } from "../support/caddy";
import { ManagedCaddy, startManagedCaddy } from "../support/managed-caddy";
import { loopbackService, ns } from "../support/arbitrary-hostile";
import { selfSigned } from "../support/demo-gateway";
import { freePort } from "../support/ports";
import { get, steadyClient } from "../support/traffic";

const GW = "gateway.networking.k8s.io/v1";
const SERVICE = "proxy";
const NAMESPACE = "default";
const TABLE = "default/gw/http-80";
/** Listener ports are moved to free ports (80 → `web`, 81 → `web + 1`): no port shared with other tests. */
let PORT_OFFSET = 0;
const must = <T>(r: { ok: true; value: T } | { ok: false; error: unknown }): T => {
  if (!r.ok) throw new Error(`unexpected failure: ${JSON.stringify(r.error)}`);
  return r.value;
};
const dir = mkdtempSync(join(tmpdir(), "kg-rtdelta-"));

const route = (name: string, host: string, path: string, port = 80): KubeObject =>
  ({
    apiVersion: GW,
    kind: "HTTPRoute",
    metadata: { name, namespace: NAMESPACE, generation: 1 },
    spec: {
      parentRefs: [{ name: "gw", port }],
      hostnames: [host],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: path } }],
          backendRefs: [{ name: "app", port: 8080 }],
        },
      ],
    },
  }) as KubeObject;

function objects(backend: number, routes: KubeObject[], ports = [80]): KubeObject[] {
  return [
    ns(NAMESPACE),
    {
      apiVersion: GW,
      kind: "GatewayClass",
      metadata: { name: "kengine", generation: 1 },
      spec: { controllerName: CONTROLLER_NAME },
    },
    {
      apiVersion: GW,
      kind: "Gateway",
      metadata: { name: "gw", namespace: NAMESPACE, generation: 1 },
      spec: {
        gatewayClassName: "kengine",
        listeners: ports.map(port => ({ name: `http-${port}`, port, protocol: "HTTP" })),
      },
    },
    ...loopbackService(NAMESPACE, "app", 8080, backend),
    ...routes,
  ] as KubeObject[];
}

let caddy: Caddy;
let backend: Server;
let spec: ManagementSpec;
let client: AdminClient;
let endpoint: ProxyEndpoint;
let errorListen: string;
const events: FleetEvent[] = [];

let proxy: ManagedCaddy;

beforeAll(async () => {
  backend = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on("end", () => res.end(`backend ${req.url}`));
  });
  await new Promise<void>(r => backend.listen(0, "127.0.0.1", () => r()));
  proxy = await startManagedCaddy("rtdelta", SERVICE, NAMESPACE);
  ({ caddy, spec, client, endpoint } = proxy);
  errorListen = `127.0.0.1:${await freePort("127.0.0.1")}`;
  for (;;) {
    const web = await freePort("127.0.0.1");
    const next = await freePort("127.0.0.1");
    if (next === web + 1) {
      PORT_OFFSET = web - 80;
      break;
    }
  }
}, 120_000);

afterAll(async () => {
  await proxy?.stop();
  await new Promise(r => backend?.close(r));
  rmSync(dir, { recursive: true, force: true });
});

/** What a build pushes for these routes (the reconciler's sealing, loopback bind). */
function sealed(routes: KubeObject[], ports?: number[]) {
  const port = (backend.address() as AddressInfo).port;
  const t = translate(snapshotOf(objects(port, routes, ports)), {
    controllerName: CONTROLLER_NAME,
  });
  const [ir] = t.gateways;
  return must(
    sealGatewayConfig(ir, spec, {
      bindHost: "127.0.0.1",
      portOffset: PORT_OFFSET,
      errorResponderListen: errorListen,
    }),
  );
}

const fleetOf = (adopt = false) =>
  new Fleet({ client, adoptRunning: adopt, onEvent: e => events.push(e) });

const table = async () =>
  (await client.routeTables(endpoint)).ok
    ? must(await client.routeTables(endpoint)).find(t => t.id === TABLE)
    : undefined;
/** The last line a config load makes Caddy log ("server running", with its time stamp). */
const lastLoadLine = () =>
  caddy
    .log()
    .split("\n")
    .filter(l => l.includes('"msg":"server running"'))
    .pop();
const webPort = () => 80 + PORT_OFFSET;

describe("route-table deltas on the Bundled proxy", () => {
  const steady = route("steady", "steady.test", "/");
  let fleet: Fleet;

  it("a route change and a new hostname are deltas: version up, no load, no failed request", async () => {
    fleet = fleetOf();
    const v1 = sealed([steady, route("changing", "changing.test", "/v1")]);
    expect(v1.tables?.tables.get(TABLE)).toBeDefined();
    fleet.update([{ endpoint, config: v1 }]);
    await fleet.settled();
    expect(fleet.state(endpoint.name)).toMatchObject({ phase: "Programmed", hash: v1.hash });
    expect((await get("127.0.0.1", "changing.test", "/v1", webPort())).status).toBe(200);
    const before = await table();
    const loaded = lastLoadLine();
    expect(loaded).toBeDefined();
    const config = await caddy.admin("GET", "/config/");

    const traffic = steadyClient("127.0.0.1", "steady.test", { port: webPort(), intervalMs: 20 });
    await new Promise(r => setTimeout(r, 300));
    const v2 = sealed([steady, route("changing", "changing.test", "/v2")]);
    fleet.update([{ endpoint, config: v2 }]);
    await fleet.settled();
    // The new rule answers at once; the old one no longer does.
    expect((await get("127.0.0.1", "changing.test", "/v2", webPort())).status).toBe(200);
    expect((await get("127.0.0.1", "changing.test", "/v1", webPort())).status).toBe(404);
    const v3 = sealed([
      steady,
      route("changing", "changing.test", "/v2"),
      route("fresh", "fresh.test", "/"),
    ]);
    fleet.update([{ endpoint, config: v3 }]);
    await fleet.settled();
    expect((await get("127.0.0.1", "fresh.test", "/", webPort())).body).toBe("backend /");
    await new Promise(r => setTimeout(r, 300));
    const result = await traffic.stop();

    expect(result.sent).toBeGreaterThan(10);
    expect(result.failures).toEqual([]);
    const after = await table();
    expect(after!.version).toBe(before!.version + 2);
    expect(after!.hash).toBe(v3.tables!.tables.get(TABLE)!.hash);
    expect(lastLoadLine()).toBe(loaded);
    expect((await caddy.admin("GET", "/config/")).text).toBe(config.text);
    const kinds = events.flatMap(e => (e.type === "pushed" ? [e.kind] : []));
    expect(kinds).toEqual(["load", "delta", "delta"]);
    expect(fleet.state(endpoint.name)).toMatchObject({ phase: "Programmed", hash: v3.hash });
    // A check of what the proxy runs (base config + tables) finds it unchanged.
    await fleet.verify();
    expect(events.some(e => e.type === "drifted")).toBe(false);
  }, 60_000);

  it("a new push engine adopts the proxy as it runs after deltas", async () => {
    fleet.close();
    events.length = 0;
    fleet = fleetOf(true);
    const v3 = sealed([
      steady,
      route("changing", "changing.test", "/v2"),
      route("fresh", "fresh.test", "/"),
    ]);
    fleet.update([{ endpoint, config: v3 }]);
    await fleet.settled();
    expect(events.map(e => e.type)).toEqual(["adopted"]);
  }, 30_000);

  it("a refused delta answers 400 naming the host; its message locates that host's list", async () => {
    const k1 = selfSigned(dir, "k1", [], "secp256k1");
    const der = k1.replace(/-----(BEGIN|END) CERTIFICATE-----/g, "").replace(/\s+/g, "");
    const hostile = [
      {
        handle: [
          {
            handler: "reverse_proxy",
            upstreams: [{ dial: "127.0.0.1:1" }],
            transport: {
              protocol: "http",
              tls: { ca: { provider: "inline", trusted_ca_certs: [der] } },
            },
          },
        ],
      },
    ];
    const info = must(await client.routeTables(endpoint)).find(t => t.id === TABLE)!;
    const r = await client.postRouteTable(
      endpoint,
      TABLE,
      JSON.stringify({ hosts: { "bad.test": hostile } }),
      info.hash,
    );
    expect(r.ok).toBe(false);
    const error = !r.ok ? r.error : undefined;
    expect(error).toMatchObject({ kind: "rejected", status: 400 });
    expect(error!.message).toMatch(/^host "bad\.test": /);
    expect(error!.message).toContain("unsupported elliptic curve");
    const v3 = sealed([
      steady,
      route("changing", "changing.test", "/v2"),
      route("fresh", "fresh.test", "/"),
    ]);
    const located = errorLocation(deltaRefusal(v3.tables!.tables.get(TABLE)!, error!.message));
    expect(located).toBe("/http/servers/http-80/routes/0/handle/0/hosts/bad.test/0");
    // The table is as it was.
    expect((await table())!.hash).toBe(info.hash);
  }, 30_000);

  it("a listener change is a load", async () => {
    events.length = 0;
    const v4 = sealed([steady, route("other", "other.test", "/", 81)], [80, 81]);
    fleet.update([{ endpoint, config: v4 }]);
    await fleet.settled();
    expect(events.flatMap(e => (e.type === "pushed" ? [e.kind] : []))).toEqual(["load"]);
    expect((await get("127.0.0.1", "other.test", "/", 81 + PORT_OFFSET)).status).toBe(200);
    expect((await table())!.version).toBe(1);
    fleet.close();
  }, 30_000);
});
