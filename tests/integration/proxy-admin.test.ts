/**
 * The proxy admin channel against real Caddy processes on loopback: bootstrap config,
 * mTLS management listener, POST /load through it, refusal of unauthenticated clients,
 * readiness after the first push, no autosave, and the push engine programming a fleet of
 * three proxies (hash skip, restart detection, per-proxy state). The admin API itself is on a
 * unix socket of each proxy's own directory, and on every flavour no TCP port of the proxy
 * answers it without the controller's client certificate.
 */
import { ChildProcess, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { connect as netConnect, createServer, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { request } from "undici";
import { peerBin } from "../../hack/peers";
import { freePort } from "../support/ports";
import { steadyClient } from "../support/traffic";
import {
  AdminChannels,
  AdminClient,
  Fleet,
  FleetEvent,
  ProxyEndpoint,
} from "../../capabilities/proxies";
import {
  bootstrapConfig,
  PlainConfig,
  ManagementSpec,
  SealedConfig,
  sealConfig,
  withManagement,
} from "../../capabilities/caddy";
import {
  Authority,
  createAuthority,
  generateKeyPair,
  Issued,
  issueClientCertificate,
  issueServerCertificate,
  proxyServerName,
  proxyServerNames,
} from "../../capabilities/pki/pki";
import { PERSISTENT_HTTP_NETWORK } from "../../capabilities/caddy/config";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { sealGatewayConfig } from "../../capabilities/reconcile/plan";
import { parseSnapshotYAML, translateGolden } from "../../hack/translate";
import { withProxyFlavor } from "../support/flavor";
import { withLoopbackEndpoints } from "../support/loopback";
import { listenerPortOffset } from "../support/ports";

const SERVICE = "kengine-test";
const NAMESPACE = "default";
const must = <T>(r: { ok: true; value: T } | { ok: false; error: unknown }): T => {
  if (!r.ok) throw new Error(`unexpected failure: ${JSON.stringify(r.error)}`);
  return r.value;
};

const canConnect = (port: number): Promise<boolean> =>
  new Promise(resolve => {
    const s = new Socket();
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => (s.destroy(), resolve(false)));
    s.connect(port, "127.0.0.1");
  });

async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  deadlineMs = 20_000,
): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise(r => setTimeout(r, 100));
  }
}

interface Proxy {
  readonly name: string;
  readonly dir: string;
  /** Which binary runs (hack/build-peers.sh): the Bundled build, or Caddy 2.8 for Kengine. */
  readonly peer: "caddy" | "caddy-2.8";
  /** The admin API's unix socket (KG_ADMIN_SOCKET). */
  readonly socket: string;
  readonly ports: {
    readonly mgmt: number;
    readonly ready: number;
    readonly web: number;
  };
  readonly endpoint: ProxyEndpoint;
  proc: ChildProcess | undefined;
  log: string;
}

const running = new Set<ChildProcess>();
const work = mkdtempSync(join(tmpdir(), "kengine-proxy-admin-"));
const now = new Date(Date.now() - 5 * 60_000);
let ca: Authority;
let serving: Issued;
let controller: Issued;
let other: { ca: Authority; client: Issued };
let spec: ManagementSpec;
let bootstrapPath: string;
let client: AdminClient;

/** Every proxy runs the same bytes: ports and the admin socket come from each process's environment. */
function makeSpec(): ManagementSpec {
  const certs = join(work, "management-tls");
  mkdirSync(certs, { recursive: true });
  writeFileSync(join(certs, "tls.crt"), serving.certificatePem);
  writeFileSync(join(certs, "tls.key"), serving.privateKey.reveal(), { mode: 0o600 });
  return {
    listenAddress: "127.0.0.1:{env.KG_MGMT_PORT}",
    adminAddress: "unix/{env.KG_ADMIN_SOCKET}",
    serverCertTag: "kengine-management",
    clientCaPem: ca.certificatePem,
    serverCertificate: {
      kind: "files",
      certificateFile: join(certs, "tls.crt"),
      keyFile: join(certs, "tls.key"),
    },
    readinessAddress: "127.0.0.1:{env.KG_READY_PORT}",
  };
}

async function newProxy(name: string, peer: Proxy["peer"] = "caddy"): Promise<Proxy> {
  const ports = {
    mgmt: await freePort(),
    ready: await freePort(),
    web: await freePort(),
  };
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  const endpoint = {
    name,
    address: "127.0.0.1",
    port: ports.mgmt,
    serverName: proxyServerName(name, SERVICE, NAMESPACE),
  };
  const socket = join(dir, "admin.sock");
  return { name, peer, socket, dir, ports, endpoint, proc: undefined, log: "" };
}

async function start(p: Proxy): Promise<void> {
  const proc = spawn(peerBin(p.peer), ["run", "--config", bootstrapPath], {
    cwd: p.dir,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: p.dir,
      XDG_CONFIG_HOME: join(p.dir, "config"),
      XDG_DATA_HOME: join(p.dir, "data"),
      KG_ADMIN_SOCKET: p.socket,
      KG_MGMT_PORT: String(p.ports.mgmt),
      KG_READY_PORT: String(p.ports.ready),
      KG_WEB_PORT: String(p.ports.web),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(proc);
  proc.once("exit", () => running.delete(proc));
  proc.stdout!.on("data", (d: Buffer) => (p.log += d.toString()));
  proc.stderr!.on("data", (d: Buffer) => (p.log += d.toString()));
  p.proc = proc;
  await eventually(
    `${p.name} management port`,
    async () => ((await canConnect(p.ports.mgmt)) ? true : undefined),
    15_000,
  );
}

async function kill(p: Proxy): Promise<void> {
  const proc = p.proc;
  if (!proc || proc.exitCode !== null) return;
  const exited = new Promise(r => proc.once("exit", r));
  proc.kill("SIGKILL");
  await exited;
  p.proc = undefined;
}

/**
 * An app config as the translator hands it to the bundled proxy: one route on the web port (on
 * our listener module's network, which keeps the socket across reloads; on a plain address stock
 * Caddy resets connections queued at a reload, and the no-failed-request checks below would
 * measure that instead), plus management.
 */
function desired(body: string, extra: PlainConfig = {}, management: ManagementSpec = spec): string {
  const config = must(
    withManagement(
      {
        ...extra,
        apps: {
          http: {
            servers: {
              web: {
                listen: [`${PERSISTENT_HTTP_NETWORK}/127.0.0.1:{env.KG_WEB_PORT}`],
                automatic_https: { disable: true },
                routes: [{ handle: [{ handler: "static_response", status_code: 200, body }] }],
              },
            },
          },
          ...((extra.apps as object | undefined) ?? {}),
        },
      },
      management,
    ),
  );
  return JSON.stringify(config);
}

const httpGet = async (
  port: number,
  path = "/",
): Promise<{ status: number; body: string } | { error: string }> => {
  try {
    const r = await request(`http://127.0.0.1:${port}${path}`, {
      headersTimeout: 5000,
      bodyTimeout: 5000,
      // a fresh connection each time: a config reload closes idle keep-alive connections
      reset: true,
    });
    return { status: r.statusCode, body: await r.body.text() };
  } catch (e) {
    const code = (e as { code?: string }).code;
    return { error: code ?? String(e) };
  }
};

/** Listening TCP sockets (ip:port) owned by a process, from /proc. */
function listeningSockets(pid: number): string[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // fd closed meanwhile
    }
  }
  const out: string[] = [];
  for (const table of ["tcp", "tcp6"]) {
    const lines = readFileSync(`/proc/${pid}/net/${table}`, "utf8").trim().split("\n").slice(1);
    for (const line of lines) {
      const f = line.trim().split(/\s+/);
      if (f[3] !== "0A" || !inodes.has(f[9]!)) continue; // 0A = LISTEN
      const [hexIp, hexPort] = f[1]!.split(":");
      const port = parseInt(hexPort!, 16);
      const ip = table === "tcp" ? Buffer.from(hexIp!, "hex").reverse().join(".") : `[${hexIp}]`;
      out.push(`${ip}:${port}`);
    }
  }
  return out.sort();
}

/** Regular files under `dir` (the admin socket is none). */
const filesUnder = (dir: string): string[] =>
  !existsSync(dir)
    ? []
    : readdirSync(dir).flatMap(f => {
        const st = statSync(join(dir, f));
        return st.isDirectory() ? filesUnder(join(dir, f)) : st.isFile() ? [join(dir, f)] : [];
      });

beforeAll(() => {
  const key = () => generateKeyPair();
  ca = must(
    createAuthority({
      commonName: "kengine-gateway test CA",
      keys: key(),
      notBefore: now,
      lifetimeDays: 30,
    }),
  );
  serving = must(
    issueServerCertificate(ca, {
      commonName: `${SERVICE}.${NAMESPACE}`,
      dnsNames: proxyServerNames(SERVICE, NAMESPACE),
      keys: key(),
      notBefore: now,
      lifetimeDays: 7,
    }),
  );
  controller = must(
    issueClientCertificate(ca, {
      commonName: "kengine-gateway-controller",
      keys: key(),
      notBefore: now,
      lifetimeDays: 7,
    }),
  );
  const otherCa = must(
    createAuthority({
      commonName: "someone else's CA",
      keys: key(),
      notBefore: now,
      lifetimeDays: 30,
    }),
  );
  other = {
    ca: otherCa,
    client: must(
      issueClientCertificate(otherCa, {
        commonName: "kengine-gateway-controller",
        keys: key(),
        notBefore: now,
        lifetimeDays: 7,
      }),
    ),
  };
  spec = makeSpec();
  bootstrapPath = join(work, "bootstrap.json");
  writeFileSync(bootstrapPath, JSON.stringify(must(bootstrapConfig(spec))));
  client = new AdminClient({
    caPem: ca.certificatePem,
    certificatePem: controller.certificatePem,
    privateKey: controller.privateKey,
  });
});

afterAll(async () => {
  await client?.close();
  for (const proc of running) proc.kill("SIGKILL");
  rmSync(work, { recursive: true, force: true });
});

describe("bootstrap safety", () => {
  it("refuses to start when the management address placeholder is unset, rather than listening anywhere", async () => {
    const dir = join(work, "unset-env");
    mkdirSync(dir, { recursive: true });
    const proc = spawn(peerBin("caddy"), ["run", "--config", bootstrapPath], {
      cwd: dir,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: dir,
        XDG_CONFIG_HOME: join(dir, "config"),
        XDG_DATA_HOME: join(dir, "data"),
        KG_ADMIN_SOCKET: join(dir, "admin.sock"),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    running.add(proc);
    let log = "";
    proc.stderr!.on("data", (d: Buffer) => (log += d.toString()));
    const code = await new Promise<number | null>(r => proc.once("exit", c => r(c)));
    running.delete(proc);
    expect(code).not.toBe(0);
    expect(log).toContain("KG_MGMT_PORT");
  });
});

describe("one proxy: the management channel", () => {
  let p: Proxy;
  beforeAll(async () => {
    p = await newProxy("proxy-0");
    await start(p);
  });
  afterAll(async () => kill(p));

  it("bootstraps with only the management listener on TCP, the admin on its unix socket, and no readiness endpoint", async () => {
    expect(listeningSockets(p.proc!.pid!)).toEqual([`127.0.0.1:${p.ports.mgmt}`]);
    expect(statSync(p.socket).isSocket()).toBe(true);
    // Caddy's default mode: only the proxy's user may connect
    expect(statSync(p.socket).mode & 0o777).toBe(0o200);
    expect(await httpGet(p.ports.ready, "/ready")).toEqual({ error: "ECONNREFUSED" });
  });

  it("refuses a client without a certificate at the handshake", async () => {
    const noCert = await rawTls(p, {});
    expect(noCert.httpBytes).toBe("");
    expect(noCert.error).toMatch(/certificate required|handshake|alert|ECONNRESET|socket hang up/i);
  });

  it("refuses a client whose certificate comes from another CA, and a proxy's serving certificate used as a client", async () => {
    const foreign = await rawTls(p, {
      cert: other.client.certificatePem,
      key: other.client.privateKey.reveal(),
    });
    expect(foreign.httpBytes).toBe("");
    expect(foreign.error).toMatch(/unknown ca|bad certificate|alert|ECONNRESET|socket hang up/i);
    const viaAdmin = await new AdminClient({
      caPem: ca.certificatePem,
      certificatePem: other.client.certificatePem,
      privateKey: other.client.privateKey,
    }).getConfig(p.endpoint);
    expect(viaAdmin.ok).toBe(false);
    if (!viaAdmin.ok) expect(viaAdmin.error.kind).toBe("connect");
    // serverAuth-only certificate signed by the right CA: still not a client
    const asClient = await rawTls(p, {
      cert: serving.certificatePem,
      key: serving.privateKey.reveal(),
    });
    expect(asClient.httpBytes).toBe("");
  });

  it("does not hand out the admin API without mTLS: plaintext HTTP and wrong SNI get no config", async () => {
    const plain = await httpGet(p.ports.mgmt, "/config/");
    expect("status" in plain ? plain.status : 0).toBe(400);
    expect("body" in plain ? plain.body : "").not.toContain("kengine-management");
    // with the right certificate but Host ≠ SNI, Caddy answers 421 instead of forwarding
    const mismatched = await rawTls(p, {
      cert: controller.certificatePem,
      key: controller.privateKey.reveal(),
      hostHeader: "127.0.0.1",
    });
    expect(mismatched.httpBytes).toMatch(/^HTTP\/1\.1 421/);
    // and the controller's certificate gets through
    const good = await rawTls(p, {
      cert: controller.certificatePem,
      key: controller.privateKey.reveal(),
    });
    expect(good.httpBytes).toMatch(/^HTTP\/1\.1 200/);
    expect(good.httpBytes).toContain('"persist":false');
  });

  it("loads a config through the management listener, serves it, stays reachable after reloading itself, and writes no autosave", async () => {
    // an extra certificate with an inline key, so an autosave would contain a private key
    const webCert = must(
      issueServerCertificate(ca, {
        commonName: "web",
        dnsNames: ["web.example.test"],
        keys: generateKeyPair(),
        notBefore: now,
        lifetimeDays: 1,
      }),
    );
    const inlineKey = webCert.privateKey.reveal();
    const extra = {
      apps: {
        tls: {
          certificates: {
            load_pem: [{ certificate: webCert.certificatePem, key: inlineKey, tags: ["web"] }],
          },
        },
      },
    };
    const first = must(sealConfig(desired("first", extra), spec));
    const started = process.hrtime.bigint();
    expect(await client.load(p.endpoint, first.bytes)).toEqual({ ok: true, value: undefined });
    console.log(
      `POST /load to one proxy: ${Number(process.hrtime.bigint() - started) / 1e6} ms (${first.bytes.length} bytes)`,
    );
    expect(await httpGet(p.ports.web)).toEqual({ status: 200, body: "first" });
    expect(await httpGet(p.ports.ready, "/ready")).toEqual({ status: 200, body: "ready\n" });
    expect(await client.runsConfig(p.endpoint, first.hash)).toEqual({ ok: true, value: true });

    // the management server that carried the /load was replaced by its twin and still works
    const second = must(sealConfig(desired("second", extra), spec));
    expect(await client.load(p.endpoint, second.bytes)).toEqual({ ok: true, value: undefined });
    expect(await httpGet(p.ports.web)).toEqual({ status: 200, body: "second" });
    expect(await client.runsConfig(p.endpoint, first.hash)).toEqual({ ok: true, value: false });
    expect(await client.runsConfig(p.endpoint, second.hash)).toEqual({ ok: true, value: true });
    const read = must(
      await client.getConfig(p.endpoint, "apps/http/servers/web/routes/0/handle/0/body"),
    );
    expect(JSON.parse(read.body)).toBe("second");
    expect(read.etag).toMatch(/^".+ [0-9a-f]+"$/);

    expect(listeningSockets(p.proc!.pid!)).toEqual(
      [p.ports.mgmt, p.ports.ready, p.ports.web].map(port => `127.0.0.1:${port}`).sort(),
    );
    // persist:false → no autosave.json, and the inline key is nowhere on disk or in the log
    expect(filesUnder(join(p.dir, "config")).filter(f => f.endsWith("autosave.json"))).toEqual([]);
    const keyBody = inlineKey.split("\n")[1]!;
    for (const f of filesUnder(p.dir)) expect(readFileSync(f, "utf8")).not.toContain(keyBody);
    expect(p.log).not.toContain(keyBody);
  });

  it("records the serving certificate the proxy presented, for status", () => {
    const peer = client.peerCertificate(p.endpoint);
    expect(peer).toMatchObject({
      serverName: p.endpoint.serverName,
      notAfter: serving.notAfter,
      notBefore: serving.notBefore,
    });
  });

  it("rotates the controller CA without losing the channel: trust both, switch the client, drop the old", async () => {
    const both: ManagementSpec = {
      ...spec,
      clientCaPem: [ca.certificatePem, other.ca.certificatePem],
    };
    const bridging = must(sealConfig(desired("rotating", {}, both), both));
    expect(await client.load(p.endpoint, bridging.bytes)).toEqual({ ok: true, value: undefined });
    // the new identity (other CA's client certificate) now gets through; the proxy's serving cert is still trusted via the old CA
    const next = new AdminClient({
      caPem: ca.certificatePem,
      certificatePem: other.client.certificatePem,
      privateKey: other.client.privateKey,
    });
    expect(await next.runsConfig(p.endpoint, bridging.hash)).toEqual({ ok: true, value: true });
    const onlyNew: ManagementSpec = { ...spec, clientCaPem: other.ca.certificatePem };
    const rotated = must(sealConfig(desired("rotated", {}, onlyNew), onlyNew));
    expect(await next.load(p.endpoint, rotated.bytes)).toEqual({ ok: true, value: undefined });
    const old = await client.runsConfig(p.endpoint, rotated.hash);
    expect(old.ok ? "accepted" : old.error.kind).toBe("connect");
    // and back, so later tests use the original identity
    const restored = must(sealConfig(desired("second"), spec));
    expect(await next.load(p.endpoint, restored.bytes)).toEqual({ ok: true, value: undefined });
    expect(await client.runsConfig(p.endpoint, restored.hash)).toEqual({ ok: true, value: true });
    await next.close();
  });

  it("renews certificates without a failed request: the controller's client certificate (swapped, no push) and the proxy's serving certificate (new files, taken at the next push)", async () => {
    const channels = new AdminChannels(
      new AdminClient({
        caPem: ca.certificatePem,
        certificatePem: controller.certificatePem,
        privateKey: controller.privateKey,
      }),
    );
    const current = must(sealConfig(desired("renewing"), spec));
    expect(await channels.load(p.endpoint, current.bytes)).toEqual({ ok: true, value: undefined });
    let stopped = false;
    const results: string[] = [];
    const steady = (async () => {
      while (!stopped) {
        const r = await channels.runsConfig(p.endpoint, current.hash);
        results.push(r.ok ? String(r.value) : `${r.error.kind}: ${r.error.message}`);
        await new Promise(res => setTimeout(res, 10));
      }
    })();
    const renewed = must(
      issueClientCertificate(ca, {
        commonName: "kengine-gateway-controller",
        keys: generateKeyPair(),
        notBefore: now,
        lifetimeDays: 3,
      }),
    );
    await new Promise(res => setTimeout(res, 200));
    channels.replaceOwn(
      new AdminClient({
        caPem: ca.certificatePem,
        certificatePem: renewed.certificatePem,
        privateKey: renewed.privateKey,
      }),
    );
    await new Promise(res => setTimeout(res, 200));
    stopped = true;
    await steady;
    expect(results.length).toBeGreaterThan(4);
    expect(results.filter(r => r !== "true")).toEqual([]);

    // A renewed serving certificate: the mounted files change, the next push loads them.
    const next = must(
      issueServerCertificate(ca, {
        commonName: `${SERVICE}.${NAMESPACE}`,
        dnsNames: proxyServerNames(SERVICE, NAMESPACE),
        keys: generateKeyPair(),
        notBefore: now,
        lifetimeDays: 5,
      }),
    );
    const files = spec.serverCertificate as { certificateFile: string; keyFile: string };
    writeFileSync(files.certificateFile, next.certificatePem);
    writeFileSync(files.keyFile, next.privateKey.reveal(), { mode: 0o600 });
    try {
      const pushed = must(sealConfig(desired("renewed serving"), spec));
      expect(await channels.load(p.endpoint, pushed.bytes)).toEqual({ ok: true, value: undefined });
      expect(await channels.runsConfig(p.endpoint, pushed.hash)).toEqual({ ok: true, value: true });
      expect(channels.peerCertificate(p.endpoint)?.notAfter).toEqual(next.notAfter);
    } finally {
      writeFileSync(files.certificateFile, serving.certificatePem);
      writeFileSync(files.keyFile, serving.privateKey.reveal(), { mode: 0o600 });
      const back = must(sealConfig(desired("second"), spec));
      expect(await channels.load(p.endpoint, back.bytes)).toEqual({ ok: true, value: undefined });
      await channels.close();
    }
  });

  it("keeps the previous config and returns Caddy's message when a config is refused", async () => {
    const broken = JSON.parse(desired("broken")) as {
      apps: { http: { servers: { web: { routes: { handle: { handler: string }[] }[] } } } };
    };
    broken.apps.http.servers.web.routes[0]!.handle[0]!.handler = "no_such_handler";
    const sealed = must(sealConfig(JSON.stringify(broken), spec));
    const r = await client.load(p.endpoint, sealed.bytes);
    expect(r.ok).toBe(false);
    if (!r.ok && r.error.kind === "rejected") {
      expect(r.error.status).toBe(400);
      expect(r.error.message).toContain("no_such_handler");
    } else throw new Error(`expected a rejection, got ${JSON.stringify(r)}`);
    expect(await httpGet(p.ports.web)).toEqual({ status: 200, body: "second" });
  });
});

interface RawTlsResult {
  readonly httpBytes: string;
  readonly error: string;
}

/** One HTTP/1.1 GET /config/ over raw TLS, to see exactly where a connection is refused. */
function rawTls(
  p: Proxy,
  opts: { cert?: string; key?: string; hostHeader?: string },
): Promise<RawTlsResult> {
  return new Promise(resolve => {
    let bytes = "";
    let error = "";
    const socket = tlsConnect({
      host: "127.0.0.1",
      port: p.ports.mgmt,
      servername: p.endpoint.serverName,
      ca: ca.certificatePem,
      cert: opts.cert,
      key: opts.key,
    });
    socket.setTimeout(5000, () => ((error ||= "timeout"), socket.destroy()));
    socket.on("secureConnect", () => {
      socket.write(
        `GET /config/ HTTP/1.1\r\nHost: ${opts.hostHeader ?? p.endpoint.serverName}\r\nConnection: close\r\n\r\n`,
      );
    });
    socket.on("data", (d: Buffer) => (bytes += d.toString()));
    socket.on(
      "error",
      (e: Error & { code?: string }) => (error ||= `${e.code ?? ""} ${e.message}`),
    );
    socket.on("close", () => resolve({ httpBytes: bytes, error }));
  });
}

/** The port of a listening socket "ip:port" (listeningSockets). */
const portOf = (address: string): number => Number(address.slice(address.lastIndexOf(":") + 1));

/** What a raw request on one TCP port got back: the bytes read (at most 64 KiB), or why none. */
interface RawReply {
  readonly bytes: string;
  readonly error: string;
}

/**
 * One HTTP/1.1 request over a new connection to `address` ("ip:port"), in plaintext or over TLS
 * with no client certificate (`sni`), with any Host: what a client that is not the controller
 * can send to a port of the proxy.
 */
function rawRequest(
  address: string,
  req: { method: string; path: string; host: string; body?: string; sni?: string },
): Promise<RawReply> {
  const host = address.slice(0, address.lastIndexOf(":")).replace(/^0\.0\.0\.0$/, "127.0.0.1");
  const port = portOf(address);
  return new Promise(resolve => {
    let bytes = "";
    let error = "";
    const head =
      `${req.method} ${req.path} HTTP/1.1\r\nHost: ${req.host}\r\nConnection: close\r\n` +
      (req.body === undefined
        ? "\r\n"
        : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(req.body)}\r\n\r\n${req.body}`);
    const socket =
      req.sni === undefined
        ? netConnect({ host, port }, () => socket.write(head))
        : tlsConnect({ host, port, servername: req.sni, rejectUnauthorized: false }, () =>
            socket.write(head),
          );
    socket.setTimeout(5000, () => ((error ||= "timeout"), socket.destroy()));
    socket.on("data", (d: Buffer) => {
      if (bytes.length < 65_536) bytes += d.toString();
    });
    socket.on("error", (e: Error & { code?: string }) => (error ||= e.code ?? e.message));
    socket.on("close", () => resolve({ bytes, error }));
  });
}

/** The flavour tests' traffic listeners: a loopback address of their own, apart from other tests' ports. */
const TRAFFIC_HOST = "127.0.0.43";

describe.each([
  ["Bundled", "caddy"],
  ["Caddy", "caddy"],
  ["Kengine", "caddy-2.8"],
] as const)(
  "the %s flavour (peer %s): the admin API only behind the management listener",
  (flavor, peer) => {
    let p: Proxy;
    const backends: ReturnType<typeof createServer>[] = [];
    let errorAddr: string;

    beforeAll(async () => {
      p = await newProxy(`flavour-${flavor.toLowerCase()}`, peer);
      errorAddr = `127.0.0.1:${await freePort()}`;
      await start(p);
    });
    afterAll(async () => {
      await kill(p);
      await Promise.all(backends.map(b => new Promise(r => b.close(r))));
    });

    /** A loopback backend that answers every request with its id (no admin content). */
    async function backend(id: string): Promise<number> {
      const server = createServer(sock => {
        sock.on("data", () =>
          sock.end(`HTTP/1.1 200 OK\r\nContent-Length: ${id.length}\r\n\r\n${id}`),
        );
        sock.on("error", () => undefined);
      });
      backends.push(server);
      await new Promise<void>(r => server.listen(0, "127.0.0.1", () => r()));
      return (server.address() as { port: number }).port;
    }

    /**
     * The Gateway of golden `name`, translated for this flavour and sealed as the controller seals
     * it (reconcile/plan.ts); Kengine (Caddy 2.8) has no layer-4 app, so those servers are left out.
     */
    async function sealedGolden(name: string): Promise<{ hash: string; bytes: Buffer }> {
      const objects = parseSnapshotYAML(
        readFileSync(join(__dirname, "..", "golden", `${name}.in.yaml`), "utf8"),
      );
      const result = translateGolden(
        withProxyFlavor(await withLoopbackEndpoints(objects, backend), flavor as ProxyFlavor),
      );
      const ir = result.gateways.find(g => g.name === "gw")!;
      const sealed = must(
        sealGatewayConfig(ir, spec, {
          bindHost: TRAFFIC_HOST,
          portOffset: listenerPortOffset(),
          errorResponderListen: errorAddr,
        }),
      );
      const config = JSON.parse(sealed.bytes.toString("utf8")) as { apps: { layer4?: unknown } };
      if (flavor === "Kengine") delete config.apps.layer4;
      return { hash: sealed.hash, bytes: Buffer.from(JSON.stringify(config)) };
    }

    /**
     * Admin requests a client without the controller's certificate can send: to port 2019
     * (Caddy's default admin port) and to every TCP port the proxy listens on, in plaintext and
     * over TLS, with the Hosts Caddy's admin accepted on TCP, a read and a /load that would empty
     * the config. Returns every reply that carried admin content; the proxy must still run `hash`.
     */
    async function adminAnswersOnTcp(hash: string): Promise<string[]> {
      const addresses = [
        "127.0.0.1:2019",
        `${TRAFFIC_HOST}:2019`,
        ...listeningSockets(p.proc!.pid!),
      ];
      const leaks: string[] = [];
      for (const address of addresses)
        for (const host of ["127.0.0.1:2019", "localhost:2019", "localhost", "127.0.0.1", address])
          for (const sni of [undefined, p.endpoint.serverName, "www.example.com"])
            for (const req of [
              { method: "GET", path: "/config/" },
              { method: "GET", path: `/id/kengine-config-${hash}/@id` },
              { method: "POST", path: "/load", body: "{}" },
            ]) {
              const reply = await rawRequest(address, { ...req, host, ...(sni && { sni }) });
              if (/kengine-management|"persist"|kengine-config-/.test(reply.bytes))
                leaks.push(
                  `${address} ${sni ?? "plain"} ${host} ${req.method} ${req.path}: ${reply.bytes.slice(0, 200)}`,
                );
            }
      expect(await client.runsConfig(p.endpoint, hash)).toEqual({ ok: true, value: true });
      return leaks;
    }

    it("bootstraps with the admin on its unix socket: only the management port on TCP", () => {
      expect(listeningSockets(p.proc!.pid!)).toEqual([`127.0.0.1:${p.ports.mgmt}`]);
      expect(statSync(p.socket).isSocket()).toBe(true);
    });

    it("takes configs sealed for this flavour through the mTLS management listener (POST /load), and answers the admin API on no TCP port", async () => {
      for (const name of ["basic", "https"]) {
        const config = await sealedGolden(name);
        expect(await client.load(p.endpoint, config.bytes)).toEqual({ ok: true, value: undefined });
        expect(await client.runsConfig(p.endpoint, config.hash)).toEqual({ ok: true, value: true });
        const tcp = listeningSockets(p.proc!.pid!);
        // the management and readiness ports and the traffic listeners: no admin
        expect(tcp).toEqual(
          expect.arrayContaining([`127.0.0.1:${p.ports.mgmt}`, `127.0.0.1:${p.ports.ready}`]),
        );
        expect(tcp.length).toBeGreaterThanOrEqual(3);
        expect(tcp.map(portOf)).not.toContain(2019);
        expect(await adminAnswersOnTcp(config.hash)).toEqual([]);
        // the controller reads through the management listener what no other client got
        const read = must(await client.getConfig(p.endpoint, "admin"));
        expect(JSON.parse(read.body)).toEqual({
          listen: "unix/{env.KG_ADMIN_SOCKET}",
          config: { persist: false },
        });
      }
    });

    it("refuses a client with no certificate or another CA's at the management listener", async () => {
      const none = await rawTls(p, {});
      expect(none.httpBytes).toBe("");
      const foreign = await rawTls(p, {
        cert: other.client.certificatePem,
        key: other.client.privateKey.reveal(),
      });
      expect(foreign.httpBytes).toBe("");
    });

    it("comes up again after kill -9 with the stale socket file left behind, and takes the next push", async () => {
      await kill(p);
      // nothing removed the socket file: the restarted proxy finds it in place
      expect(statSync(p.socket).isSocket()).toBe(true);
      await start(p);
      const config = await sealedGolden("basic");
      expect(await client.load(p.endpoint, config.bytes)).toEqual({ ok: true, value: undefined });
      expect(await client.runsConfig(p.endpoint, config.hash)).toEqual({ ok: true, value: true });
      expect(await adminAnswersOnTcp(config.hash)).toEqual([]);
    });
  },
);

describe("three proxies: the push engine", () => {
  const proxies: Proxy[] = [];
  const events: FleetEvent[] = [];
  let loads = 0;
  let fleet: Fleet;
  let config: SealedConfig;

  const countLoadsInLog = (p: Proxy): number =>
    p.log
      .split("\n")
      .filter(l => l.includes('"msg":"received request"') && l.includes('"uri":"/load"')).length;
  const targets = () => proxies.map(p => ({ endpoint: p.endpoint, config }));

  beforeAll(async () => {
    for (const name of ["proxy-a", "proxy-b", "proxy-c"]) proxies.push(await newProxy(name));
    await Promise.all(proxies.map(start));
    fleet = new Fleet({
      client: {
        load: (e, bytes) => {
          loads++;
          return client.load(e, bytes);
        },
        runsConfig: (e, hash) => client.runsConfig(e, hash),
      },
      concurrency: 8,
      backoff: { initialMs: 100, maxMs: 1000, factor: 2, jitter: 0.5 },
      onEvent: e => events.push(e),
    });
  });
  afterAll(async () => {
    fleet?.close();
    await Promise.all(proxies.map(kill));
  });

  it("programs every proxy, and readiness turns on only then", async () => {
    for (const p of proxies)
      expect(await httpGet(p.ports.ready, "/ready")).toEqual({ error: "ECONNREFUSED" });
    config = must(sealConfig(desired("fleet v1"), spec));
    const started = process.hrtime.bigint();
    fleet.update(targets());
    for (const p of proxies) expect(fleet.state(p.name)?.phase).toBe("Pending");
    await fleet.settled();
    console.log(`fleet push to 3 proxies: ${Number(process.hrtime.bigint() - started) / 1e6} ms`);
    for (const p of proxies) {
      expect(fleet.state(p.name)).toMatchObject({
        phase: "Programmed",
        hash: config.hash,
        desiredHash: config.hash,
      });
      expect(await httpGet(p.ports.web)).toEqual({ status: 200, body: "fleet v1" });
      expect(await httpGet(p.ports.ready, "/ready")).toEqual({ status: 200, body: "ready\n" });
    }
    expect(loads).toBe(3);
  });

  it("skips proxies that already run the same config", async () => {
    const logged = proxies.map(countLoadsInLog);
    expect(logged).toEqual([1, 1, 1]);
    const again = must(sealConfig(desired("fleet v1"), spec));
    expect(again.hash).toBe(config.hash);
    config = again;
    fleet.update(targets());
    await fleet.settled();
    expect(loads).toBe(3);
    expect(events.filter(e => e.type === "skipped")).toHaveLength(3);
    expect(proxies.map(countLoadsInLog)).toEqual(logged);
    await fleet.verify();
    expect(loads).toBe(3);
  });

  it("re-programs a proxy that was killed and restarted, and reports it Failed while it is down", async () => {
    const [a, b] = proxies as [Proxy, Proxy];
    // a: killed, seen down, restarted → retried after back-off
    await kill(a);
    await fleet.verify();
    const down = fleet.state(a.name);
    expect(down).toMatchObject({ phase: "Failed", attempts: 1, error: { kind: "connect" } });
    expect(fleet.state(b.name)?.phase).toBe("Programmed");
    await start(a);
    await eventually("proxy-a re-programmed", async () =>
      fleet.state(a.name)?.phase === "Programmed" ? true : undefined,
    );
    expect(await httpGet(a.ports.web)).toEqual({ status: 200, body: "fleet v1" });
    expect(await httpGet(a.ports.ready, "/ready")).toEqual({ status: 200, body: "ready\n" });

    // b: restarted between two checks, so the engine never saw it down; the hash marker tells
    await kill(b);
    await start(b);
    expect(fleet.state(b.name)?.phase).toBe("Programmed"); // not yet known
    await fleet.verify();
    await fleet.settled();
    expect(events.some(e => e.type === "drifted" && e.name === b.name)).toBe(true);
    expect(fleet.state(b.name)).toMatchObject({ phase: "Programmed", hash: config.hash });
    expect(await httpGet(b.ports.web)).toEqual({ status: 200, body: "fleet v1" });
  });

  it("pushes a new config to all, keeps a refusal's message, and forgets removed proxies", async () => {
    config = must(sealConfig(desired("fleet v2"), spec));
    fleet.update(targets());
    await fleet.settled();
    for (const p of proxies)
      expect(await httpGet(p.ports.web)).toEqual({ status: 200, body: "fleet v2" });
    const v2 = config.hash;

    // a config one proxy cannot run: its web port is taken on that proxy only
    const c = proxies[2]!;
    await kill(c);
    const blocker = createServer().listen(c.ports.web, "127.0.0.1");
    await new Promise(r => blocker.once("listening", r));
    await start(c);
    config = must(sealConfig(desired("fleet v3"), spec));
    fleet.update(targets());
    await fleet.settled();
    const failed = fleet.state(c.name);
    expect(failed).toMatchObject({ phase: "Failed", error: { kind: "rejected", status: 400 } });
    if (failed?.phase === "Failed") expect(failed.message).toMatch(/address already in use/);
    expect(fleet.state(proxies[0]!.name)).toMatchObject({ phase: "Programmed", hash: config.hash });
    expect(v2).not.toBe(config.hash);

    // freeing the port lets the next retry succeed without any restart
    await new Promise(r => blocker.close(r));
    await eventually("proxy-c recovers", async () =>
      fleet.state(c.name)?.phase === "Programmed" ? true : undefined,
    ).catch((e: unknown) => {
      throw new Error(
        `${String(e)}; state ${JSON.stringify(fleet.state(c.name))}; log tail ${c.log.slice(-2000)}`,
      );
    });
    expect(await httpGet(c.ports.web)).toEqual({ status: 200, body: "fleet v3" });

    fleet.update(targets().slice(0, 2));
    expect(fleet.state(c.name)).toBeUndefined();
    expect([...fleet.states().keys()].sort()).toEqual(["proxy-a", "proxy-b"]);
    expect(events.some(e => e.type === "forgotten" && e.name === c.name)).toBe(true);
  });
});

describe("certificate renewal with the push engine, under steady admin requests and traffic", () => {
  const proxies: Proxy[] = [];
  const events: FleetEvent[] = [];
  let fleet: Fleet;
  let channels: AdminChannels;

  /** The spec the controller seals pushed configs with: the serving certificate inline. */
  const inline = (cert: Issued): ManagementSpec => ({
    ...spec,
    serverCertificate: {
      kind: "pem",
      certificatePem: cert.certificatePem,
      privateKey: cert.privateKey,
    },
  });
  const sealedWith = (cert: Issued, body: string) =>
    must(sealConfig(desired(body, {}, inline(cert)), inline(cert)));

  beforeAll(async () => {
    for (const name of ["renew-a", "renew-b"]) proxies.push(await newProxy(name));
    await Promise.all(proxies.map(start));
    channels = new AdminChannels(
      new AdminClient({
        caPem: ca.certificatePem,
        certificatePem: controller.certificatePem,
        privateKey: controller.privateKey,
      }),
    );
    fleet = new Fleet({
      client: channels,
      backoff: { initialMs: 100, maxMs: 1000, factor: 2, jitter: 0.5 },
      onEvent: e => events.push(e),
    });
  });
  afterAll(async () => {
    fleet?.close();
    await channels?.close();
    await Promise.all(proxies.map(kill));
  });

  /**
   * The controller's own admin requests (checks of every proxy, back to back: the fleet never
   * sends a proxy two at once, so a check waits for a push in flight) and traffic to every
   * proxy (the e2e tests' steady client, a new connection per request), until stopped.
   */
  function steadyClients(): {
    stop: () => Promise<{ checks: number; sent: number; failed: string[] }>;
  } {
    let stopped = false;
    let checks = 0;
    const admin = (async () => {
      while (!stopped) {
        await fleet.verify();
        checks++;
      }
    })();
    const traffic = proxies.map(p =>
      steadyClient("127.0.0.1", "renew.test", { port: p.ports.web, intervalMs: 5 }),
    );
    return {
      stop: async () => {
        stopped = true;
        await admin;
        const results = await Promise.all(traffic.map(t => t.stop()));
        return {
          checks,
          sent: results.reduce((n, r) => n + r.sent, 0),
          failed: results.flatMap((r, i) =>
            r.failures.map(f => `${proxies[i]!.name}: ${JSON.stringify(f)}`),
          ),
        };
      },
    };
  }

  it("renews the proxies' serving certificate with one push each: inline in the config, mounted files untouched, no failed request", async () => {
    fleet.update(proxies.map(p => ({ endpoint: p.endpoint, config: sealedWith(serving, "v1") })));
    await fleet.settled();
    for (const p of proxies) expect(fleet.state(p.name)?.phase).toBe("Programmed");
    const files = spec.serverCertificate as { certificateFile: string; keyFile: string };
    const mounted = readFileSync(files.certificateFile, "utf8");

    const clients = steadyClients();
    await new Promise(r => setTimeout(r, 300));
    const renewed = must(
      issueServerCertificate(ca, {
        commonName: `${SERVICE}.${NAMESPACE}`,
        dnsNames: proxyServerNames(SERVICE, NAMESPACE),
        keys: generateKeyPair(),
        notBefore: now,
        lifetimeDays: 9,
      }),
    );
    const before = sealedWith(serving, "v1");
    const after = sealedWith(renewed, "v1");
    // the same routes with a new certificate are a new config: the renewal reaches every proxy
    expect(after.hash).not.toBe(before.hash);
    const pushedBefore = events.filter(e => e.type === "pushed").length;
    fleet.update(proxies.map(p => ({ endpoint: p.endpoint, config: after })));
    await fleet.settled();
    await new Promise(r => setTimeout(r, 300));
    const { checks, sent, failed } = await clients.stop();

    expect(failed).toEqual([]);
    expect(sent).toBeGreaterThan(20);
    expect(checks).toBeGreaterThan(2);
    expect(events.filter(e => e.type === "failed")).toEqual([]);
    expect(events.filter(e => e.type === "pushed").length - pushedBefore).toBe(proxies.length);
    for (const p of proxies) {
      expect(fleet.state(p.name)).toMatchObject({ phase: "Programmed", hash: after.hash });
      // a fresh handshake presents the renewed certificate
      expect(await channels.runsConfig(p.endpoint, after.hash)).toEqual({ ok: true, value: true });
      expect(channels.peerCertificate(p.endpoint)?.notAfter).toEqual(renewed.notAfter);
    }
    // the renewal did not wait for (or touch) the mounted files, and its key is on no disk or log
    expect(readFileSync(files.certificateFile, "utf8")).toBe(mounted);
    const keyBody = renewed.privateKey.reveal().split("\n")[1]!;
    for (const p of proxies) {
      for (const f of filesUnder(p.dir)) expect(readFileSync(f, "utf8")).not.toContain(keyBody);
      expect(p.log).not.toContain(keyBody);
    }
  });
});

describe("measurements (printed, not asserted): a 3,000-route config", () => {
  const proxies: Proxy[] = [];
  const ROUTES = 3000;
  const big = (version: string): string =>
    desired("fallback", {
      apps: {
        http: {
          servers: {
            web: {
              listen: [`${PERSISTENT_HTTP_NETWORK}/127.0.0.1:{env.KG_WEB_PORT}`],
              automatic_https: { disable: true },
              routes: Array.from({ length: ROUTES }, (_, i) => ({
                match: [{ host: [`app-${i}.example.test`], path: [`/svc-${i}/*`] }],
                handle: [
                  { handler: "static_response", status_code: 200, body: `${version} route ${i}` },
                ],
              })),
            },
          },
        },
      },
    });
  const ms = (since: bigint): number =>
    Math.round(Number(process.hrtime.bigint() - since) / 1e5) / 10;

  beforeAll(async () => {
    for (let i = 0; i < 10; i++) proxies.push(await newProxy(`bench-${i}`));
    await Promise.all(proxies.map(start));
  });
  afterAll(async () => Promise.all(proxies.map(kill)));

  it("pushes to 1, 3 and 10 proxies, and re-checks them", async () => {
    const rows: string[] = [];
    for (const n of [1, 3, 10]) {
      const fleet = new Fleet({ client, concurrency: 16 });
      const sealStart = process.hrtime.bigint();
      const config = must(sealConfig(big(`n${n}`), spec));
      const sealMs = ms(sealStart);
      const started = process.hrtime.bigint();
      fleet.update(proxies.slice(0, n).map(p => ({ endpoint: p.endpoint, config })));
      await fleet.settled();
      const pushMs = ms(started);
      for (const p of proxies.slice(0, n))
        expect(fleet.state(p.name)).toMatchObject({ phase: "Programmed", hash: config.hash });
      const verifyStart = process.hrtime.bigint();
      await fleet.verify();
      const verifyMs = ms(verifyStart);
      rows.push(
        `${n} proxies: push ${pushMs} ms, verify ${verifyMs} ms (seal ${sealMs} ms, ${(config.bytes.length / 1024).toFixed(0)} KiB)`,
      );
      fleet.close();
    }
    const sample = await request(`http://127.0.0.1:${proxies[0]!.ports.web}/svc-2999/x`, {
      headers: { host: "app-2999.example.test" },
    });
    expect(await sample.body.text()).toBe("n10 route 2999");
    console.log(`${ROUTES} routes, 2 CPUs shared by controller and proxies:\n${rows.join("\n")}`);
  });
});
