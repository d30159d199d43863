/**
 * The local platform's ACME CA: Let's Encrypt's Pebble (a peer built by build-peers.sh) on
 * loopback, and a tiny DNS responder (DNS over TCP, which Pebble's validation uses with
 * -dnsserver) that resolves the names being ordered to the Gateway's address, so Pebble's
 * HTTP-01 request reaches the Gateway's proxies on port 80 like a public CA's would.
 */
import { ChildProcess, spawn } from "node:child_process";
import { mkdirSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { AddressInfo, Server, createServer } from "node:net";
import { join } from "node:path";
import {
  CLOCK_SKEW_MS,
  createAuthority,
  generateKeyPair,
  issueServerCertificate,
} from "../capabilities/pki/pki";
import { Result } from "../capabilities/result";
import { peerBin } from "./peers";

const must = <T>(r: Result<T>): T => {
  if (!r.ok) throw new Error(r.error);
  return r.value;
};

export interface PebbleOptions {
  /** Working directory (config, TLS key, log). */
  readonly dir: string;
  /** The IPv4 address a name resolves to (undefined: no answer, the name does not exist). */
  readonly resolve: (name: string) => string | undefined;
  /** Lifetime of the certificates Pebble issues (default 90 days). */
  readonly validitySeconds?: number;
  /** Where Pebble validates HTTP-01 (default 80: the Gateway's HTTP listener). */
  readonly httpPort?: number;
  /** External Account Binding required, with these key ids → base64url MAC keys. */
  readonly eab?: Readonly<Record<string, string>>;
  /** Share of good nonces Pebble rejects as bad, in percent (default 0). */
  readonly nonceRejectPercent?: number;
}

export interface Pebble {
  /** The ACME directory URL (https://127.0.0.1:<port>/dir). */
  readonly directory: string;
  /** The self-signed certificate of Pebble's HTTPS listener (an issuer's caBundle). */
  readonly tlsCaPem: string;
  /** Pebble's log (one line per order: "Added order …"). */
  readonly logFile: string;
  /** The root that signs the certificates Pebble issues (new at every Pebble start). */
  root(): Promise<string>;
  /** Orders Pebble took since this Pebble started ("Added order" lines). */
  orders(): number;
  /** Stops Pebble (the DNS responder stays): a CA outage. */
  stop(): Promise<void>;
  /** Starts Pebble again on the same ports (a new root, no accounts or orders). */
  start(): Promise<void>;
  /** Stops Pebble and the DNS responder. */
  close(): Promise<void>;
  /** Pebble's process id while it runs. */
  pid(): number | undefined;
}

/** A free loopback TCP port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** A DNS answer to one query (RFC 1035): A records from `resolve`, nothing for other types. */
export function dnsAnswer(query: Buffer, resolve: (name: string) => string | undefined): Buffer {
  const labels: string[] = [];
  let i = 12;
  while (i < query.length && query[i] !== 0) {
    const n = query[i]!;
    labels.push(query.subarray(i + 1, i + 1 + n).toString("ascii"));
    i += 1 + n;
  }
  const qEnd = i + 5; // the zero label, QTYPE, QCLASS
  const qtype = query.readUInt16BE(i + 1);
  const ip = qtype === 1 ? resolve(labels.join(".").toLowerCase()) : undefined;
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2); // id
  const rd = query[2]! & 0x01;
  header[2] = 0x84 | rd; // QR, AA, RD as asked
  header[3] = 0x80; // RA, NOERROR
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(ip ? 1 : 0, 6);
  const question = query.subarray(12, qEnd);
  if (!ip) return Buffer.concat([header, question]);
  const answer = Buffer.from([
    0xc0,
    0x0c,
    0,
    1,
    0,
    1,
    0,
    0,
    0,
    0,
    0,
    4,
    ...ip.split(".").map(Number),
  ]);
  return Buffer.concat([header, question, answer]);
}

function dnsServer(resolve: (name: string) => string | undefined): Promise<Server> {
  const server = createServer(socket => {
    let buf = Buffer.alloc(0);
    socket.on("data", d => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const msg = buf.subarray(2, 2 + buf.readUInt16BE(0));
        buf = buf.subarray(2 + msg.length);
        try {
          const out = dnsAnswer(msg, resolve);
          const len = Buffer.alloc(2);
          len.writeUInt16BE(out.length);
          socket.write(Buffer.concat([len, out]));
        } catch {
          socket.destroy();
        }
      }
    });
    socket.on("error", () => socket.destroy());
  });
  return new Promise((ok, fail) => {
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => ok(server));
  });
}

const get = (url: string, ca: string): Promise<{ status: number; body: string }> =>
  new Promise((resolve, reject) => {
    const req = request(
      url,
      { ca, timeout: 5000, headers: { "User-Agent": "kengine-gateway-hack" } },
      res => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString("utf8")));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
    req.end();
  });

export async function startPebble(o: PebbleOptions): Promise<Pebble> {
  mkdirSync(o.dir, { recursive: true });
  const bin = peerBin("pebble");
  // Pebble's HTTPS listener: a throwaway CA of ours (the issuer's caBundle) and its leaf
  const cert = join(o.dir, "pebble-tls.crt");
  const key = join(o.dir, "pebble-tls.key");
  const ca = must(
    createAuthority({
      commonName: "pebble local ACME listener CA",
      keys: generateKeyPair(),
      notBefore: new Date(Date.now() - CLOCK_SKEW_MS),
      lifetimeDays: 30,
    }),
  );
  const leaf = must(
    issueServerCertificate(ca, {
      commonName: "pebble",
      dnsNames: ["localhost"],
      ipAddresses: ["127.0.0.1"],
      keys: generateKeyPair(),
      notBefore: new Date(Date.now() - CLOCK_SKEW_MS),
      lifetimeDays: 29,
    }),
  );
  writeFileSync(cert, leaf.certificatePem);
  writeFileSync(key, leaf.privateKey.reveal(), { mode: 0o600 });
  const tlsCaPem = ca.certificatePem;
  const dns = await dnsServer(o.resolve);
  const dnsPort = (dns.address() as AddressInfo).port;
  const port = await freePort();
  const mgmt = await freePort();
  const config = join(o.dir, "pebble-config.json");
  writeFileSync(
    config,
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${port}`,
        managementListenAddress: `127.0.0.1:${mgmt}`,
        certificate: cert,
        privateKey: key,
        httpPort: o.httpPort ?? 80,
        tlsPort: 443,
        ocspResponderURL: "",
        externalAccountBindingRequired: o.eab !== undefined,
        ...(o.eab && { externalAccountMACKeys: o.eab }),
        retryAfter: { authz: 1, order: 1 },
        keyAlgorithm: "ecdsa",
        profiles: {
          default: { description: "local", validityPeriod: o.validitySeconds ?? 7776000 },
        },
      },
    }),
  );
  const logFile = join(o.dir, "pebble.log");
  let proc: ChildProcess | undefined;
  let logStart = 0;
  const directory = `https://127.0.0.1:${port}/dir`;
  const start = async (): Promise<void> => {
    try {
      logStart = readFileSync(logFile).length;
    } catch {
      logStart = 0;
    }
    const fd = openSync(logFile, "a");
    proc = spawn(bin, ["-config", config, "-dnsserver", `127.0.0.1:${dnsPort}`], {
      stdio: ["ignore", fd, fd],
      env: {
        ...process.env,
        PEBBLE_VA_NOSLEEP: "1",
        // every nonce good unless asked (acme-client.test.ts proves the badNonce retry)
        PEBBLE_WFE_NONCEREJECT: String(o.nonceRejectPercent ?? 0),
        // a new authorization for every order, so every order is validated for real
        PEBBLE_AUTHZREUSE: "0",
      },
    });
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        if ((await get(directory, tlsCaPem)).status === 200) return;
      } catch {
        // not listening yet
      }
      if (proc.exitCode !== null) throw new Error(`pebble exited: see ${logFile}`);
      if (Date.now() > deadline) throw new Error(`pebble did not start in 30 s: see ${logFile}`);
      await new Promise(r => setTimeout(r, 100));
    }
  };
  const stop = async (): Promise<void> => {
    const p = proc;
    proc = undefined;
    // Gone already: exited, or ended by a signal (Ctrl-C in a terminal signals the whole
    // process group, Pebble included, before `npm start` stops it), when exitCode stays null.
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise(r => p.once("exit", r));
    p.kill("SIGTERM");
    await gone;
  };
  await start();
  return {
    directory,
    tlsCaPem,
    logFile,
    async root() {
      const r = await get(`https://127.0.0.1:${mgmt}/roots/0`, tlsCaPem);
      if (r.status !== 200) throw new Error(`pebble roots: HTTP ${r.status}`);
      return r.body;
    },
    orders() {
      const text = readFileSync(logFile).subarray(logStart).toString("utf8");
      return (text.match(/Added order /g) ?? []).length;
    },
    stop,
    start,
    pid: () => proc?.pid,
    async close() {
      await stop();
      await new Promise(r => dns.close(r));
    },
  };
}
