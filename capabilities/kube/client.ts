/**
 * A minimal raw client for what kubernetes-fluent-client cannot express: conditional status
 * writes (a merge patch of /status carrying metadata.resourceVersion, so a concurrent change
 * yields 409 instead of a lost update). Credentials come from the usual places (in-cluster
 * service account, or KUBECONFIG).
 */
import { KubeConfig } from "@kubernetes/client-node";
import { request } from "node:https";
import type { RequestOptions } from "node:https";

export class KubeError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    what: string,
  ) {
    super(`${what}: HTTP ${status}: ${body.slice(0, 500)}`);
    this.name = "KubeError";
  }
}

export interface KubeClient {
  /** `accept`: the Accept header (default JSON; a metadata-only list asks for PartialObjectMetadataList). */
  request<T>(
    method: string,
    path: string,
    body?: unknown,
    contentType?: string,
    accept?: string,
  ): Promise<T>;
  /**
   * A watch request: every line of the response, parsed, to `onEvent`; resolves when the server
   * ends the response. Optional: clients without it (unit-test fakes) get no watches.
   */
  watch?(
    path: string,
    onEvent: (event: WatchEvent) => void,
    signal: AbortSignal,
    accept?: string,
  ): Promise<void>;
}

/** One line of a watch response (ADDED, MODIFIED, DELETED, BOOKMARK or ERROR). */
export interface WatchEvent {
  readonly type: string;
  readonly object?: {
    readonly metadata?: { readonly resourceVersion?: string };
    /** ERROR events: the Status's code (410: the resourceVersion is too old) and message. */
    readonly code?: number;
    readonly message?: string;
  };
}

/**
 * A watch socket quiet for this long is destroyed. A backstop only: the watch itself restarts a
 * silent watch far sooner (reconcile/watch.ts, KENGINE_WATCH_SILENCE).
 */
const WATCH_IDLE_MS = 10 * 60_000;

/**
 * TCP keep-alive on watch sockets: probes after this much idle time, so a peer that is gone
 * (not one that keeps the connection but stops sending) fails the socket.
 */
const WATCH_KEEPALIVE_MS = 15_000;

/** User-Agent of our requests: the API server's audit log and metrics name the replica by it. */
export const userAgent = (identity: string): string => `kengine-gateway/${identity}`;

export function kubeClient(
  kc: KubeConfig = loadDefault(),
  options: { readonly userAgent?: string } = {},
): KubeClient {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("no current cluster in the kubeconfig");
  const base = new URL(cluster.server);
  /** Options of a request to the API server (credentials are added by the caller). */
  const requestOptions = (
    method: string,
    path: string,
    headers: Record<string, string | number>,
    timeout: number,
    accept = "application/json",
  ): RequestOptions => ({
    method,
    hostname: base.hostname.replace(/^\[|\]$/g, ""),
    port: base.port || 443,
    path,
    headers: {
      Accept: accept,
      "User-Agent": options.userAgent ?? "kengine-gateway",
      ...headers,
    },
    timeout,
  });
  return {
    async request<T>(
      method: string,
      path: string,
      body?: unknown,
      contentType = "application/json",
      accept?: string,
    ): Promise<T> {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const opts = requestOptions(
        method,
        path,
        // Node sends a DELETE body unframed (no chunked encoding by default): without a
        // length the server never sees it (e.g. DeleteOptions preconditions).
        payload !== undefined
          ? { "Content-Type": contentType, "Content-Length": Buffer.byteLength(payload) }
          : {},
        30_000,
        accept,
      );
      await kc.applyToHTTPSOptions(opts);
      return new Promise<T>((resolve, reject) => {
        const req = request(opts, res => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) {
              try {
                resolve((text ? JSON.parse(text) : undefined) as T);
              } catch (e) {
                reject(e);
              }
            } else reject(new KubeError(status, text, `${method} ${path}`));
          });
          res.on("error", reject);
        });
        req.on("timeout", () => req.destroy(new Error(`${method} ${path}: timed out`)));
        req.on("error", reject);
        req.end(payload);
      });
    },

    async watch(path, onEvent, signal, accept): Promise<void> {
      const opts: RequestOptions = {
        ...requestOptions("GET", path, {}, WATCH_IDLE_MS, accept),
        signal,
      };
      await kc.applyToHTTPSOptions(opts);
      return new Promise<void>((resolve, reject) => {
        const req = request(opts, res => {
          const status = res.statusCode ?? 0;
          if (status < 200 || status >= 300) {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () =>
              reject(
                new KubeError(status, Buffer.concat(chunks).toString("utf8"), `WATCH ${path}`),
              ),
            );
            res.on("error", reject);
            return;
          }
          // One JSON object per line; a line may span chunks.
          const decoder = new TextDecoder();
          let pending = "";
          res.on("data", (c: Buffer) => {
            const lines = (pending + decoder.decode(c, { stream: true })).split("\n");
            pending = lines.pop() ?? "";
            for (const line of lines) {
              if (line.trim() === "") continue;
              try {
                onEvent(JSON.parse(line) as WatchEvent);
              } catch (e) {
                req.destroy(e instanceof Error ? e : new Error(String(e)));
                return;
              }
            }
          });
          res.on("end", () => resolve());
          res.on("error", reject);
        });
        req.on("socket", socket => socket.setKeepAlive(true, WATCH_KEEPALIVE_MS));
        req.on("timeout", () =>
          req.destroy(new Error(`WATCH ${path}: no data for ${WATCH_IDLE_MS} ms`)),
        );
        req.on("error", reject);
        req.end();
      });
    },
  };
}

function loadDefault(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}

export const statusOf = (e: unknown): number | undefined =>
  (e as { status?: number } | null)?.status;
