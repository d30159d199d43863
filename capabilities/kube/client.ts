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
  request<T>(method: string, path: string, body?: unknown, contentType?: string): Promise<T>;
}

/** User-Agent of our requests: the API server's audit log and metrics name the replica by it. */
export const userAgent = (identity: string): string => `kengine-gateway/${identity}`;

export function kubeClient(
  kc: KubeConfig = loadDefault(),
  options: { readonly userAgent?: string } = {},
): KubeClient {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("no current cluster in the kubeconfig");
  const base = new URL(cluster.server);
  return {
    async request<T>(
      method: string,
      path: string,
      body?: unknown,
      contentType = "application/json",
    ): Promise<T> {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const opts: RequestOptions = {
        method,
        hostname: base.hostname.replace(/^\[|\]$/g, ""),
        port: base.port || 443,
        path,
        headers: {
          Accept: "application/json",
          "User-Agent": options.userAgent ?? "kengine-gateway",
          // Node sends a DELETE body unframed (no chunked encoding by default): without a
          // length the server never sees it (e.g. DeleteOptions preconditions).
          ...(payload !== undefined
            ? { "Content-Type": contentType, "Content-Length": Buffer.byteLength(payload) }
            : {}),
        },
        timeout: 30_000,
      };
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
  };
}

function loadDefault(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}

export const statusOf = (e: unknown): number | undefined =>
  (e as { status?: number } | null)?.status;
