/**
 * A minimal WebSocket (RFC 6455) on both ends, for tests that pass upgrades through a proxy:
 * no library, one small text frame at a time (payload < 126 bytes).
 */
import { createHash, randomBytes } from "node:crypto";
import { IncomingMessage } from "node:http";
import { Socket } from "node:net";

const WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC11B86";

/** The Sec-WebSocket-Accept answer to a Sec-WebSocket-Key. */
export const wsAccept = (key: string): string =>
  createHash("sha1")
    .update(key + WS_GUID)
    .digest("base64");

/**
 * An `upgrade` handler of a node:http server: answers the opening handshake and echoes every
 * frame (a client frame is unmasked first). `seen` gets each handshake and its socket.
 */
export function wsEchoOnUpgrade(
  seen: (req: IncomingMessage, socket: Socket) => void,
): (req: IncomingMessage, socket: Socket) => void {
  return (req, socket) => {
    seen(req, socket);
    socket.write(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
        `Sec-WebSocket-Accept: ${wsAccept(String(req.headers["sec-websocket-key"] ?? ""))}\r\n\r\n`,
    );
    // Small masked frames: FIN+opcode, MASK+len (< 126), 4-byte key, payload. A frame can
    // arrive in pieces (TCP is a stream: a proxy's HTTP server may have read its first byte
    // before it handed the connection over, and forwards that byte on its own), so bytes are
    // kept until a whole frame is there.
    let pending = Buffer.alloc(0);
    socket.on("data", (b: Buffer) => {
      pending = Buffer.concat([pending, b]);
      while (pending.length >= 2 && pending.length >= 6 + (pending[1] & 0x7f)) {
        const len = pending[1] & 0x7f;
        const mask = pending.subarray(2, 6);
        const payload = Buffer.from(pending.subarray(6, 6 + len).map((x, i) => x ^ mask[i % 4]));
        socket.write(Buffer.concat([Buffer.from([pending[0], len]), payload]));
        pending = pending.subarray(6 + len);
      }
    });
  };
}

/** A masked text frame (client to server) carrying `text` (< 126 bytes). */
function clientFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = randomBytes(4);
  const masked = payload.map((x, i) => x ^ mask[i % 4]);
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]);
}

export interface WsRoundTrip {
  /** The handshake answer's status line. */
  readonly status: string;
  /** Whether the answer carried the right Sec-WebSocket-Accept. */
  readonly accepted: boolean;
  /** The frame that came back (empty when the upgrade was refused). */
  readonly echo: Buffer;
}

/**
 * On a connected `socket` (TCP or TLS), opens a WebSocket to `path` with Host `host`, sends
 * one text frame and returns what came back; the socket is destroyed afterwards.
 */
export async function wsRoundTrip(
  socket: Socket,
  host: string,
  path: string,
  text: string,
): Promise<WsRoundTrip> {
  const key = randomBytes(16).toString("base64");
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\n` +
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
  try {
    while (buf.indexOf("\r\n\r\n") < 0) await more();
    const end = buf.indexOf("\r\n\r\n") + 4;
    const head = buf.subarray(0, end).toString();
    buf = buf.subarray(end);
    const status = head.split("\r\n")[0];
    const accepted = head
      .toLowerCase()
      .includes(`sec-websocket-accept: ${wsAccept(key)}`.toLowerCase());
    if (!status.includes(" 101 ")) return { status, accepted, echo: Buffer.alloc(0) };
    socket.write(clientFrame(text));
    while (buf.length < 2 + Buffer.byteLength(text)) await more();
    return { status, accepted, echo: buf };
  } finally {
    socket.destroy();
  }
}
