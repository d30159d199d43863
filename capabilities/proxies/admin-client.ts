/**
 * The controller's side of the management channel: Caddy admin requests over mutual TLS, with
 * `node:https` (the Kubernetes client and ACME use it too; no HTTP library in the bundle).
 *
 * Each request dials the proxy's IP but names the proxy's server name twice: as SNI (which the
 * proxy's certificate is verified against) and as the Host header, because Caddy's admin with
 * client authentication requires SNI = Host. No `Sec-Fetch-Mode` or Origin header is sent:
 * Caddy's admin (≥ 2.11) would then demand an Origin it accepts.
 *
 * Connections: see `AdminClient` (route-table requests keep theirs; every other request
 * closes its connection).
 */
import type { IncomingHttpHeaders } from "node:http";
import { Agent, request as httpsRequest } from "node:https";
import type { TLSSocket } from "node:tls";
// Types only (erased from the bundle): tests may hand in undici's MockAgent.
import type { Dispatcher } from "undici";
import { CONFIG_ID_PREFIX } from "../caddy/management";
import { err, ok, Result } from "../result";
import type { ClientCredentials } from "../pki/pki";
import {
  AdminError,
  KiB,
  readCapped,
  rejectionMessage,
  RESPONSE_LIMITS,
  ResponseLimits,
  staleSocket,
  transportError,
} from "./admin-errors";

// (the answers' types and caps, for the channel's users)
export { describeAdminError, readCapped, RESPONSE_LIMITS } from "./admin-errors";
export type { AdminError, ResponseLimits } from "./admin-errors";

/** One proxy's management listener. */
export interface ProxyEndpoint {
  /** Stable key, normally the pod name. */
  readonly name: string;
  /** IP address to dial (pod IP). */
  readonly address: string;
  readonly port: number;
  /** Name in the proxy's certificate, sent as SNI and Host, e.g. "proxy-0.gw-admin.default.svc". */
  readonly serverName: string;
  /**
   * Which client identity to use (a key of `AdminChannels`); absent: the controller's own.
   * Bring-your-own proxies are reached with the credentials named in their parameters.
   */
  readonly channel?: string;
}

/** The controller's client identity (pki/pki.ts), re-exported for the channel's users. */
export type { ClientCredentials };

export interface AdminClientOptions {
  /** For /load; Caddy provisions the whole config before answering. */
  readonly loadTimeoutMs?: number;
  /** For reads (GET /config/, /id/…). */
  readonly readTimeoutMs?: number;
  /** TCP connect and TLS handshake of a new connection. */
  readonly connectTimeoutMs?: number;
  /** Tests only: an undici MockAgent answers instead of the proxies. */
  readonly dispatcher?: Dispatcher;
  /** Size caps for the answers read from a proxy (defaults: RESPONSE_LIMITS). */
  readonly limits?: Partial<ResponseLimits>;
}

/** Our validation-only admin route (proxy/validate). */
export const VALIDATE_PATH = "/kengine/validate";

export type Validation =
  | { readonly accepted: true }
  | { readonly accepted: false; readonly message: string };

/** Connections kept per proxy for route-table requests (one per table delta sent at once). */
const KEPT_CONNECTIONS = 4;
/** A kept connection idle this long is closed; a proxy without connections is forgotten. */
const KEPT_IDLE_MS = 4_000;

/** The proxy's serving certificate as last seen in a verified handshake (for KengineProxy status). */
export interface PeerCertificate {
  readonly serverName: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly fingerprint256: string;
  readonly seenAt: Date;
}

export interface ConfigRead {
  readonly body: string;
  readonly etag: string | undefined;
}

/** The admin API of our route tables (proxy/routetable). */
export const ROUTE_TABLES_PATH = "/kengine/route-tables/";

/** A route table as the proxy describes it. */
export interface RouteTableInfo {
  readonly id: string;
  readonly version: number;
  readonly hash: string;
  readonly hosts: number;
  readonly label?: string;
}

const isInfo = (v: unknown): v is RouteTableInfo => {
  const o = v as Partial<RouteTableInfo> | null;
  return (
    typeof o === "object" &&
    o !== null &&
    typeof o.id === "string" &&
    typeof o.hash === "string" &&
    typeof o.version === "number"
  );
};
const one = (v: unknown): RouteTableInfo | undefined => (isInfo(v) ? v : undefined);
const many = (v: unknown): readonly RouteTableInfo[] | undefined =>
  Array.isArray(v) && v.every(isInfo) ? v : undefined;

function routeTableAnswer<T>(
  answer: { status: number; body: string },
  shape: (v: unknown) => T | undefined,
): Result<T, AdminError> {
  if (answer.status !== 200)
    return err({ kind: "rejected", status: answer.status, message: rejectionMessage(answer.body) });
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.body);
  } catch {
    parsed = undefined;
  }
  const value = shape(parsed);
  return value === undefined
    ? err({ kind: "rejected", status: 502, message: "not a route table answer" })
    : ok(value);
}

/** One admin request as the transport sends it. */
interface Outgoing {
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer | undefined;
  readonly timeoutMs: number;
  readonly keep: boolean;
}

/** The proxy's answer: status, headers, and the body to read (capped) or destroy. */
interface Exchange {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: AsyncIterable<Uint8Array> & { destroy(error?: Error): unknown };
}

const connectTimeout = (ms: number): Error =>
  Object.assign(new Error(`no TLS connection within ${ms} ms`), { code: "ETIMEDOUT" });

const anySockets = (lists: NodeJS.ReadOnlyDict<readonly unknown[]>): boolean =>
  Object.values(lists).some(l => (l?.length ?? 0) > 0);

/**
 * Connections: each request on a new mTLS connection closed after it (`connection: close`),
 * except route-table deltas and reads (the hot path of a route change, Bundled flavour), which
 * keep up to `KEPT_CONNECTIONS` per proxy alive between changes: a new connection costs the
 * TCP and TLS round trips and both sides' handshake CPU on every change. A `/load` replaces the
 * server those connections belong to, so they are dropped after each `/load`; a kept connection
 * the proxy closed meanwhile is detected on use and the request sent once more on a new one.
 *
 * Every connection is verified against `caPem` with the proxy's server name; the controller
 * presents its client certificate. `close()` waits for the requests in flight, then closes
 * every connection.
 */
export class AdminClient {
  /** Tests only. */
  readonly #dispatcher: Dispatcher | undefined;
  /** The mTLS options of every connection. */
  readonly #tls: { readonly ca: string; readonly cert: string; readonly key: string };
  /** Requests that close their connection. */
  readonly #oneShot: Agent;
  /** Keep-alive agents by origin and server name (route-table requests). */
  readonly #kept = new Map<string, Agent>();
  /** Sockets whose handshake is already watched (a kept socket is seen again on reuse). */
  readonly #watched = new WeakSet<object>();
  readonly #loadTimeoutMs: number;
  readonly #readTimeoutMs: number;
  readonly #connectTimeoutMs: number;
  readonly #limits: ResponseLimits;
  readonly #peers = new Map<string, PeerCertificate>();
  #inFlight = 0;
  #closed = false;
  #drained: (() => void)[] = [];

  constructor(credentials: ClientCredentials, options: AdminClientOptions = {}) {
    this.#loadTimeoutMs = options.loadTimeoutMs ?? 30_000;
    this.#readTimeoutMs = options.readTimeoutMs ?? 5_000;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? 3_000;
    this.#limits = { ...RESPONSE_LIMITS, ...options.limits };
    this.#dispatcher = options.dispatcher;
    this.#tls = {
      ca: credentials.caPem,
      cert: credentials.certificatePem,
      key: credentials.privateKey.reveal(),
    };
    this.#oneShot = new Agent({ ...this.#tls, keepAlive: false });
  }

  /** The keep-alive agent for an endpoint, made on first use. */
  #keptFor(endpoint: ProxyEndpoint): Agent {
    const key = this.#keptKey(endpoint);
    let agent = this.#kept.get(key);
    if (!agent) {
      agent = new Agent({
        ...this.#tls,
        keepAlive: true,
        maxSockets: KEPT_CONNECTIONS,
        maxFreeSockets: KEPT_CONNECTIONS,
        // an idle kept socket times out and is closed (Node's agent destroys free sockets on timeout)
        timeout: KEPT_IDLE_MS,
        scheduling: "lifo",
      });
      this.#kept.set(key, agent);
    }
    return agent;
  }

  #keptKey(endpoint: ProxyEndpoint): string {
    return `${this.#origin(endpoint)} ${endpoint.serverName}`;
  }

  /** Forgets an endpoint's agent once its last connection is gone with nothing queued. */
  #forgetIfIdle(key: string, agent: Agent): void {
    if (this.#kept.get(key) !== agent) return;
    if (anySockets(agent.sockets) || anySockets(agent.freeSockets) || anySockets(agent.requests))
      return;
    this.#kept.delete(key);
    agent.destroy();
  }

  /** How many proxies have kept connections now (for tests and diagnosis). */
  get keptProxies(): number {
    return this.#kept.size;
  }

  /** Drops an endpoint's kept connections (after a `/load`, or one found closed). */
  #dropKept(endpoint: ProxyEndpoint): void {
    const key = this.#keptKey(endpoint);
    const agent = this.#kept.get(key);
    if (!agent) return;
    this.#kept.delete(key);
    agent.destroy();
  }

  #remember(endpoint: ProxyEndpoint, socket: TLSSocket): void {
    const cert = socket.authorized ? socket.getPeerCertificate() : undefined;
    if (!cert?.valid_to) return;
    this.#peers.set(`${endpoint.address}:${endpoint.port}`, {
      serverName: endpoint.serverName,
      notBefore: new Date(cert.valid_from),
      notAfter: new Date(cert.valid_to),
      fingerprint256: cert.fingerprint256,
      seenAt: new Date(),
    });
  }

  /** The serving certificate the proxy presented on the last verified connection, if any. */
  peerCertificate(endpoint: ProxyEndpoint): PeerCertificate | undefined {
    return this.#peers.get(`${endpoint.address}:${endpoint.port}`);
  }

  /**
   * A new connection gets `connectTimeoutMs` for TCP and TLS; its verified certificate is
   * remembered; a kept one is forgotten with its agent once it closes. A reused socket was
   * seen when it was new.
   */
  #watch(endpoint: ProxyEndpoint, socket: TLSSocket, fail: (e: Error) => void, kept?: Agent) {
    if (this.#watched.has(socket)) return;
    this.#watched.add(socket);
    const timer = setTimeout(
      () => fail(connectTimeout(this.#connectTimeoutMs)),
      this.#connectTimeoutMs,
    );
    socket.once("secureConnect", () => {
      clearTimeout(timer);
      this.#remember(endpoint, socket);
    });
    socket.once("close", () => {
      clearTimeout(timer);
      // after the agent's own close handler has taken the socket off its lists
      if (kept) setImmediate(() => this.#forgetIfIdle(this.#keptKey(endpoint), kept));
    });
  }

  /** One exchange over `node:https` (or the test dispatcher). Rejects on transport failures. */
  #exchange(endpoint: ProxyEndpoint, out: Outgoing): Promise<Exchange> {
    const signal = AbortSignal.timeout(out.timeoutMs);
    if (this.#dispatcher)
      return this.#dispatcher
        .request({
          origin: this.#origin(endpoint),
          path: out.path,
          method: out.method,
          headers: out.headers,
          body: out.body,
          signal,
        })
        .then(r => ({ status: r.statusCode, headers: r.headers, body: r.body }));
    const agent = out.keep ? this.#keptFor(endpoint) : this.#oneShot;
    return new Promise((resolve, reject) => {
      const req = httpsRequest({
        agent,
        host: endpoint.address,
        port: endpoint.port,
        servername: endpoint.serverName,
        rejectUnauthorized: true,
        method: out.method,
        path: out.path,
        headers: {
          ...out.headers,
          ...(out.body ? { "content-length": String(out.body.length) } : {}),
        },
        signal,
      });
      req.on("socket", socket =>
        this.#watch(
          endpoint,
          socket as TLSSocket,
          e => req.destroy(e),
          out.keep ? agent : undefined,
        ),
      );
      req.on("response", res =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: res }),
      );
      // Stays attached: a failure after the answer began surfaces while its body is read.
      req.on("error", reject);
      req.end(out.body);
    });
  }

  /**
   * One admin request. The body of a 2xx answer is read up to `limit` bytes (past it: an
   * `oversized` error); the body of any other status up to the error cap, cut there.
   */
  async #send(
    endpoint: ProxyEndpoint,
    method: "GET" | "POST",
    path: string,
    timeoutMs: number,
    body?: Buffer,
    limit: number = this.#limits.load,
    extraHeaders: Readonly<Record<string, string>> = {},
    keep = false,
  ): Promise<Result<{ status: number; body: string; etag: string | undefined }, AdminError>> {
    if (this.#closed) return err({ kind: "connect", message: "admin client closed" });
    this.#inFlight++;
    try {
      return await this.#sendOnce(
        endpoint,
        method,
        path,
        timeoutMs,
        body,
        limit,
        extraHeaders,
        keep,
      );
    } finally {
      if (--this.#inFlight === 0) for (const done of this.#drained.splice(0)) done();
    }
  }

  async #sendOnce(
    endpoint: ProxyEndpoint,
    method: "GET" | "POST",
    path: string,
    timeoutMs: number,
    body: Buffer | undefined,
    limit: number,
    extraHeaders: Readonly<Record<string, string>>,
    keep: boolean,
  ): Promise<Result<{ status: number; body: string; etag: string | undefined }, AdminError>> {
    try {
      const response = await this.#exchange(endpoint, {
        method,
        path,
        headers: {
          host: `${endpoint.serverName}:${endpoint.port}`,
          ...(keep ? {} : { connection: "close" }),
          ...(body ? { "content-type": "application/json" } : {}),
          ...extraHeaders,
        },
        body,
        timeoutMs,
        keep,
      });
      const status = response.status;
      const success = status >= 200 && status < 300;
      const cap = success ? limit : this.#limits.error;
      const length = Number(response.headers["content-length"]);
      const read = await readCapped(
        response.body,
        cap,
        Number.isFinite(length) ? length : undefined,
      );
      if (read.truncated && success)
        return err({
          kind: "oversized",
          status,
          limitBytes: cap,
          message: `${method} ${path.split("?")[0]}: the answer is longer than ${KiB(cap)}; stopped reading`,
        });
      const etag = response.headers.etag;
      return ok({
        status,
        body: read.truncated ? `${read.text} … (cut at ${KiB(cap)})` : read.text,
        etag: typeof etag === "string" ? etag : undefined,
      });
    } catch (e) {
      if (keep && staleSocket(e)) {
        this.#dropKept(endpoint);
        return this.#sendOnce(endpoint, method, path, timeoutMs, body, limit, extraHeaders, false);
      }
      return err(transportError(e));
    }
  }

  /** The origin of an endpoint's admin requests. */
  #origin(endpoint: ProxyEndpoint): string {
    return `https://${endpoint.address.includes(":") ? `[${endpoint.address}]` : endpoint.address}:${endpoint.port}`;
  }

  /**
   * POST /load: replace the proxy's whole config. `force`: load even if the bytes equal the
   * running config (Caddy skips those; after route-table deltas they are not what runs).
   */
  async load(
    endpoint: ProxyEndpoint,
    config: Buffer,
    force = false,
  ): Promise<Result<void, AdminError>> {
    const sent = await this.#send(
      endpoint,
      "POST",
      "/load",
      this.#loadTimeoutMs,
      config,
      this.#limits.load,
      force ? { "cache-control": "must-revalidate" } : {},
    );
    // The load replaced the management server: its kept connections are closing.
    this.#dropKept(endpoint);
    if (!sent.ok) return sent;
    if (sent.value.status === 200) return ok(undefined);
    return err({
      kind: "rejected",
      status: sent.value.status,
      message: rejectionMessage(sent.value.body),
    });
  }

  /**
   * POST /kengine/validate (our admin module, proxy/validate; Bundled flavour only):
   * would the proxy load this config? Loads nothing: the proxy keeps serving what it runs.
   * `accepted: false` carries Caddy's error verbatim; a proxy without the module answers 404,
   * reported as an error.
   */
  async validate(endpoint: ProxyEndpoint, config: Buffer): Promise<Result<Validation, AdminError>> {
    const sent = await this.#send(endpoint, "POST", VALIDATE_PATH, this.#loadTimeoutMs, config);
    if (!sent.ok) return sent;
    const message = () => rejectionMessage(sent.value.body); // #send caps what it reads
    if (sent.value.status === 200) return ok({ accepted: true });
    if (sent.value.status === 400) return ok({ accepted: false, message: message() });
    return err({ kind: "rejected", status: sent.value.status, message: message() });
  }

  /** GET /config/<path>: the running config (for diagnosis; may contain private keys, never log it). */
  async getConfig(endpoint: ProxyEndpoint, path = ""): Promise<Result<ConfigRead, AdminError>> {
    const sent = await this.#send(
      endpoint,
      "GET",
      `/config/${path.replace(/^\/+/, "")}`,
      this.#readTimeoutMs,
      undefined,
      this.#limits.config,
    );
    if (!sent.ok) return sent;
    if (sent.value.status !== 200)
      return err({
        kind: "rejected",
        status: sent.value.status,
        message: rejectionMessage(sent.value.body),
      });
    return ok({ body: sent.value.body, etag: sent.value.etag });
  }

  /** GET /metrics: the proxy's own Prometheus metrics (Caddy's admin endpoint), as text. */
  async metrics(endpoint: ProxyEndpoint): Promise<Result<string, AdminError>> {
    const sent = await this.#send(
      endpoint,
      "GET",
      "/metrics",
      this.#readTimeoutMs,
      undefined,
      this.#limits.metrics,
    );
    if (!sent.ok) return sent;
    if (sent.value.status !== 200)
      return err({
        kind: "rejected",
        status: sent.value.status,
        message: rejectionMessage(sent.value.body),
      });
    return ok(sent.value.body);
  }

  /** Does the proxy run the sealed config with this hash? One small request (GET /id/kengine-config-<hash>). */
  async runsConfig(endpoint: ProxyEndpoint, hash: string): Promise<Result<boolean, AdminError>> {
    if (!/^[0-9a-f]{64}$/.test(hash))
      return err({ kind: "rejected", status: 0, message: "not a config hash" });
    const sent = await this.#send(
      endpoint,
      "GET",
      `/id/${CONFIG_ID_PREFIX}${hash}/@id`,
      this.#readTimeoutMs,
      undefined,
      this.#limits.id,
    );
    if (!sent.ok) return sent;
    if (sent.value.status === 200) return ok(true);
    if (sent.value.status === 404) return ok(false);
    return err({
      kind: "rejected",
      status: sent.value.status,
      message: rejectionMessage(sent.value.body),
    });
  }

  /**
   * POST /kengine/route-tables/<id> (Bundled, proxy/routetable): one batch delta, applied only
   * if the table's hash is `ifMatch`. Answers the table's Info; a refusal keeps Caddy's words.
   */
  async postRouteTable(
    endpoint: ProxyEndpoint,
    id: string,
    body: string,
    ifMatch: string,
  ): Promise<Result<RouteTableInfo, AdminError>> {
    const sent = await this.#send(
      endpoint,
      "POST",
      `${ROUTE_TABLES_PATH}${encodeURIComponent(id)}`,
      this.#loadTimeoutMs,
      Buffer.from(body, "utf8"),
      this.#limits.id,
      { "if-match": `"${ifMatch}"` },
      true,
    );
    return sent.ok ? routeTableAnswer(sent.value, one) : sent;
  }

  /** GET /kengine/route-tables/: every table the proxy holds (id, version, hash, label). */
  async routeTables(
    endpoint: ProxyEndpoint,
  ): Promise<Result<readonly RouteTableInfo[], AdminError>> {
    const sent = await this.#send(
      endpoint,
      "GET",
      ROUTE_TABLES_PATH,
      this.#readTimeoutMs,
      undefined,
      this.#limits.config,
      {},
      true,
    );
    return sent.ok ? routeTableAnswer(sent.value, many) : sent;
  }

  /** Refuses new requests, waits for those in flight, then closes every connection. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#inFlight > 0) await new Promise<void>(done => this.#drained.push(done));
    for (const agent of this.#kept.values()) agent.destroy();
    this.#kept.clear();
    this.#oneShot.destroy();
  }
}
