/**
 * Size caps on what the controller reads from a proxy, against a real HTTPS server on loopback
 * (node:https with a client certificate from the same CA, as a proxy's management listener):
 * the server sends more than the cap, the client stops reading, drops the connection and
 * returns a typed error.
 */
import { createServer, Server } from "node:https";
import { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { AdminClient, ProxyEndpoint, RESPONSE_LIMITS, readCapped } from "./admin-client";
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
const client = unwrap(
  issueClientCertificate(ca, { commonName: "controller", keys: generateKeyPair(), ...validity }),
);

/** What the server answers: status, and the body in chunks (Content-Length optional). */
let answer: { status: number; chunk: Buffer; chunks: number; contentLength?: boolean } = {
  status: 200,
  chunk: Buffer.alloc(0),
  chunks: 0,
};
/** Bytes the server managed to write before the client went away, per request. */
const written: number[] = [];
const sockets = new Set<Duplex>();
let server: Server;
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
      req.resume();
      const { status, chunk, chunks, contentLength } = answer;
      res.writeHead(status, {
        "content-type": "text/plain",
        ...(contentLength ? { "content-length": String(chunk.length * chunks) } : {}),
      });
      let sent = 0;
      let i = 0;
      const record = () => written.push(sent);
      res.on("close", record);
      const next = (): void => {
        while (i < chunks) {
          i++;
          sent += chunk.length;
          if (res.destroyed) return;
          if (!res.write(chunk)) {
            res.once("drain", next);
            return;
          }
        }
        res.end();
      };
      next();
    },
  );
  server.on("connection", s => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>(r => server.listen(0, "127.0.0.1", r));
  endpoint = {
    name: "proxy-0",
    address: "127.0.0.1",
    port: (server.address() as AddressInfo).port,
    serverName,
  };
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise(r => server.close(r));
});

const adminClient = (limits?: ConstructorParameters<typeof AdminClient>[1]) =>
  new AdminClient(
    {
      caPem: ca.certificatePem,
      certificatePem: client.certificatePem,
      privateKey: client.privateKey,
    },
    limits,
  );

const MiB = 1024 * 1024;
/** Waits until the server saw the response close (the client stopped reading and went away). */
const closed = async (n: number): Promise<number> => {
  for (let i = 0; i < 200 && written.length < n; i++) await new Promise(r => setTimeout(r, 25));
  return written[n - 1] ?? -1;
};

describe("AdminClient reads every answer with a size cap", () => {
  it("GET /metrics: 64 MiB streamed without Content-Length stop at the cap; typed error; connection dropped", async () => {
    const admin = adminClient({ limits: { metrics: 1 * MiB } });
    answer = { status: 200, chunk: Buffer.alloc(64 * 1024, "x"), chunks: 1024 };
    const before = written.length;
    const read = await admin.metrics(endpoint);
    expect(read).toEqual({
      ok: false,
      error: expect.objectContaining({ kind: "oversized", status: 200, limitBytes: 1 * MiB }),
    });
    // The server could not hand over all 64 MiB: the client closed the connection early.
    expect(await closed(before + 1)).toBeLessThan(64 * MiB);
    await admin.close();
  });

  it("GET /metrics under the cap is read whole", async () => {
    const admin = adminClient({ limits: { metrics: 1 * MiB } });
    answer = { status: 200, chunk: Buffer.from("caddy_up 1\n"), chunks: 1000 };
    const read = await admin.metrics(endpoint);
    expect(read.ok && read.value.length).toBe(11 * 1000);
    await admin.close();
  });

  it("a Content-Length above the cap is refused before reading (GET /config/)", async () => {
    const admin = adminClient({ limits: { config: 256 * 1024 } });
    answer = { status: 200, chunk: Buffer.alloc(64 * 1024, "{"), chunks: 64, contentLength: true };
    const read = await admin.getConfig(endpoint);
    expect(!read.ok && read.error.kind).toBe("oversized");
    await admin.close();
  });

  it("error bodies are cut at the error cap; the refusal stays a refusal (POST /load)", async () => {
    const admin = adminClient();
    answer = { status: 400, chunk: Buffer.alloc(64 * 1024, "e"), chunks: 256 };
    const read = await admin.load(endpoint, Buffer.from("{}"));
    expect(read.ok).toBe(false);
    if (read.ok) return;
    expect(read.error.kind).toBe("rejected");
    expect(read.error.message.length).toBeLessThan(RESPONSE_LIMITS.error + 100);
    expect(read.error.message).toMatch(/cut at 16 KiB\)$/);
    await admin.close();
  });

  it("a 200 /load or /id answer longer than its cap is an error, not a success", async () => {
    const admin = adminClient();
    answer = { status: 200, chunk: Buffer.alloc(1024, "a"), chunks: 1024 };
    expect(await admin.load(endpoint, Buffer.from("{}"))).toMatchObject({
      ok: false,
      error: { kind: "oversized", limitBytes: RESPONSE_LIMITS.load },
    });
    expect(await admin.runsConfig(endpoint, "a".repeat(64))).toMatchObject({
      ok: false,
      error: { kind: "oversized", limitBytes: RESPONSE_LIMITS.id },
    });
    await admin.close();
  });
});

describe("readCapped", () => {
  async function* chunks(sizes: readonly number[]) {
    for (const n of sizes) yield Buffer.alloc(n, "z");
  }
  it("keeps exactly `limit` bytes and destroys the stream at the first byte past it", async () => {
    let destroyed = 0;
    const body = Object.assign(chunks([3, 3, 3, 3]), { destroy: () => void destroyed++ });
    expect(await readCapped(body, 7)).toEqual({ text: "zzzzzzz", truncated: true });
    expect(destroyed).toBe(1);
    const whole = Object.assign(chunks([3, 4]), { destroy: () => void destroyed++ });
    expect(await readCapped(whole, 7)).toEqual({ text: "zzzzzzz", truncated: false });
    expect(destroyed).toBe(1);
  });
});
