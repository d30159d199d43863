/** Readiness/liveness/startup probes: httpGet, tcpSocket, exec (in the container's namespaces). */
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { connect } from "node:net";
import { run } from "./exec";
import type { ContainerPort, Probe } from "./types";

export interface ProbeTarget {
  readonly podIP: string;
  readonly ports: readonly ContainerPort[];
  /** pid of the container's main process (for exec probes). */
  readonly pid: number;
}

/** A probe's port: a number, or the name of a container port (pure). */
export function resolvePort(
  port: number | string,
  ports: readonly ContainerPort[],
): number | undefined {
  if (typeof port === "number") return port;
  if (/^\d+$/.test(port)) return Number(port);
  return ports.find(p => p.name === port)?.containerPort;
}

export interface ProbeTimings {
  readonly initialDelayMs: number;
  readonly periodMs: number;
  readonly timeoutMs: number;
  readonly successThreshold: number;
  readonly failureThreshold: number;
}

/** Probe fields with the API defaults applied (pure). */
export function probeTimings(p: Probe): ProbeTimings {
  return {
    initialDelayMs: (p.initialDelaySeconds ?? 0) * 1000,
    periodMs: (p.periodSeconds ?? 10) * 1000,
    timeoutMs: (p.timeoutSeconds ?? 1) * 1000,
    successThreshold: p.successThreshold ?? 1,
    failureThreshold: p.failureThreshold ?? 3,
  };
}

export type ProbeOutcome = { readonly ok: true } | { readonly ok: false; readonly message: string };

export async function probeOnce(
  p: Probe,
  t: ProbeTarget,
  timeoutMs: number,
): Promise<ProbeOutcome> {
  try {
    if (p.httpGet) {
      const port = resolvePort(p.httpGet.port, t.ports);
      if (port === undefined) return { ok: false, message: `unknown port ${p.httpGet.port}` };
      const code = await httpGet(
        (p.httpGet.scheme ?? "HTTP").toUpperCase() === "HTTPS",
        p.httpGet.host ?? t.podIP,
        port,
        p.httpGet.path ?? "/",
        p.httpGet.httpHeaders ?? [],
        timeoutMs,
      );
      return code >= 200 && code < 400
        ? { ok: true }
        : { ok: false, message: `HTTP probe failed with statuscode: ${code}` };
    }
    if (p.tcpSocket || p.grpc) {
      const raw = p.tcpSocket?.port ?? p.grpc?.port ?? 0;
      const port = resolvePort(raw, t.ports);
      if (port === undefined) return { ok: false, message: `unknown port ${raw}` };
      await tcpConnect(p.tcpSocket?.host ?? t.podIP, port, timeoutMs);
      return { ok: true };
    }
    if (p.exec?.command?.length) {
      await run(
        "nsenter",
        ["-t", String(t.pid), "-m", "-n", "-u", "--", ...p.exec.command],
        Math.max(timeoutMs, 1000),
      );
      return { ok: true };
    }
    return { ok: true };
  } catch (e) {
    return { ok: false, message: e instanceof Error ? e.message : String(e) };
  }
}

function httpGet(
  tls: boolean,
  host: string,
  port: number,
  path: string,
  headers: readonly { name: string; value: string }[],
  timeoutMs: number,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = (tls ? httpsRequest : httpRequest)(
      {
        host,
        port,
        path,
        method: "GET",
        headers: {
          "user-agent": "kube-probe/1.36",
          ...Object.fromEntries(headers.map(h => [h.name, h.value])),
        },
        timeout: timeoutMs,
        rejectUnauthorized: false,
      },
      res => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`timeout after ${timeoutMs}ms`)));
    req.on("error", reject);
    req.end();
  });
}

function tcpConnect(host: string, port: number, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = connect({ host, port, timeout: timeoutMs });
    s.once("connect", () => {
      s.destroy();
      resolve();
    });
    s.once("timeout", () => {
      s.destroy();
      reject(new Error(`dial tcp ${host}:${port}: i/o timeout`));
    });
    s.once("error", e => reject(new Error(`dial tcp ${host}:${port}: ${e.message}`)));
  });
}

/** Counts consecutive results against the thresholds (pure, stateful). */
export class ProbeCounter {
  private successes = 0;
  private failures = 0;
  constructor(
    private readonly t: ProbeTimings,
    public result: boolean,
  ) {}
  /** Records an outcome and returns the (possibly changed) result. */
  record(ok: boolean): boolean {
    if (ok) {
      this.failures = 0;
      this.successes++;
      if (this.successes >= this.t.successThreshold) this.result = true;
    } else {
      this.successes = 0;
      this.failures++;
      if (this.failures >= this.t.failureThreshold) this.result = false;
    }
    return this.result;
  }
}
