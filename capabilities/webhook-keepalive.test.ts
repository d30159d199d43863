import type { IncomingMessage, ServerResponse } from "node:http";
import https from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { createAuthority, generateKeyPair, issueServerCertificate } from "./pki/pki";
import { Result } from "./result";
import {
  WEBHOOK_KEEP_ALIVE_MS,
  keepWebhookConnectionsAlive,
  outlastClientIdle,
} from "./webhook-keepalive";

const must = <T>(r: Result<T>): T => {
  if (!r.ok) throw new Error(r.error);
  return r.value;
};
const notBefore = new Date(Date.now() - 60_000);
const ca = must(
  createAuthority({
    commonName: "keepalive test CA",
    keys: generateKeyPair(),
    notBefore,
    lifetimeDays: 2,
  }),
);
const keys = generateKeyPair();
const leaf = must(
  issueServerCertificate(ca, {
    commonName: "localhost",
    keys,
    dnsNames: ["localhost"],
    notBefore,
    lifetimeDays: 1,
  }),
);
const tls = {
  cert: leaf.certificatePem,
  key: keys.privateKey.export({ type: "pkcs8", format: "pem" }),
};

/**
 * Two requests on one keep-alive agent: after the first, waits until the server closes the idle
 * connection or `idleMs` pass, whichever comes first; then sends the second. Waiting for the
 * close rather than a fixed pause keeps the test from racing the server's timer on a busy CPU.
 */
async function afterIdle(
  server: https.Server,
  idleMs: number,
): Promise<{ closedAfterMs: number | undefined; reused: boolean }> {
  await new Promise<void>(r => server.listen(0, "127.0.0.1", () => r()));
  const { port } = server.address() as AddressInfo;
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: ca.certificatePem });
  const get = () =>
    new Promise<{ status: number; reused: boolean; socket: Socket }>((resolve, reject) => {
      const req = https.get({ host: "127.0.0.1", servername: "localhost", port, agent }, res => {
        res.resume();
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket, socket: req.socket! }),
        );
      });
      req.on("error", reject);
    });
  try {
    const first = await get();
    expect(first.status).toBe(200);
    const idleSince = Date.now();
    let closedAfterMs: number | undefined;
    const closed = new Promise<void>(r =>
      first.socket.once("close", () => {
        closedAfterMs = Date.now() - idleSince;
        r();
      }),
    );
    await Promise.race([closed, new Promise(r => setTimeout(r, idleMs))]);
    const second = await get();
    expect(second.status).toBe(200);
    return { closedAfterMs, reused: second.reused };
  } finally {
    agent.destroy();
    server.closeAllConnections();
    await new Promise(r => server.close(r));
  }
}

const ok = (_req: IncomingMessage, res: ServerResponse) => res.end("ok");

describe("webhook keep-alive", () => {
  it("outlastClientIdle sets the idle keep-alive above the API server's 90 s", () => {
    const s = outlastClientIdle({ keepAliveTimeout: 5_000, headersTimeout: 60_000 });
    expect(s.keepAliveTimeout).toBe(WEBHOOK_KEEP_ALIVE_MS);
    expect(WEBHOOK_KEEP_ALIVE_MS).toBeGreaterThan(90_000);
    expect(s.headersTimeout).toBeGreaterThan(s.keepAliveTimeout);
  });

  it("keeps an idle connection open past Node's 5 s default; a default server closes it", async () => {
    // A server Pepr would create, before and after the module wraps https.createServer.
    const plain = https.createServer(tls, ok);
    keepWebhookConnectionsAlive();
    const kept = https.createServer(tls, ok);
    expect(plain.keepAliveTimeout).toBe(5_000);
    expect(kept.keepAliveTimeout).toBe(WEBHOOK_KEEP_ALIVE_MS);
    const [plainIdle, keptIdle] = await Promise.all([
      afterIdle(plain, 20_000),
      afterIdle(kept, 6_000),
    ]);
    // the default server closes an idle connection after about 5 s; the next request opens one
    expect(plainIdle.closedAfterMs).toBeGreaterThanOrEqual(4_000);
    expect(plainIdle.reused).toBe(false);
    // ours keeps it through the same idle time and the next request reuses it
    expect(keptIdle.closedAfterMs).toBeUndefined();
    expect(keptIdle.reused).toBe(true);
  }, 30_000);
});
