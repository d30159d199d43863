/**
 * Counts the Kubernetes API requests of one client: a TLS pass-through in front of the real
 * API server (the client's kubeconfig points here; each request is forwarded unchanged with
 * the client's own certificate, responses and watch streams are piped back). Needed because
 * the local API server runs without API Priority and Fairness and `apiserver_request_total`
 * carries no label naming the client.
 */
import { IncomingMessage, ServerResponse } from "node:http";
import { Agent, createServer, request } from "node:https";
import { AddressInfo } from "node:net";

export interface ApiCounter {
  readonly url: string;
  /** Requests so far by `VERB resource-path` (names and query removed). */
  counts(): Record<string, number>;
  total(): number;
  close(): Promise<void>;
}

export interface ApiCounterOptions {
  readonly upstream: string;
  /** Trusts the upstream API server. */
  readonly ca: string;
  /** The client's identity towards the API server. */
  readonly clientCert: string;
  readonly clientKey: string;
  /** This server's certificate (for 127.0.0.1, trusted by the client's kubeconfig). */
  readonly serverCert: string;
  readonly serverKey: string;
}

/** `GET /apis/g/v/namespaces/ns/httproutes/name/status?x` → `GET httproutes/status` (+ watch). */
export function requestKind(method: string, url: string): string {
  const [path, query = ""] = url.split("?");
  const parts = path.split("/").filter(Boolean);
  // /api/v1/... or /apis/group/version/...
  const rest = parts[0] === "api" ? parts.slice(2) : parts[0] === "apis" ? parts.slice(3) : parts;
  const noNs = rest[0] === "namespaces" && rest.length > 2 ? rest.slice(2) : rest;
  const resource = noNs[0] ?? path;
  const sub = noNs.length > 2 ? `/${noNs[2]}` : "";
  const watch = /(^|&)watch=(1|true)/.test(query) ? " (watch)" : "";
  return `${method} ${resource}${sub}${watch}`;
}

export async function startApiCounter(o: ApiCounterOptions): Promise<ApiCounter> {
  const up = new URL(o.upstream);
  const agent = new Agent({
    keepAlive: true,
    maxSockets: 64,
    ca: o.ca,
    cert: o.clientCert,
    key: o.clientKey,
  });
  const counts: Record<string, number> = {};
  let total = 0;
  const server = createServer(
    { cert: o.serverCert, key: o.serverKey },
    (req: IncomingMessage, res: ServerResponse) => {
      total++;
      const kind = requestKind(req.method ?? "GET", req.url ?? "/");
      counts[kind] = (counts[kind] ?? 0) + 1;
      const headers = { ...req.headers, host: up.host };
      const fwd = request(
        {
          host: up.hostname,
          port: up.port || 443,
          method: req.method,
          path: req.url,
          headers,
          agent,
        },
        upRes => {
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          upRes.pipe(res);
        },
      );
      fwd.on("error", e => {
        if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
        res.end(`api counter: ${e.message}`);
      });
      res.on("close", () => fwd.destroy());
      req.pipe(fwd);
    },
  );
  await new Promise<void>(r => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    counts: () => ({ ...counts }),
    total: () => total,
    close: async () => {
      server.closeAllConnections();
      await new Promise(r => server.close(r));
      agent.destroy();
    },
  };
}
