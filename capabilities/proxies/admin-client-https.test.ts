/**
 * The admin client's own transport (node:https) against a real mTLS server on loopback, as a
 * proxy's management listener: the server name as SNI and Host while the IP is dialled, kept
 * connections for route-table requests only, certificate verification, the connect timeout,
 * a kept connection closed under a request, and a close that waits for requests in flight.
 */
import { createServer as createTcpServer, Server as TcpServer } from "node:net";
import { createServer, Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import type { TLSSocket } from "node:tls";
import { AdminClient, ProxyEndpoint } from "./admin-client";
import {
  createAuthority,
  generateKeyPair,
  issueClientCertificate,
  issueServerCertificate,
} from "../pki/pki";
import { Result } from "../result";

const unwrap = <T>(r: Result<T, string>): T => {
  if (!r.ok) throw new Error(r.error);
  return r.value;
};
const validity = { notBefore: new Date(Date.now() - 60_000), lifetimeDays: 1 };
const ca = unwrap(
  createAuthority({ commonName: "test CA", keys: generateKeyPair(), ...validity, lifetimeDays: 2 }),
);
const serverName = "proxy-0.gw-admin.default.svc";
const serving = unwrap(
  issueServerCertificate(ca, {
    commonName: serverName,
    dnsNames: [serverName],
    keys: generateKeyPair(),
    ...validity,
  }),
);
const identity = unwrap(
  issueClientCertificate(ca, { commonName: "controller", keys: generateKeyPair(), ...validity }),
);
const credentials = {
  caPem: ca.certificatePem,
  certificatePem: identity.certificatePem,
  privateKey: identity.privateKey,
};

/** What the server saw of each request. */
interface Seen {
  readonly path: string;
  readonly host: string | undefined;
  readonly connection: string | undefined;
  readonly sni: string | false;
  readonly client: string | undefined;
  readonly socket: TLSSocket;
}
const seen: Seen[] = [];
/** Per path: how to answer instead of the default (200 with a route-table list). */
const handlers = new Map<string, (req: IncomingMessage, res: ServerResponse) => void>();
const sockets = new Set<Duplex>();
let server: Server;
let silent: TcpServer;
let endpoint: ProxyEndpoint;

beforeAll(async () => {
  server = createServer(
    {
      key: serving.privateKey.reveal(),
      cert: serving.certificatePem,
      ca: ca.certificatePem,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      // `servername`: the SNI the client sent (not in @types/node 20)
      const socket = req.socket as TLSSocket & { servername?: string | false };
      seen.push({
        path: req.url ?? "",
        host: req.headers.host,
        connection: req.headers.connection,
        sni: socket.servername ?? false,
        client: (socket.getPeerCertificate().subject as { CN?: string } | undefined)?.CN,
        socket,
      });
      req.resume();
      const handler = handlers.get(req.url ?? "");
      if (handler) return handler(req, res);
      res.writeHead(200, { "content-type": "application/json" });
      res.end("[]");
    },
  );
  server.on("connection", s => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>(r => server.listen(0, "127.0.0.1", r));
  // accepts TCP, never speaks TLS
  silent = createTcpServer(s => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>(r => silent.listen(0, "127.0.0.1", r));
  endpoint = {
    name: "proxy-0",
    address: "127.0.0.1",
    port: (server.address() as AddressInfo).port,
    serverName,
  };
});

afterEach(() => {
  seen.length = 0;
  handlers.clear();
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all([new Promise(r => server.close(r)), new Promise(r => silent.close(r))]);
});

const hash = "c".repeat(64);
const connections = () => new Set(seen.map(s => s.socket)).size;

describe("AdminClient over node:https", () => {
  it("dials the IP, names the proxy by SNI and Host, presents the client certificate, closes the connection", async () => {
    const admin = new AdminClient(credentials);
    for (let i = 0; i < 3; i++)
      expect(await admin.runsConfig(endpoint, hash)).toEqual({ ok: true, value: true });
    expect(seen).toHaveLength(3);
    for (const s of seen) {
      expect(s.sni).toBe(serverName);
      expect(s.host).toBe(`${serverName}:${endpoint.port}`);
      expect(s.connection).toBe("close");
      expect(s.client).toBe("controller");
    }
    expect(connections()).toBe(3);
    expect(admin.peerCertificate(endpoint)).toMatchObject({
      serverName,
      notAfter: serving.notAfter,
      notBefore: serving.notBefore,
    });
    await admin.close();
  });

  it("keeps one connection for sequential route-table requests; a /load drops it", async () => {
    const admin = new AdminClient(credentials);
    for (let i = 0; i < 5; i++)
      expect(await admin.routeTables(endpoint)).toEqual({ ok: true, value: [] });
    expect(connections()).toBe(1);
    expect(seen.every(s => s.connection !== "close")).toBe(true);
    expect(admin.keptProxies).toBe(1);
    const kept = seen[0]!.socket;
    expect((await admin.load(endpoint, Buffer.from("{}"))).ok).toBe(true);
    expect(admin.keptProxies).toBe(0);
    expect((await admin.routeTables(endpoint)).ok).toBe(true);
    const after = seen[seen.length - 1]!.socket;
    expect(after).not.toBe(kept);
    expect(after).not.toBe(seen[seen.length - 2]!.socket); // nor the /load's own
    await admin.close();
  });

  it("sends a route-table delta once more when its kept connection is closed under it", async () => {
    const admin = new AdminClient(credentials);
    expect((await admin.routeTables(endpoint)).ok).toBe(true);
    const info = { id: "t", version: 1, hash: "d".repeat(64), hosts: 0 };
    let tries = 0;
    handlers.set("/kengine/route-tables/t", (req, res) => {
      if (++tries === 1) {
        req.socket.destroy(); // the proxy drops the kept connection without answering
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(info));
    });
    expect(await admin.postRouteTable(endpoint, "t", "{}", "e".repeat(64))).toEqual({
      ok: true,
      value: info,
    });
    expect(tries).toBe(2);
    const [first, second] = seen.filter(s => s.path === "/kengine/route-tables/t");
    expect(first!.socket).toBe(seen[0]!.socket); // the kept one
    expect(second!.connection).toBe("close"); // the second try on its own connection
    await admin.close();
  });

  it("refuses a proxy whose certificate does not name the server name: connect error", async () => {
    const admin = new AdminClient(credentials);
    const r = await admin.runsConfig(
      { ...endpoint, serverName: "other.gw-admin.default.svc" },
      hash,
    );
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.kind).toBe("connect");
      expect(r.error.message).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID/);
    }
    expect(seen).toHaveLength(0);
    await admin.close();
  });

  it("refuses a proxy certificate from another CA: connect error", async () => {
    const other = unwrap(
      createAuthority({ commonName: "other CA", keys: generateKeyPair(), ...validity }),
    );
    const admin = new AdminClient({ ...credentials, caPem: other.certificatePem });
    const r = await admin.routeTables(endpoint);
    expect(!r.ok && r.error.kind).toBe("connect");
    expect(seen).toHaveLength(0);
    expect(admin.peerCertificate(endpoint)).toBeUndefined();
    await admin.close();
  });

  it("gives up on a listener that accepts TCP but never completes TLS: timeout", async () => {
    const admin = new AdminClient(credentials, { connectTimeoutMs: 100, readTimeoutMs: 60_000 });
    const port = (silent.address() as AddressInfo).port;
    const r = await admin.runsConfig({ ...endpoint, port }, hash);
    expect(r).toEqual({
      ok: false,
      error: {
        kind: "timeout",
        message: expect.stringContaining("no TLS connection within 100 ms"),
      },
    });
    await admin.close();
  });

  it("close() lets the requests in flight finish, then refuses new ones", async () => {
    const admin = new AdminClient(credentials);
    let answer: () => void = () => undefined;
    const arrived = new Promise<void>(r =>
      handlers.set("/metrics", (_req, res) => {
        answer = () => res.end("caddy_up 1\n");
        res.writeHead(200, { "content-type": "text/plain" });
        r();
      }),
    );
    const pending = admin.metrics(endpoint);
    await arrived;
    const closed = admin.close();
    answer();
    expect(await pending).toEqual({ ok: true, value: "caddy_up 1\n" });
    await closed;
    expect(await admin.metrics(endpoint)).toEqual({
      ok: false,
      error: { kind: "connect", message: "admin client closed" },
    });
  });
});
