/**
 * Real traffic through real Caddy (with caddy-l4) for what plain HTTP tests cannot show:
 * HTTPS with the golden's certificate (SNI, misdirected requests), gRPC over h2c, TLS
 * passthrough by SNI, TLS termination on a TLS listener, TCP and UDP. Each golden's
 * EndpointSlices are pointed at small servers on 127.0.0.1 that report what they saw.
 */
import { Socket as UDPSocket, createSocket } from "node:dgram";
import { readFileSync } from "node:fs";
import { Server as HTTPServer, createServer as createHTTPServer } from "node:http";
import {
  ClientHttp2Session,
  Http2Server,
  connect as http2Connect,
  createServer as createH2CServer,
} from "node:http2";
import { request as httpsRequest } from "node:https";
import {
  AddressInfo,
  Server as NetServer,
  Socket,
  connect as netConnect,
  createServer as createNetServer,
} from "node:net";
import { join } from "node:path";
import { TLSSocket, connect as tlsConnect, createServer as createTLSServer } from "node:tls";
import { parseSnapshotYAML } from "../../hack/translate";
import { renderCaddyJSON, toCaddyConfig } from "../../capabilities/caddy";
import { Secret, snapshotOf } from "../../capabilities/snapshot";
import { translate } from "../../capabilities/translate";
import { Caddy, startCaddy } from "../support/caddy";
import { freePort, listenerPortOffset } from "../support/ports";
import { withLoopbackEndpoints } from "../support/loopback";
import { echoExchange } from "../support/exchange";

const goldenDir = join(__dirname, "..", "golden");
const PORT_OFFSET = listenerPortOffset();
const LOCAL = "127.0.0.1";

type BackendKind = "http" | "tls" | "tcp+udp" | "h2c" | "https";

let caddy: Caddy | undefined;
let errorAddr = "";
const closers: (() => Promise<void>)[] = [];

/** The certificate and key of a golden's Secret (the goldens use one self-signed example.com cert). */
function secretPem(golden: string, name: string): { cert: string; key: string } {
  const s = parseSnapshotYAML(readFileSync(join(goldenDir, `${golden}.in.yaml`), "utf8")).find(
    o => o.kind === "Secret" && o.metadata.name === name,
  ) as Secret;
  const data = s.data as Record<string, string>;
  return {
    cert: Buffer.from(data["tls.crt"], "base64").toString(),
    key: Buffer.from(data["tls.key"], "base64").toString(),
  };
}
const EXAMPLE = secretPem("https", "cert");

async function listen(server: HTTPServer | NetServer | Http2Server): Promise<number> {
  await new Promise<void>(r => server.listen(0, LOCAL, () => r()));
  closers.push(() => new Promise(r => server.close(() => r())));
  return (server.address() as AddressInfo).port;
}

/** A backend named `name` of the given kind; returns its port. Every kind reports its name. */
async function backend(name: string, kind: BackendKind): Promise<number> {
  switch (kind) {
    case "http":
      return listen(
        createHTTPServer((req, res) => {
          res.setHeader("content-type", "application/json");
          res.end(JSON.stringify({ backend: name, url: req.url, headers: req.headers }));
        }),
      );
    case "h2c": {
      const server = createH2CServer();
      server.on("stream", (stream, headers) => {
        stream.respond(
          {
            ":status": 200,
            "content-type": "application/grpc",
            "x-backend": name,
            "x-seen-path": String(headers[":path"]),
          },
          { waitForTrailers: true },
        );
        stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
        stream.end(Buffer.from([0, 0, 0, 0, 0]));
      });
      return listen(server);
    }
    case "tls":
      // TLS passthrough: the backend terminates TLS and says who it is and which SNI it got.
      return listen(
        createTLSServer({ cert: EXAMPLE.cert, key: EXAMPLE.key }, (s: TLSSocket) => {
          s.end(`${name} sni=${(s as TLSSocket & { servername?: string }).servername ?? ""}\n`);
        }),
      );
    case "https":
      throw new Error("https backends are created by backend-tls tests");
    case "tcp+udp": {
      // Same port number for a TCP and a UDP echo (they are independent namespaces).
      for (;;) {
        const tcp = createNetServer((c: Socket) =>
          c.on("data", d => c.write(`${name}:${d.toString()}`)),
        );
        const port = await listen(tcp);
        const udp = createSocket("udp4");
        const ok = await new Promise<boolean>(r => {
          udp.once("error", () => r(false));
          udp.bind(port, LOCAL, () => r(true));
        });
        if (!ok) continue;
        udp.on("message", (msg, rinfo) =>
          udp.send(`${name}:${msg.toString()}`, rinfo.port, rinfo.address),
        );
        closers.push(() => new Promise(r => udp.close(() => r())));
        return port;
      }
    }
  }
}

/** Translates a golden with its EndpointSlices pointed at fresh loopback backends, and loads it. */
async function load(
  golden: string,
  kindOf: (slice: string) => BackendKind = () => "http",
): Promise<void> {
  const objects = parseSnapshotYAML(readFileSync(join(goldenDir, `${golden}.in.yaml`), "utf8"));
  const out = await withLoopbackEndpoints(objects, id => backend(id, kindOf(id)), { host: LOCAL });
  const result = translate(snapshotOf(out));
  expect(result.gateways).toHaveLength(1);
  const config = toCaddyConfig(result.gateways[0], {
    bindHost: LOCAL,
    portOffset: PORT_OFFSET,
    errorResponderListen: errorAddr,
    management: { adminListen: caddy!.adminAddress },
  });
  const res = await caddy!.load(renderCaddyJSON(config));
  if (res.status !== 200)
    throw new Error(`${golden}: Caddy refused the config (${res.status}): ${res.text}`);
}

interface HTTPSReply {
  status: number;
  body: string;
}

/** An HTTPS request to listener port `port` with the given SNI and Host, trusting the golden's CA. */
function https(port: number, servername: string, host: string, path: string): Promise<HTTPSReply> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: LOCAL,
        port: port + PORT_OFFSET,
        path,
        servername,
        ca: EXAMPLE.cert,
        headers: { host },
        agent: false,
      },
      res => {
        let body = "";
        res.on("data", d => (body += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** Opens TLS to listener `port` with `servername`, and returns what the far end sent (or the error). */
function tlsExchange(port: number, servername: string, send = ""): Promise<string> {
  return new Promise(resolve => {
    let data = "";
    const s = tlsConnect(
      { host: LOCAL, port: port + PORT_OFFSET, servername, ca: EXAMPLE.cert },
      () => {
        if (send) s.write(send);
      },
    );
    s.setTimeout(5000, () => s.destroy(new Error("timeout")));
    s.on("data", d => (data += d.toString()));
    s.on("end", () => resolve(data));
    s.on("close", () => resolve(data));
    s.on("error", (e: Error & { code?: string }) => resolve(`error:${e.code ?? e.message}`));
  });
}

/** TLS to listener `port` (trusting the golden's CA), sends `send`, waits for its echo; or the error. */
function tlsEcho(port: number, servername: string, send: string): Promise<string> {
  return echoExchange(
    onConnect =>
      tlsConnect(
        { host: LOCAL, port: port + PORT_OFFSET, servername, ca: EXAMPLE.cert },
        onConnect,
      ),
    send,
  );
}

function tcpExchange(port: number, send: string): Promise<string> {
  return echoExchange(
    onConnect => netConnect({ host: LOCAL, port: port + PORT_OFFSET }, onConnect),
    send,
  );
}

function udpExchange(port: number, send: string): Promise<string> {
  return new Promise(resolve => {
    const s: UDPSocket = createSocket("udp4");
    const timer = setTimeout(() => {
      s.close();
      resolve("timeout");
    }, 5000);
    s.on("message", m => {
      clearTimeout(timer);
      s.close();
      resolve(m.toString());
    });
    s.send(send, port + PORT_OFFSET, LOCAL);
  });
}

async function grpcCall(
  port: number,
  authority: string,
  path: string,
): Promise<{
  status: number;
  headers: Record<string, unknown>;
  trailers: Record<string, unknown>;
}> {
  const session: ClientHttp2Session = http2Connect(`http://${LOCAL}:${port + PORT_OFFSET}`);
  try {
    return await new Promise((resolve, reject) => {
      const req = session.request({
        ":method": "POST",
        ":path": path,
        ":authority": authority,
        "content-type": "application/grpc",
        te: "trailers",
      });
      let headers: Record<string, unknown> = {};
      let trailers: Record<string, unknown> = {};
      req.on("response", h => (headers = { ...h }));
      req.on("trailers", t => (trailers = { ...t }));
      req.on("data", () => undefined);
      req.on("end", () => resolve({ status: Number(headers[":status"]), headers, trailers }));
      req.on("error", reject);
      req.end(Buffer.from([0, 0, 0, 0, 0]));
    });
  } finally {
    session.close();
  }
}

beforeAll(async () => {
  caddy = await startCaddy({ name: "l4-caddy" });
  errorAddr = `${LOCAL}:${await freePort(LOCAL)}`;
}, 120_000);

afterAll(async () => {
  await caddy?.stop();
  await Promise.all(closers.map(c => c()));
});

describe("HTTPS through real Caddy", () => {
  it("terminates TLS with the listener's certificate and routes by SNI and Host", async () => {
    await load("https");
    const exact = await https(443, "www.example.com", "www.example.com", "/a");
    expect(exact.status).toBe(200);
    expect(JSON.parse(exact.body)).toMatchObject({ backend: "default/web-1", url: "/a" });
    const wildcard = await https(443, "api.example.com", "api.example.com", "/b");
    expect(wildcard.status).toBe(200);
    expect(JSON.parse(wildcard.body).headers.host).toBe("api.example.com");
  });

  it("answers 421 to a request whose Host differs from the connection's SNI", async () => {
    await load("https");
    expect((await https(443, "www.example.com", "api.example.com", "/")).status).toBe(421);
  });

  it("does not serve listeners whose certificate did not resolve", async () => {
    await load("https");
    // 8443: RefNotPermitted; 9443: missing and malformed Secrets. No server on either port.
    await expect(https(8443, "x.example.com", "x.example.com", "/")).rejects.toMatchObject({
      code: "ECONNREFUSED",
    });
    await expect(
      https(9443, "missing.example.com", "missing.example.com", "/"),
    ).rejects.toMatchObject({ code: "ECONNREFUSED" });
  });
});

describe("gRPC (h2c) through real Caddy", () => {
  it("routes by service/method to an h2c backend and passes trailers", async () => {
    await load("grpc", () => "h2c");
    const ping = await grpcCall(80, "grpc.example.com", "/echo.Echo/Ping");
    expect(ping.status).toBe(200);
    expect(ping.headers["x-backend"]).toBe("default/grpc-1");
    expect(ping.headers["x-seen-path"]).toBe("/echo.Echo/Ping");
    expect(ping.trailers["grpc-status"]).toBe("0");
    const byRegex = await grpcCall(80, "grpc.example.com", "/any.Service/GetThing");
    expect(byRegex.headers["x-backend"]).toBe("default/grpc-1");
    const none = await grpcCall(80, "grpc.example.com", "/echo.Echo/Other");
    expect(none.headers["x-backend"]).toBeUndefined();
    expect(none.status).toBe(404);
  });
});

describe("TLS passthrough through real Caddy (caddy-l4)", () => {
  it("forwards the untouched TLS stream to the backend chosen by SNI", async () => {
    await load("tls-passthrough", () => "tls");
    expect(await tlsExchange(443, "app.example.com")).toBe("default/app-1 sni=app.example.com\n");
    const counts: Record<string, number> = {};
    for (let i = 0; i < 6; i++) {
      const who = (await tlsExchange(443, "other.example.com")).split(" ")[0];
      counts[who] = (counts[who] ?? 0) + 1;
    }
    // The catch-all route splits 1:2 between web and app (round robin over weighted upstreams).
    expect(counts).toEqual({ "default/web-1": 2, "default/app-1": 4 });
  });

  it("closes connections whose SNI matches no route", async () => {
    await load("tls-passthrough", () => "tls");
    expect(await tlsExchange(443, "app.example.org")).toMatch(/^error:|^$/);
  });
});

describe("TCP and UDP through real Caddy (caddy-l4)", () => {
  it("echoes over TCPRoute and UDPRoute on the same port number", async () => {
    await load("tcp-udp", () => "tcp+udp");
    expect(await tcpExchange(5353, "hello")).toBe("default/dns-1:hello");
    expect(await udpExchange(5353, "ping")).toBe("default/dns-1:ping");
  });
});

describe("TLS termination and refused backends through real Caddy (caddy-l4)", () => {
  const kinds = (slice: string): BackendKind => (slice === "default/app-1" ? "tls" : "tcp+udp");

  it("terminates TLS on a Terminate listener with its certificate; the backend gets plain TCP", async () => {
    await load("tls-terminate", kinds);
    expect(await tlsEcho(443, "secure.example.com", "hello")).toBe("default/plain-1:hello");
  });

  it("passes TLS through on a Passthrough listener sharing the port", async () => {
    await load("tls-terminate", kinds);
    expect(await tlsExchange(443, "app.example.com")).toBe("default/app-1 sni=app.example.com\n");
  });

  it("refuses connections for an SNI route whose backends are missing or zero-weight (no fall-through)", async () => {
    await load("tls-terminate", kinds);
    for (const sni of ["broken.example.com", "zero.example.com"]) {
      const got = await tlsExchange(443, sni);
      expect(got).not.toContain("default/app-1");
      expect(got).toMatch(/^error:|^$/);
    }
  });

  it("refuses the share of TCP connections that belongs to a missing backend", async () => {
    await load("tls-terminate", kinds);
    const got: string[] = [];
    for (let i = 0; i < 4; i++) got.push(await tcpExchange(7000, "x"));
    expect(got.filter(g => g === "default/plain-1:x")).toHaveLength(2);
    expect(
      got.filter(g => g !== "default/plain-1:x").every(g => g === "" || g.startsWith("error:")),
    ).toBe(true);
  });

  it("does not serve a Terminate listener without a certificate", async () => {
    await load("tls-terminate", kinds);
    expect(await tlsExchange(8443, "nocert.example.com")).toBe("error:ECONNREFUSED");
  });
});
