/**
 * What an admin request can come back with besides success: the `AdminError` kinds, the size
 * caps on a proxy's answers and the capped body read (docs/architecture.md §4), and how
 * transport failures and Caddy's error bodies are told apart. No I/O of its own.
 */

export type AdminError =
  /** No HTTP exchange happened: refused, reset, TLS handshake or certificate failure. The proxy's state is unknown. */
  | { readonly kind: "connect"; readonly message: string }
  | { readonly kind: "timeout"; readonly message: string }
  /** Caddy answered with an error status; `message` is Caddy's own explanation, verbatim (cut at the error cap). */
  | { readonly kind: "rejected"; readonly status: number; readonly message: string }
  /** The answer was longer than the cap for this request: the controller stopped reading it and dropped the connection. */
  | {
      readonly kind: "oversized";
      readonly status: number;
      readonly limitBytes: number;
      readonly message: string;
    };

/**
 * The most the controller reads of a proxy's answer, by request (docs/architecture.md §4: every response read
 * from a proxy has a size cap). Past the cap the body is not read any further and the connection
 * is dropped: a proxy (or whatever answers on its address) cannot make the controller buffer
 * more than this.
 */
export interface ResponseLimits {
  /** A successful /load (Caddy answers with an empty body). */
  readonly load: number;
  /** GET /config/…: the running config (ours: a few MiB at thousands of routes). */
  readonly config: number;
  /** GET /metrics: series are bounded by the configuration (caddy/seal.ts), a few MiB. */
  readonly metrics: number;
  /** GET /id/…: a short JSON string. */
  readonly id: number;
  /** The body of any error status: Caddy's one-line explanation; longer ones are cut. */
  readonly error: number;
}

export const RESPONSE_LIMITS: ResponseLimits = {
  load: 64 * 1024,
  config: 64 * 1024 * 1024,
  metrics: 8 * 1024 * 1024,
  id: 64 * 1024,
  error: 16 * 1024,
};

export const KiB = (n: number): string => `${Math.round((n / 1024) * 10) / 10} KiB`;

/**
 * Reads at most `limit` bytes of `body`; on the first byte past it, destroys the stream (the
 * connection goes with it) and says so. A Content-Length above the limit stops before reading.
 */
export async function readCapped(
  body: AsyncIterable<Uint8Array> & { destroy(error?: Error): unknown },
  limit: number,
  contentLength?: number,
): Promise<{ readonly text: string; readonly truncated: boolean }> {
  if (contentLength !== undefined && contentLength > limit) {
    body.destroy();
    return { text: "", truncated: true };
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const room = limit - size;
    if (chunk.byteLength > room) {
      chunks.push(Buffer.from(chunk.subarray(0, room)));
      body.destroy();
      return { text: Buffer.concat(chunks).toString("utf8"), truncated: true };
    }
    chunks.push(Buffer.from(chunk));
    size += chunk.byteLength;
  }
  return { text: Buffer.concat(chunks).toString("utf8"), truncated: false };
}

export const describeAdminError = (e: AdminError): string =>
  e.kind === "rejected"
    ? `proxy rejected the request (HTTP ${e.status}): ${e.message}`
    : e.kind === "oversized"
      ? `proxy answer too large (HTTP ${e.status}): ${e.message}`
      : `${e.kind}: ${e.message}`;

/** Ours (`connectTimeout`), the system's, and those of a test dispatcher (undici). */
const TIMEOUT_CODES = new Set([
  "ETIMEDOUT",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

interface ErrorLike {
  readonly name?: unknown;
  readonly code?: unknown;
  readonly message?: unknown;
  readonly cause?: unknown;
}

/** Duck-typed: errors may come from another realm (DOMException from AbortSignal.timeout, jest's sandbox). */
const errorLike = (e: unknown): ErrorLike | undefined =>
  e !== null && typeof e === "object" ? (e as ErrorLike) : undefined;
const text = (v: unknown): string | undefined =>
  typeof v === "string" && v !== "" ? v : undefined;

/** A transport failure as an AdminError; quotes only the error's code and message (never request bodies or keys). */
export function transportError(e: unknown): AdminError {
  const error = errorLike(e);
  if (error?.name === "TimeoutError" || error?.name === "AbortError")
    return { kind: "timeout", message: "request timed out" };
  const cause = errorLike(error?.cause);
  const code = text(error?.code) ?? text(cause?.code);
  const causeMessage =
    text(cause?.message) !== text(error?.message) ? text(cause?.message) : undefined;
  const message = [code, text(error?.message), causeMessage].filter(Boolean).join(": ");
  if (code !== undefined && TIMEOUT_CODES.has(code)) return { kind: "timeout", message };
  return { kind: "connect", message: message || "connection failed" };
}

/**
 * Errors of a request on a kept connection that the proxy closed before it read the request
 * (its idle timeout, a config load that replaced the management server): sent again once on a
 * new connection. A proxy that is down refuses the new connection, so it is never retried.
 * (`UND_ERR_SOCKET`: the same failure as a test dispatcher reports it.)
 */
const STALE_SOCKET_CODES = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET"]);
export const staleSocket = (e: unknown): boolean => {
  const error = errorLike(e);
  const code = text(error?.code) ?? text(errorLike(error?.cause)?.code);
  return code !== undefined && STALE_SOCKET_CODES.has(code);
};

/** Caddy's error bodies are `{"error": "..."}`; keep that text verbatim, or the raw body if it is something else. */
export function rejectionMessage(body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    if (
      parsed !== null &&
      typeof parsed === "object" &&
      typeof (parsed as { error?: unknown }).error === "string"
    )
      return (parsed as { error: string }).error;
  } catch {
    // not JSON: fall through to the raw text
  }
  return body.trim() || "(empty response body)";
}
