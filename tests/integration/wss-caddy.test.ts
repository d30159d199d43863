/**
 * WebSocket over TLS (`wss://`) through an HTTPS listener, on a real proxy of each flavour:
 * Gateway API v1.7.0 has no `WSS` listener protocol (`WSS` is a value of the experimental
 * XBackend's `spec.protocol`, the protocol towards a backend); a client's `wss://` connection
 * is an HTTPS listener's business. The golden `https` is loaded with its Service pointed at a
 * WebSocket backend on loopback; a raw client (node:tls, no WebSocket library) sends the
 * opening handshake with SNI www.example.com, gets `101 Switching Protocols` with the backend's
 * `Sec-WebSocket-Accept`, then a masked text frame that the backend echoes back unmasked.
 * Loopback only.
 */
import { createHash, randomBytes } from "node:crypto";
import { IncomingMessage, Server, createServer } from "node:http";
import { AddressInfo, Socket } from "node:net";
import { join } from "node:path";
import { connect } from "node:tls";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { Caddy, loadGoldenOnLoopback, startCaddy } from "../support/caddy";
import { listenerPortOffset } from "../support/ports";

const PORT_OFFSET = listenerPortOffset();
const GOLDEN = join(__dirname, "..", "golden", "https.in.yaml");
const WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC11B86";
const accept = (key: string): string =>
  createHash("sha1")
    .update(key + WS_GUID)
    .digest("base64");

/** What the backend saw in the last opening handshake. */
let seen: IncomingMessage["headers"] = {};
let server: Server;
let backendPort = 0;
/** Upgraded connections leave the server's bookkeeping: closed by hand at the end. */
const upgraded = new Set<Socket>();

/** Answers the opening handshake and echoes every frame: a client frame is unmasked first. */
function wsBackend(): Server {
  const s = createServer((_req, res) => res.writeHead(426).end("websocket only"));
  s.on("upgrade", (req: IncomingMessage, socket: Socket) => {
    seen = req.headers;
    upgraded.add(socket);
    const key = String(req.headers["sec-websocket-key"] ?? "");
    socket.write(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
        `Sec-WebSocket-Accept: ${accept(key)}\r\n\r\n`,
    );
    socket.on("data", (b: Buffer) => {
      // One small masked frame per write: FIN+opcode, MASK+len (< 126), 4-byte key, payload.
      const len = b[1] & 0x7f;
      const mask = b.subarray(2, 6);
      const payload = Buffer.from(b.subarray(6, 6 + len).map((x, i) => x ^ mask[i % 4]));
      socket.write(Buffer.concat([Buffer.from([b[0], len]), payload]));
    });
  });
  return s;
}

beforeAll(async () => {
  server = wsBackend();
  await new Promise<void>(r => server.listen(0, "127.0.0.1", () => r()));
  backendPort = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const s of upgraded) s.destroy();
  server.closeAllConnections();
  await new Promise(r => server.close(r));
});

/** A masked text frame (client to server) carrying `text` (< 126 bytes). */
function clientFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = randomBytes(4);
  const masked = payload.map((x, i) => x ^ mask[i % 4]);
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]);
}

/**
 * Opens `wss://www.example.com/chat` through the proxy, sends one text frame and returns the
 * handshake's status line and accept header, and the frame the proxy brought back.
 */
async function wssRoundTrip(
  text: string,
): Promise<{ status: string; accepted: boolean; echo: Buffer }> {
  const key = randomBytes(16).toString("base64");
  const socket = connect({
    host: "127.0.0.1",
    port: 443 + PORT_OFFSET,
    servername: "www.example.com",
    rejectUnauthorized: false,
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("secureConnect", resolve);
    socket.once("error", reject);
  });
  socket.write(
    "GET /chat HTTP/1.1\r\nHost: www.example.com\r\nUpgrade: websocket\r\n" +
      `Connection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  let buf = Buffer.alloc(0);
  const more = (): Promise<void> =>
    new Promise((resolve, reject) => {
      socket.once("data", (d: Buffer) => {
        buf = Buffer.concat([buf, d]);
        resolve();
      });
      socket.once("error", reject);
    });
  while (buf.indexOf("\r\n\r\n") < 0) await more();
  const end = buf.indexOf("\r\n\r\n") + 4;
  const head = buf.subarray(0, end).toString();
  buf = buf.subarray(end);
  const status = head.split("\r\n")[0];
  const accepted = head
    .toLowerCase()
    .includes(`sec-websocket-accept: ${accept(key)}`.toLowerCase());
  if (!status.includes(" 101 ")) {
    socket.destroy();
    return { status, accepted, echo: Buffer.alloc(0) };
  }
  socket.write(clientFrame(text));
  while (buf.length < 2 + Buffer.byteLength(text)) await more();
  socket.destroy();
  return { status, accepted, echo: buf };
}

describe.each<[ProxyFlavor, "caddy" | "caddy-2.8"]>([
  ["Bundled", "caddy"],
  ["Kengine", "caddy-2.8"],
])("wss:// through an HTTPS listener (%s flavour)", (flavor, peer) => {
  let caddy: Caddy | undefined;
  beforeAll(async () => {
    caddy = await startCaddy({ name: `wss-${flavor.toLowerCase()}`, peer });
    await loadGoldenOnLoopback(caddy, GOLDEN, flavor, backendPort);
  });
  afterAll(() => caddy?.stop());

  it("the handshake reaches the backend and frames flow both ways", async () => {
    const text = `hello over ${flavor}`;
    const r = await wssRoundTrip(text);
    expect(r.status).toBe("HTTP/1.1 101 Switching Protocols");
    expect(r.accepted).toBe(true);
    // An unmasked text frame with the same payload.
    expect([...r.echo.subarray(0, 2)]).toEqual([0x81, Buffer.byteLength(text)]);
    expect(r.echo.subarray(2).toString()).toBe(text);
    expect(seen.upgrade?.toLowerCase()).toBe("websocket");
    expect(seen.host).toBe("www.example.com");
    expect(seen["x-forwarded-proto"]).toBe("https");
  });
});
