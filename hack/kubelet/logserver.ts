/**
 * The kubelet's HTTPS endpoint as kube-apiserver uses it for `kubectl logs`:
 * GET /containerLogs/{namespace}/{pod}/{container}?follow&tailLines&timestamps&previous&sinceSeconds&sinceTime&limitBytes.
 * Clients must present a certificate signed by the cluster CA (kube-apiserver's kubelet client cert).
 */
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { createServer, Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "./log";
import { parseLogLine, parseLogQuery, renderLine, renderLogs } from "./logs";
import type { PodManager } from "./pods";

export interface LogServerConfig {
  readonly host: string;
  readonly port: number;
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca: Buffer;
}

/** Splits /containerLogs/ns/pod/container (pure). */
export function parseLogPath(
  path: string,
): { namespace: string; pod: string; container: string } | undefined {
  const m = path.match(/^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)\/?$/);
  if (!m) return undefined;
  return {
    namespace: decodeURIComponent(m[1]),
    pod: decodeURIComponent(m[2]),
    container: decodeURIComponent(m[3]),
  };
}

export class LogServer {
  private server: Server | undefined;
  private pods: PodManager | undefined;

  constructor(
    private readonly cfg: LogServerConfig,
    private readonly log: Logger,
  ) {}

  setPods(p: PodManager): void {
    this.pods = p;
  }

  listen(): Promise<void> {
    this.server = createServer(
      {
        cert: this.cfg.cert,
        key: this.cfg.key,
        ca: this.cfg.ca,
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        try {
          this.handle(req, res);
        } catch (e) {
          this.log.warn(`log server: ${String(e)}`);
          if (!res.headersSent) res.writeHead(500);
          res.end(String(e));
        }
      },
    );
    return new Promise((resolve, reject) => {
      this.server!.once("error", reject);
      this.server!.listen(this.cfg.port, this.cfg.host, () => resolve());
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? "/", "https://kubelet");
    if (url.pathname === "/healthz") {
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
      return;
    }
    const target = req.method === "GET" ? parseLogPath(url.pathname) : undefined;
    if (!target) {
      res
        .writeHead(404, { "content-type": "text/plain" })
        .end("not found (this kubelet serves /containerLogs only)\n");
      return;
    }
    const worker = this.pods?.find(target.namespace, target.pod);
    const runner = worker?.runner(target.container);
    if (!worker || !runner) {
      // Like a kubelet: 400 with the reason for a container that has not started.
      const waiting = worker?.waitingReason(target.container);
      const text = waiting
        ? `container "${target.container}" in pod "${target.pod}" is waiting to start: ${waiting}\n`
        : `${worker ? `container "${target.container}" in pod` : "pod"} ${target.namespace}/${target.pod} is not running on this node\n`;
      res.writeHead(waiting ? 400 : 404, { "content-type": "text/plain" }).end(text);
      return;
    }
    const { follow, previous, query } = parseLogQuery(url.searchParams);
    const attempt = previous
      ? runner.running
        ? runner.restartCount - 1
        : runner.restartCount
      : runner.restartCount;
    const file = runner.logFile(attempt);
    if (attempt < 0 || !existsSync(file)) {
      res
        .writeHead(previous ? 400 : 200, { "content-type": "text/plain" })
        .end(previous ? `previous terminated container "${target.container}" not found\n` : "");
      return;
    }
    const content = readFileSync(file, "utf8");
    res.writeHead(200, { "content-type": "text/plain", "transfer-encoding": "chunked" });
    res.write(renderLogs(content, query));
    const stillWriting = () => runner.restartCount === attempt && runner.running;
    if (!follow || previous || !stillWriting()) {
      res.end();
      return;
    }
    // Follow: stream what is appended until the attempt ends or the client goes away.
    let offset = Buffer.byteLength(content);
    let partial = "";
    const tick = () => {
      const size = existsSync(file) ? statSync(file).size : offset;
      if (size > offset) {
        const buf = Buffer.alloc(size - offset);
        const fd = openSync(file, "r");
        readSync(fd, buf, 0, buf.length, offset);
        closeSync(fd);
        offset = size;
        const lines = (partial + buf.toString("utf8")).split("\n");
        partial = lines.pop() ?? "";
        for (const l of lines) {
          const p = parseLogLine(l);
          if (p) res.write(renderLine(p, query.timestamps));
        }
      }
      if (!stillWriting() && size <= offset) {
        clearInterval(timer);
        res.end();
      }
    };
    const timer = setInterval(tick, 200);
    req.on("close", () => clearInterval(timer));
  }
}
