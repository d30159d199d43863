/**
 * Traffic through a Gateway's LoadBalancer address (127.20.x.x on the local cluster): one GET,
 * one request with a method, headers and a body (`call`), and a steady client that counts every
 * failed request. Loopback addresses only.
 */
import { type IncomingHttpHeaders, request } from "node:http";
import { Worker } from "node:worker_threads";

export interface Reply {
  readonly status: number;
  readonly body: string;
  readonly error?: string;
}

/** One GET through the Gateway (a new connection each time); resolves, never rejects. */
export function get(address: string, host: string, path = "/", port = 80): Promise<Reply> {
  if (!/^127\./.test(address) && !/^10\.244\.0\./.test(address))
    return Promise.resolve({ status: 0, body: "", error: `refusing to send to ${address}` });
  return new Promise(resolve => {
    const req = request(
      { host: address, port, path, headers: { Host: host }, timeout: 5000, agent: false },
      res => {
        let body = "";
        res.on("data", d => (body += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", e => resolve({ status: 0, body, error: e.message }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", e => resolve({ status: 0, body: "", error: e.message }));
    req.end();
  });
}

export interface Failure {
  /** Milliseconds since the client started. */
  readonly atMs: number;
  readonly status: number;
  readonly error?: string;
}

export interface SteadyResult {
  readonly sent: number;
  readonly failures: readonly Failure[];
  readonly durationMs: number;
}

export interface SteadyClient {
  /** Requests sent so far. */
  sent(): number;
  /** Stops sending; resolves with every request's outcome once the last one finished. */
  stop(): Promise<SteadyResult>;
}

export interface SteadyOptions {
  readonly path?: string;
  /** Pause between two requests (default 20 ms). */
  readonly intervalMs?: number;
  /** Upper bound of requests (default 20,000). */
  readonly max?: number;
  /** Upper bound of time (default 10 minutes). */
  readonly maxMs?: number;
  readonly port?: number;
}

/**
 * The client's loop runs in a worker thread: the test's own thread blocks in `spawnSync`
 * (kubectl) for seconds at a time, which would stall a client running beside it. The worker
 * repeats `get` above in plain JavaScript (it cannot load TypeScript); keep the two alike.
 */
const WORKER_SOURCE = `
const { request } = require("node:http");
const { workerData, parentPort } = require("node:worker_threads");
const { address, host, path, port, intervalMs, max, maxMs, counter } = workerData;
const sentCount = new Int32Array(counter);
let stopped = false;
parentPort.on("message", m => { if (m === "stop") stopped = true; });
const get = () => new Promise(resolve => {
  const req = request({ host: address, port, path, headers: { Host: host }, timeout: 5000, agent: false }, res => {
    let body = "";
    res.on("data", d => (body += d));
    res.on("end", () => resolve({ status: res.statusCode || 0 }));
    res.on("error", e => resolve({ status: 0, error: e.message }));
  });
  req.on("timeout", () => req.destroy(new Error("timeout")));
  req.on("error", e => resolve({ status: 0, error: e.message }));
  req.end();
});
(async () => {
  const failures = [];
  const started = Date.now();
  let sent = 0;
  while (!stopped && sent < max && Date.now() - started < maxMs) {
    const atMs = Date.now() - started;
    const r = await get();
    sent++;
    Atomics.store(sentCount, 0, sent);
    if (r.status !== 200) failures.push({ atMs, status: r.status, ...(r.error ? { error: r.error } : {}) });
    await new Promise(res => setTimeout(res, intervalMs));
  }
  parentPort.postMessage({ sent, failures, durationMs: Date.now() - started });
})();
`;

/**
 * Sends one GET after another (each on its own connection, `intervalMs` apart) until stopped or
 * a bound is reached; every reply that is not a 200 is a failure.
 */
export function steadyClient(
  address: string,
  host: string,
  opts: SteadyOptions = {},
): SteadyClient {
  const { path = "/", port = 80, intervalMs = 20, max = 20_000, maxMs = 600_000 } = opts;
  if (!/^127\./.test(address) && !/^10\.244\.0\./.test(address))
    throw new Error(`refusing to send to ${address}`);
  const counter = new SharedArrayBuffer(4);
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { address, host, path, port, intervalMs, max, maxMs, counter },
  });
  const result = new Promise<SteadyResult>((resolve, reject) => {
    worker.once("message", m => resolve(m as SteadyResult));
    worker.once("error", reject);
  });
  return {
    sent: () => Atomics.load(new Int32Array(counter), 0),
    stop: async () => {
      worker.postMessage("stop");
      const r = await result;
      await worker.terminate();
      return r;
    },
  };
}

/** One plain HTTP request on port 80: status, response headers and body. */
export const call = (
  address: string,
  host: string,
  p: string,
  method = "GET",
  headers: Record<string, string> = {},
  body?: Buffer,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> =>
  new Promise(resolve => {
    const req = request(
      {
        host: address,
        port: 80,
        path: p,
        method,
        headers: { Host: host, ...headers },
        timeout: 5000,
        agent: false,
      },
      res => {
        let body = "";
        res.on("data", d => (body += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", () => resolve({ status: 0, headers: {}, body: "" }));
    req.end(body);
  });
