/**
 * XBackend backendRefs (Gateway API v1.7.0 experimental) through a real proxy of each flavour
 * that can run them: the golden `xbackend` is translated as it stands, with its backends moved
 * to servers this test starts on loopback:
 * - the ExternalHostname `external` names `localhost` and a live HTTP server's port (the attack
 *   docs/operations.md §11 closes: a tenant's backend on the proxy's own loopback): refused by the rules admission
 *   applies too (validation/egress.ts) although the golden's class allows external hostnames:
 *   500, the route's ResolvedRefs=False, and the server never sees a request. An allowed name
 *   cannot be dialled on this host at all (the guard refuses every address of the proxy's own
 *   host, and only loopback is available here): proxy/internal/egress's tests and the
 *   tenant-boundary e2e prove that path;
 * - the EndpointSelector `pods` (cookie `pods-session`) resolves through the Service `web` with
 *   the same selector; its two ready endpoints become servers on 127.0.0.1 and 127.0.0.2 at the
 *   XBackend's port: a session's cookie sticks to one of them (Bundled: our kengine_session
 *   policy; stock Caddy's cookie policy on the Caddy flavour);
 * - the XBackend `wss` (protocol WSS, TLS ServerOnly for `localhost`, CA from the ConfigMap
 *   `echo-ca`), turned into an EndpointSelector of the pods `pods` selects (a name would be
 *   refused, above): node:tls WebSocket echo servers on both ready endpoints whose certificate
 *   (for `localhost`) this test's CA signed: a client's `ws://` upgrade goes through the HTTP
 *   listener and on to the backend over verified TLS; one frame each way;
 * - XBackends that do not resolve (no ReferenceGrant, ClientAndServer, no Service with the
 *   selector, missing) answer 500.
 * Loopback only (127.0.0.1, 127.0.0.2).
 */
import { readFileSync } from "node:fs";
import { IncomingMessage, Server, createServer } from "node:http";
import { AddressInfo, Socket, connect as connectTCP } from "node:net";
import { join } from "node:path";
import { Server as TLSServer, createServer as createTLSServer } from "node:tls";
import { request } from "undici";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import {
  createAuthority,
  generateKeyPair,
  issueServerCertificate,
} from "../../capabilities/pki/pki";
import { KubeObject, snapshotOf } from "../../capabilities/snapshot";
import { translate } from "../../capabilities/translate";
import { parseSnapshotYAML } from "../../hack/translate";
import { Caddy, loadGateway, startCaddy } from "../support/caddy";
import { withProxyFlavor } from "../support/flavor";
import { freePort, listenerPortOffset } from "../support/ports";
import { WsRoundTrip, wsEchoOnUpgrade, wsRoundTrip } from "../support/websocket";

const PORT_OFFSET = listenerPortOffset();
const GOLDEN = join(__dirname, "..", "golden", "xbackend.in.yaml");
const HOST = "xb.example.com";
const FOLLOW_UPS = 20;

const servers: (Server | TLSServer)[] = [];
const upgraded = new Set<Socket>();
/** What the WebSocket backend saw: the handshake's headers, and that it came over TLS with SNI. */
let wsSeen: { headers: IncomingMessage["headers"]; servername?: string } | undefined;

async function listen(s: Server | TLSServer, host: string, port = 0): Promise<number> {
  servers.push(s);
  await new Promise<void>((resolve, reject) => {
    s.once("error", reject);
    s.listen(port, host, () => resolve());
  });
  return (s.address() as AddressInfo).port;
}

/** Requests each `named` server received. */
const received = new Map<string, number>();

/** An HTTP server answering every request with `name`. */
const named = (name: string): Server =>
  createServer((req, res) => {
    received.set(name, (received.get(name) ?? 0) + 1);
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-type": "text/plain" }).end(name));
  });

/** A WebSocket echo server over TLS (node:tls + node:http, no WebSocket library). */
function wssBackend(cert: string, key: string): TLSServer {
  const http = createServer((_req, res) => res.writeHead(426).end("websocket only"));
  http.on(
    "upgrade",
    wsEchoOnUpgrade((req, socket) => {
      const sni = (socket as unknown as { servername?: string | false }).servername;
      wsSeen = { headers: req.headers, servername: sni || undefined };
      upgraded.add(socket);
    }),
  );
  return createTLSServer({ cert, key, ALPNProtocols: ["http/1.1"] }, s => {
    upgraded.add(s);
    http.emit("connection", s);
  });
}

const seenByBackend = () => wsSeen;

let objects: KubeObject[] = [];

beforeAll(async () => {
  const now = new Date(Date.now() - 60_000);
  const ca = createAuthority({
    commonName: "xbackend test CA",
    keys: generateKeyPair(),
    notBefore: now,
    lifetimeDays: 2,
  });
  if (!ca.ok) throw new Error(ca.error);
  const leaf = issueServerCertificate(ca.value, {
    commonName: "localhost",
    dnsNames: ["localhost"],
    keys: generateKeyPair(),
    notBefore: now,
    lifetimeDays: 1,
  });
  if (!leaf.ok) throw new Error(leaf.error);

  const externalPort = await listen(named("external"), "127.0.0.1");
  const podPort = await freePort("127.0.0.1");
  await listen(named("pod-1"), "127.0.0.1", podPort);
  await listen(named("pod-2"), "127.0.0.2", podPort);
  // The WSS backend on both ready endpoints of the pods (same port, like one pod port).
  const wssPort = await freePort("127.0.0.1");
  for (const host of ["127.0.0.1", "127.0.0.2"])
    await listen(
      wssBackend(leaf.value.certificatePem, leaf.value.privateKey.reveal()),
      host,
      wssPort,
    );

  const ips = new Map([
    ["10.244.0.31", "127.0.0.1"],
    ["10.244.0.32", "127.0.0.2"],
    ["10.244.0.33", "127.0.0.3"],
  ]);
  objects = parseSnapshotYAML(readFileSync(GOLDEN, "utf8")).map(o => {
    const x = o as KubeObject & { spec?: Record<string, unknown>; data?: Record<string, string> };
    if (o.kind === "ConfigMap" && o.metadata.name === "echo-ca")
      return { ...x, data: { "ca.crt": ca.value.certificatePem } } as KubeObject;
    if (o.kind === "EndpointSlice") {
      const s = o as KubeObject & { endpoints: { addresses: string[] }[] };
      return {
        ...s,
        endpoints: s.endpoints.map(e => ({
          ...e,
          addresses: e.addresses.map(a => ips.get(a) ?? a),
        })),
      } as KubeObject;
    }
    if (o.kind !== "XBackend") return o;
    const spec = x.spec as Record<string, unknown>;
    const at = (port: number): KubeObject =>
      ({
        ...x,
        spec: {
          ...spec,
          ...(spec.type === "ExternalHostname" && { externalHostname: { hostname: "localhost" } }),
          port: { number: port },
        },
      }) as KubeObject;
    if (o.metadata.name === "external") return at(externalPort);
    if (o.metadata.name === "pods") return at(podPort);
    if (o.metadata.name === "wss")
      return {
        ...x,
        spec: {
          type: "EndpointSelector",
          endpointSelector: { matchLabels: { app: "web" } },
          port: { number: wssPort },
          protocol: spec.protocol,
          tls: {
            mode: "ServerOnly",
            validation: {
              hostname: "localhost",
              caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "echo-ca" }],
            },
          },
        },
      } as KubeObject;
    return o;
  });
});

afterAll(async () => {
  for (const s of upgraded) s.destroy();
  for (const s of servers) {
    if (s instanceof Server) s.closeAllConnections();
    await new Promise(r => s.close(r));
  }
});

async function get(
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; cookie?: string }> {
  const res = await request(`http://127.0.0.1:${80 + PORT_OFFSET}${path}`, {
    headers: { host: HOST, ...headers },
  });
  const raw = res.headers["set-cookie"];
  const first = Array.isArray(raw) ? raw[0] : raw;
  return { status: res.statusCode, body: await res.body.text(), cookie: first?.split(";")[0] };
}

/** A `ws://` upgrade through the HTTP listener, one text frame there and back. */
async function wsThroughProxy(text: string): Promise<WsRoundTrip> {
  const socket = connectTCP({ host: "127.0.0.1", port: 80 + PORT_OFFSET });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  return wsRoundTrip(socket, HOST, "/wss", text);
}

describe.each<ProxyFlavor>(["Bundled", "Caddy"])("XBackend on the %s flavour", flavor => {
  let caddy: Caddy | undefined;
  let result: ReturnType<typeof translate> | undefined;
  beforeAll(async () => {
    caddy = await startCaddy({ name: `xbackend-${flavor.toLowerCase()}`, peer: "caddy" });
    result = translate(snapshotOf(withProxyFlavor(objects, flavor)));
    expect(result.gateways).toHaveLength(1);
    await loadGateway(caddy, result.gateways[0]!);
  });
  afterAll(() => caddy?.stop());

  it("an ExternalHostname naming the proxy's own host is never dialled: 500, and the route says why", async () => {
    for (let i = 0; i < 5; i++) expect(await get("/external")).toMatchObject({ status: 500 });
    expect(received.get("external") ?? 0).toBe(0);
    const route = result!.statuses.routes.find(r => r.name === "xbackends");
    expect(route?.parents[0]?.conditions.find(c => c.type === "ResolvedRefs")).toMatchObject({
      status: "False",
      message: expect.stringContaining("loopback name"),
    });
  });

  it("an EndpointSelector XBackend's cookie session sticks to one pod", async () => {
    const sessions: { body: string; cookie: string }[] = [];
    for (let i = 0; i < 40 && new Set(sessions.map(s => s.body)).size < 2; i++) {
      const first = await get("/sticky");
      expect(first.status).toBe(200);
      expect(first.cookie?.startsWith("pods-session=")).toBe(true);
      sessions.push({ body: first.body, cookie: first.cookie! });
    }
    // Both ready endpoints serve new sessions (the not-ready one never: nothing listens there).
    expect(new Set(sessions.map(s => s.body))).toEqual(new Set(["pod-1", "pod-2"]));
    for (const s of sessions.slice(-2))
      for (let i = 0; i < FOLLOW_UPS; i++)
        expect(await get("/sticky", { cookie: s.cookie })).toMatchObject({
          status: 200,
          body: s.body,
        });
  });

  it("a WSS XBackend: the upgrade reaches the TLS backend, verified, and frames flow both ways", async () => {
    wsSeen = undefined;
    const text = `frame via ${flavor}`;
    const r = await wsThroughProxy(text);
    expect(r.status).toBe("HTTP/1.1 101 Switching Protocols");
    expect(r.accepted).toBe(true);
    expect([...r.echo.subarray(0, 2)]).toEqual([0x81, Buffer.byteLength(text)]);
    expect(r.echo.subarray(2).toString()).toBe(text);
    const seen = seenByBackend();
    expect(seen?.servername).toBe("localhost");
    expect(seen?.headers.upgrade?.toLowerCase()).toBe("websocket");
  });

  it("XBackends that do not resolve answer 500", async () => {
    for (const p of ["/private", "/mtls", "/no-service", "/missing"]) {
      const r = await request(`http://127.0.0.1:${80 + PORT_OFFSET}${p}`, {
        headers: { host: "bad.example.com" },
      });
      await r.body.text();
      expect([p, r.statusCode]).toEqual([p, 500]);
    }
  });
});
