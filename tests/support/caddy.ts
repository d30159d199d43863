/**
 * A real Caddy process for integration tests: started empty with its admin API on a unix
 * socket in its own temporary directory (as managed proxies run it: never on TCP), configured
 * through that socket, stopped at the end of the file.
 *
 *   let caddy: Caddy | undefined;
 *   beforeAll(async () => { caddy = await startCaddy({ name: "my-test" }); }, 120_000);
 *   afterAll(() => caddy?.stop());
 *
 * Requests go through undici's `request`, not `fetch`: Caddy ≥ 2.11 refuses admin requests
 * carrying fetch's Sec-Fetch-Mode header.
 */
import { ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, Dispatcher, request } from "undici";
import { peerBin } from "../../hack/peers";
import { renderCaddyJSON, toCaddyConfig } from "../../capabilities/caddy/config";
import type { GatewayIR } from "../../capabilities/ir/types";
import { snapshotOf } from "../../capabilities/snapshot";
import { translate } from "../../capabilities/translate";
import type { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { parseSnapshotYAML } from "../../hack/translate";
import { withProxyFlavor } from "./flavor";
import { withLoopbackEndpoints } from "./loopback";
import { freePort, listenerPortOffset } from "./ports";
import { ADMIN_SOCKET_HOST, MAX_SOCKET_PATH_BYTES } from "../../capabilities/caddy";

export interface AdminReply {
  status: number;
  text: string;
}

export interface Caddy {
  /** The admin API's address, `unix/<socket path>` (what a config's `admin.listen` must keep). */
  readonly adminAddress: string;
  /** The admin socket's path. */
  readonly adminSocket: string;
  /** The Caddy process's id. */
  readonly pid: number;
  /** A request to the admin API; `body` is sent as JSON. */
  admin(method: Dispatcher.HttpMethod, path: string, body?: string): Promise<AdminReply>;
  /** POST /load: a config object (serialised here) or its JSON text, sent as is. */
  load(config: object | string): Promise<AdminReply>;
  /** The tail of Caddy's stderr (its log), at most 4000 characters. */
  log(): string;
  /** Kills Caddy, waits for it to exit and removes its temporary directory. */
  stop(): Promise<void>;
}

export interface StartCaddyOptions {
  /** Names the temporary directory: kg-<name>-XXXXXX (default "caddy"). */
  name?: string;
  /** Which Caddy peer of hack/build-peers.sh runs (default "caddy", the bundled proxy). */
  peer?: "caddy" | "caddy-2.8";
  /**
   * Run with `--resume`, as managed proxy pods do (workload/pod.ts): Caddy starts from
   * `$XDG_CONFIG_HOME/caddy/autosave.json` when it exists (written from `autosave`, given the
   * admin address), else from the initial config.
   */
  resume?: { readonly autosave?: (adminAddress: string) => string };
  /** More environment for the process (e.g. OTEL_* for the `tracing` handler's exporter). */
  env?: Readonly<Record<string, string>>;
}

const LOG_TAIL = 4000;
const START_POLLS = 200;
const POLL_INTERVAL_MS = 50;
const STOP_GRACE_MS = 10_000;

/** Attempts of one admin request that an admin server being replaced dropped unanswered. */
const ADMIN_ATTEMPTS = 5;

/**
 * Whether the admin server dropped the connection without answering. Caddy replaces its admin
 * server on every /load and shuts the old one down asynchronously (caddy v2.11.9 admin.go,
 * replaceLocalAdminServer): a connection the kernel queued on the old socket is reset when it
 * closes, and Go's server closes unanswered a request it reads once shutting down. Neither
 * request was carried out, so sending it again is safe (and /load is idempotent anyway).
 */
const droppedUnanswered = (e: unknown): boolean => {
  const code = (e as { code?: unknown } | undefined)?.code;
  return code === "ECONNRESET" || code === "UND_ERR_SOCKET";
};

async function adminRequest(
  socket: Dispatcher,
  method: Dispatcher.HttpMethod,
  path: string,
  body?: string,
): Promise<AdminReply> {
  for (let attempt = 1; ; attempt++) {
    try {
      // the Host Caddy 2.8's admin accepts on a unix socket (caddy/management.ts)
      const res = await request(`http://${ADMIN_SOCKET_HOST}${path}`, {
        dispatcher: socket,
        method,
        reset: true,
        headers: body ? { "content-type": "application/json" } : {},
        body,
      });
      return { status: res.statusCode, text: await res.body.text() };
    } catch (e) {
      if (!droppedUnanswered(e) || attempt >= ADMIN_ATTEMPTS) throw e;
      await new Promise(r => setTimeout(r, 50 * attempt));
    }
  }
}

/** Resolves when `child` has exited; SIGKILLs it if it is still running after `timeoutMs`. */
function exited(child: ChildProcess, timeoutMs: number): Promise<void> {
  if (!child.pid || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise(resolve => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
    }, timeoutMs);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * Starts `caddy run` with only an admin API on `admin.sock` (config not persisted), HOME and
 * the XDG directories in a fresh temporary directory, and waits until GET /config/ answers 200
 * (polling every 50 ms; after about 200 polls it fails with the tail of Caddy's log).
 */
export async function startCaddy(opts: StartCaddyOptions = {}): Promise<Caddy> {
  const dir = mkdtempSync(join(tmpdir(), `kg-${opts.name ?? "caddy"}-`));
  const adminSocket = join(dir, "admin.sock");
  if (Buffer.byteLength(adminSocket) > MAX_SOCKET_PATH_BYTES) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(
      `admin socket path too long for a unix socket (set a shorter TMPDIR): ${adminSocket}`,
    );
  }
  const adminAddress = `unix/${adminSocket}`;
  const socket = new Agent({ connect: { socketPath: adminSocket } });
  const initial = join(dir, "initial.json");
  writeFileSync(
    initial,
    JSON.stringify({ admin: { listen: adminAddress, config: { persist: false } } }),
  );
  if (opts.resume?.autosave) {
    mkdirSync(join(dir, "caddy"));
    writeFileSync(join(dir, "caddy", "autosave.json"), opts.resume.autosave(adminAddress));
  }
  const args = ["run", "--config", initial, ...(opts.resume ? ["--resume"] : [])];
  const child = spawn(peerBin(opts.peer ?? "caddy"), args, {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, ...opts.env, HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
  });
  let log = "";
  child.stderr?.on("data", (d: Buffer) => (log = (log + d.toString()).slice(-LOG_TAIL)));
  child.on("error", e => (log = (log + `${e.message}\n`).slice(-LOG_TAIL)));

  let stopping: Promise<void> | undefined;
  const caddy: Caddy = {
    adminAddress,
    adminSocket,
    pid: child.pid ?? -1,
    admin: (method, path, body) => adminRequest(socket, method, path, body),
    load: config =>
      adminRequest(
        socket,
        "POST",
        "/load",
        typeof config === "string" ? config : JSON.stringify(config),
      ),
    log: () => log,
    stop: () =>
      (stopping ??= (async () => {
        if (child.pid) child.kill("SIGTERM");
        await exited(child, STOP_GRACE_MS);
        await socket.close();
        rmSync(dir, { recursive: true, force: true });
      })()),
  };

  for (let i = 0; ; i++) {
    try {
      if ((await caddy.admin("GET", "/config/")).status === 200) return caddy;
    } catch {
      // not up yet
    }
    if (i > START_POLLS) {
      const tail = log;
      await caddy.stop();
      throw new Error(`caddy did not start: ${tail}`);
    }
    await new Promise(r => setTimeout(r, POLL_INTERVAL_MS));
  }
}

/**
 * Loads one Gateway's config into a local Caddy as the tests run it: listeners on `host`, moved
 * by the test port offset (tests/support/ports.ts), errors answered on a free port, the admin API
 * on the Caddy's socket. Throws with Caddy's message when it refuses the config.
 */
export async function loadGateway(caddy: Caddy, ir: GatewayIR, host = "127.0.0.1"): Promise<void> {
  const config = toCaddyConfig(ir, {
    bindHost: host,
    portOffset: listenerPortOffset(),
    errorResponderListen: `${host}:${await freePort(host)}`,
    management: { adminListen: caddy.adminAddress },
  });
  const res = await caddy.load(renderCaddyJSON(config));
  if (res.status !== 200)
    throw new Error(
      `${ir.namespace}/${ir.name}: Caddy refused the config (${res.status}): ${res.text}`,
    );
}

/**
 * Loads a golden snapshot file (tests/golden/*.in.yaml), as `flavor` proxies would run it,
 * into `caddy`, with every EndpointSlice pointed at `port` on loopback. The file must hold
 * one Gateway of ours.
 */
export async function loadGoldenOnLoopback(
  caddy: Caddy,
  file: string,
  flavor: ProxyFlavor,
  port: number,
): Promise<void> {
  const objects = await withLoopbackEndpoints(
    parseSnapshotYAML(readFileSync(file, "utf8")),
    async () => port,
  );
  const result = translate(snapshotOf(withProxyFlavor(objects, flavor)));
  if (result.gateways.length !== 1)
    throw new Error(`${file}: ${result.gateways.length} Gateways translated, expected 1`);
  await loadGateway(caddy, result.gateways[0]!);
}
