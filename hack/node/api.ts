/**
 * A small Kubernetes API client over node:https with a client certificate: JSON requests and
 * list+watch informers that resume from the last resourceVersion and relist on 410 Gone.
 */
import { Agent as HttpAgent, request as httpRequest } from "node:http";
import type { IncomingMessage } from "node:http";
import { Agent, request as httpsRequest } from "node:https";
import type { Credentials } from "./kubeconfig";
import type { Logger } from "./log";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface KubeObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly resourceVersion?: string;
    readonly deletionTimestamp?: string;
    readonly deletionGracePeriodSeconds?: number;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
    readonly [k: string]: unknown;
  };
}

export class Api {
  private readonly agent: Agent | HttpAgent;
  private readonly plain: boolean;
  private readonly base: URL;

  constructor(
    readonly creds: Credentials,
    private readonly log: Logger,
  ) {
    this.base = new URL(creds.server);
    // Plain http is only for tests against an in-process fake API server.
    this.plain = this.base.protocol === "http:";
    this.agent = this.plain
      ? new HttpAgent({ keepAlive: true })
      : new Agent({ keepAlive: true, ca: creds.ca, cert: creds.cert, key: creds.key });
  }

  /** Closes idle keep-alive connections. */
  close(): void {
    this.agent.destroy();
  }

  /** Opens a request and resolves with the response once headers arrive. */
  open(
    method: string,
    path: string,
    body?: unknown,
    contentType = "application/json",
  ): Promise<IncomingMessage> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = (this.plain ? httpRequest : httpsRequest)(
        {
          host: this.base.hostname,
          port: this.base.port || 443,
          method,
          path,
          agent: this.agent,
          headers: {
            accept: "application/json",
            ...(payload === undefined
              ? {}
              : { "content-type": contentType, "content-length": Buffer.byteLength(payload) }),
          },
        },
        resolve,
      );
      req.on("error", reject);
      req.end(payload);
    });
  }

  async request<T>(method: string, path: string, body?: unknown, contentType?: string): Promise<T> {
    const res = await this.open(method, path, body, contentType);
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const status = res.statusCode ?? 0;
    if (status < 200 || status >= 300) {
      let message = text;
      try {
        message = (JSON.parse(text) as { message?: string }).message ?? text;
      } catch {
        // not JSON; keep the text
      }
      throw new ApiError(status, `${method} ${path}: ${status} ${message}`);
    }
    return (text ? JSON.parse(text) : undefined) as T;
  }

  get<T>(path: string): Promise<T> {
    return this.request<T>("GET", path);
  }
  /** A JSON merge patch (what the load balancer writes to Service status). */
  patch<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>("PATCH", path, body, "application/merge-patch+json");
  }

  /** Starts an informer on a collection path (e.g. /api/v1/pods?fieldSelector=...). */
  inform<T extends KubeObject>(path: string, onChange: (key: string, obj: T | undefined) => void) {
    const inf = new Informer<T>(this, this.log, path, onChange);
    inf.start();
    return inf;
  }
}

export const keyOf = (o: KubeObject): string =>
  o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;

interface WatchEvent<T> {
  readonly type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  readonly object: T & { code?: number; message?: string };
}

/** List+watch with a local cache; calls onChange for every add/update/delete it sees. */
export class Informer<T extends KubeObject> {
  readonly cache = new Map<string, T>();
  private stopped = false;
  private resourceVersion = "";
  private current: IncomingMessage | undefined;

  constructor(
    private readonly api: Api,
    private readonly log: Logger,
    private readonly path: string,
    private readonly onChange: (key: string, obj: T | undefined) => void,
  ) {}

  start(): void {
    void this.loop();
  }

  stop(): void {
    this.stopped = true;
    this.current?.destroy();
  }

  private sep(): string {
    return this.path.includes("?") ? "&" : "?";
  }

  private emit(key: string, obj: T | undefined): void {
    try {
      this.onChange(key, obj);
    } catch (e) {
      this.log.error(`informer ${this.path}: handler failed for ${key}: ${String(e)}`);
    }
  }

  private async relist(): Promise<void> {
    const list = await this.api.get<{ metadata: { resourceVersion: string }; items: T[] }>(
      this.path,
    );
    const seen = new Set<string>();
    for (const item of list.items) {
      const key = keyOf(item);
      seen.add(key);
      this.cache.set(key, item);
      this.emit(key, item);
    }
    for (const key of [...this.cache.keys()]) {
      if (!seen.has(key)) {
        this.cache.delete(key);
        this.emit(key, undefined);
      }
    }
    this.resourceVersion = list.metadata.resourceVersion;
  }

  private async loop(): Promise<void> {
    let needList = true;
    let failures = 0;
    while (!this.stopped) {
      try {
        if (needList) {
          await this.relist();
          needList = false;
        }
        const timeout = 240 + Math.floor(Math.random() * 120);
        const res = await this.api.open(
          "GET",
          `${this.path}${this.sep()}watch=1&allowWatchBookmarks=true&timeoutSeconds=${timeout}` +
            `&resourceVersion=${encodeURIComponent(this.resourceVersion)}`,
        );
        this.current = res;
        if (res.statusCode === 410) {
          needList = true;
          res.resume();
          continue;
        }
        if (res.statusCode !== 200) {
          res.resume();
          throw new Error(`watch ${this.path}: HTTP ${res.statusCode}`);
        }
        failures = 0;
        needList = await this.consume(res);
      } catch (e) {
        if (this.stopped) break;
        failures++;
        this.log.warn(`watch ${this.path}: ${String(e)} (retrying)`);
        if (failures > 3) needList = true;
        await sleep(Math.min(5000, 250 * 2 ** failures));
      }
    }
  }

  /** Reads watch events until the stream ends; returns true if a relist is needed. */
  private async consume(res: IncomingMessage): Promise<boolean> {
    let buf = "";
    for await (const chunk of res) {
      buf += (chunk as Buffer).toString("utf8");
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        const ev = JSON.parse(line) as WatchEvent<T>;
        if (ev.type === "ERROR") {
          if (ev.object.code === 410) return true;
          throw new Error(`watch error: ${ev.object.message ?? line}`);
        }
        const rv = ev.object.metadata?.resourceVersion;
        if (rv) this.resourceVersion = rv;
        if (ev.type === "BOOKMARK") continue;
        const key = keyOf(ev.object);
        if (ev.type === "DELETED") {
          this.cache.delete(key);
          this.emit(key, undefined);
        } else {
          this.cache.set(key, ev.object);
          this.emit(key, ev.object);
        }
      }
    }
    return false;
  }
}

const sleep = (ms: number): Promise<void> => new Promise(r => setTimeout(r, ms));
