/**
 * The webhook server's idle keep-alive must outlast the API server's.
 *
 * kube-apiserver calls admission webhooks over HTTP/1.1 and keeps idle connections for 90 s
 * (Go's IdleConnTimeout, set by k8s.io/apimachinery's SetOldTransportDefaults). Node's HTTPS
 * server, which Pepr creates for its webhooks with the defaults, closes a connection after 5 s
 * idle. When the API server reuses a pooled connection just as Node closes it, the admission
 * request fails with "connection reset by peer" and, the webhook failing closed, the user's
 * `kubectl apply` is refused with an internal error (seen when 1,000 routes were created in a
 * burst). Go does not retry a POST. With the server keeping idle connections longer than the
 * client, the client always closes first and the race cannot happen.
 *
 * Pepr 1.1.4 does not expose its server, so the module wraps `https.createServer` before Pepr
 * creates it (pepr.ts calls this first).
 */
import https from "node:https";

/** Longer than the API server's 90 s idle timeout. */
export const WEBHOOK_KEEP_ALIVE_MS = 120_000;

type Timeouts = { keepAliveTimeout: number; headersTimeout: number };

/** Sets the server's idle keep-alive (and the header timeout Node checks against it). */
export function outlastClientIdle<T extends Timeouts>(server: T, ms = WEBHOOK_KEEP_ALIVE_MS): T {
  server.keepAliveTimeout = ms;
  // A request's headers must be allowed to arrive for as long as the connection may stay idle.
  server.headersTimeout = Math.max(server.headersTimeout, ms + 1_000);
  return server;
}

let installed = false;

/** Every HTTPS server created from now on keeps idle connections WEBHOOK_KEEP_ALIVE_MS. */
export function keepWebhookConnectionsAlive(): void {
  if (installed) return;
  installed = true;
  const create = https.createServer;
  https.createServer = ((...args: Parameters<typeof https.createServer>) =>
    outlastClientIdle(create(...args))) as typeof https.createServer;
}
