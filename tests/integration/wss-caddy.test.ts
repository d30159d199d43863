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
import { IncomingMessage, Server, createServer } from "node:http";
import { AddressInfo, Socket } from "node:net";
import { join } from "node:path";
import { connect } from "node:tls";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { Caddy, loadGoldenOnLoopback, startCaddy } from "../support/caddy";
import { listenerPortOffset } from "../support/ports";
import { WsRoundTrip, wsEchoOnUpgrade, wsRoundTrip as roundTrip } from "../support/websocket";

const PORT_OFFSET = listenerPortOffset();
const GOLDEN = join(__dirname, "..", "golden", "https.in.yaml");

/** What the backend saw in the last opening handshake. */
let seen: IncomingMessage["headers"] = {};
let server: Server;
let backendPort = 0;
/** Upgraded connections leave the server's bookkeeping: closed by hand at the end. */
const upgraded = new Set<Socket>();

/** Answers the opening handshake and echoes every frame. */
function wsBackend(): Server {
  const s = createServer((_req, res) => res.writeHead(426).end("websocket only"));
  s.on(
    "upgrade",
    wsEchoOnUpgrade((req, socket) => {
      seen = req.headers;
      upgraded.add(socket);
    }),
  );
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

/**
 * Opens `wss://www.example.com/chat` through the proxy, sends one text frame and returns the
 * handshake's status line and accept header, and the frame the proxy brought back.
 */
async function wssRoundTrip(text: string): Promise<WsRoundTrip> {
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
  return roundTrip(socket, "www.example.com", "/chat", text);
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
