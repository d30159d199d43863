/**
 * The start-up lists: every kind listed page by page (`limit` + `continue`; a 410 Expired
 * continue token restarts that kind's list), each request retried with capped exponential
 * back-off and jitter while the failure can pass (connection refused/reset, timeouts, 429,
 * 5xx, and 401/403 for a few tries: RBAC and tokens can be late at start-up). A kind whose
 * resource the API server does not serve (404: its CRD is not installed) is reported as
 * missing, not as an error. Everything else is fatal: the caller exits and Kubernetes restarts
 * the process.
 *
 * Pure orchestration over an injected request function, sleep and random source.
 */
import { backoffDelay, BackoffPolicy } from "../proxies/backoff";

/** What a request failure means for the start-up. */
export type Failure = "retry" | "denied" | "missing" | "fatal";

/** The HTTP status of a failed request, if it has one (KubeError carries `status`). */
const statusOf = (e: unknown): number | undefined => {
  const s = (e as { status?: unknown } | null)?.status;
  return typeof s === "number" ? s : undefined;
};

const RETRYABLE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ECONNABORTED",
  "UND_ERR_SOCKET",
]);

/** Classifies a failed request (one rule for every start-up request). */
export function classify(e: unknown): Failure {
  const status = statusOf(e);
  if (status !== undefined) {
    if (status === 404) return "missing";
    if (status === 401 || status === 403) return "denied";
    if (status === 429 || status >= 500 || status === 408) return "retry";
    return "fatal";
  }
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === "string" && RETRYABLE_CODES.has(code)) return "retry";
  // kube/client.ts destroys a request that took too long with "<METHOD> <path>: timed out"
  if (e instanceof Error && /timed out|socket hang up/i.test(e.message)) return "retry";
  return "fatal";
}

export interface RetryPolicy {
  readonly backoff: BackoffPolicy;
  /** Attempts of one request refused with 401/403 before giving up (RBAC can be late). */
  readonly deniedAttempts: number;
  /** Attempts of one request failing retryably before giving up; Infinity: never give up. */
  readonly retryAttempts: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  backoff: { initialMs: 500, maxMs: 30_000, factor: 2, jitter: 0.5 },
  deniedAttempts: 5,
  retryAttempts: Infinity,
};

export interface RetryDeps {
  readonly sleep: (ms: number) => Promise<void>;
  readonly random: () => number;
  /** Called before each retry (logs, metrics). */
  readonly onRetry?: (what: string, error: unknown, attempt: number, delayMs: number) => void;
  /** Whether to stop retrying (the controller is stopping). */
  readonly stopped?: () => boolean;
}

export type Attempted<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly failure: Exclude<Failure, "retry">; readonly error: unknown };

/**
 * Runs `fn` until it succeeds or fails for good. A 404 comes back as `missing` at once (the
 * caller decides whether that is fatal); 401/403 after `deniedAttempts`; retryable failures
 * after `retryAttempts`, as `fatal`.
 */
export async function retrying<T>(
  what: string,
  fn: () => Promise<T>,
  policy: RetryPolicy,
  deps: RetryDeps,
): Promise<Attempted<T>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return { ok: true, value: await fn() };
    } catch (error) {
      const failure = classify(error);
      if (failure === "missing" || failure === "fatal") return { ok: false, failure, error };
      const limit = failure === "denied" ? policy.deniedAttempts : policy.retryAttempts;
      if (attempt >= limit || deps.stopped?.())
        return { ok: false, failure: failure === "denied" ? "denied" : "fatal", error };
      const delayMs = backoffDelay(policy.backoff, attempt, deps.random);
      deps.onRetry?.(what, error, attempt, delayMs);
      await deps.sleep(delayMs);
    }
  }
}

interface ListPage<T> {
  readonly items?: readonly T[];
  readonly metadata?: { readonly continue?: string; readonly resourceVersion?: string };
}

export type Listed<T> =
  | { readonly found: true; readonly items: readonly T[]; readonly resourceVersion?: string }
  | { readonly found: false };

/** `path` with `limit` and `continue` query parameters. */
export function pagePath(path: string, limit: number, continueToken: string | undefined): string {
  const q = new URLSearchParams({ limit: String(limit) });
  if (continueToken) q.set("continue", continueToken);
  return `${path}${path.includes("?") ? "&" : "?"}${q.toString()}`;
}

/**
 * Lists `path` completely, `pageSize` items per request. A 410 Gone (the continue token
 * expired: the pages would no longer be one consistent list) restarts the list from its first
 * page, at most `maxRestarts` times (then fatal). Returns `found: false` when the resource is
 * not served (404 on the first page).
 */
export async function listAll<T>(
  get: (path: string) => Promise<ListPage<T>>,
  path: string,
  policy: RetryPolicy,
  deps: RetryDeps,
  pageSize = 500,
  maxRestarts = 5,
): Promise<Attempted<Listed<T>>> {
  for (let restarts = 0; ; restarts++) {
    const items: T[] = [];
    let token: string | undefined;
    let resourceVersion: string | undefined;
    let expired = false;
    do {
      const page = await retrying(path, () => get(pagePath(path, pageSize, token)), policy, deps);
      if (!page.ok) {
        if (page.failure === "missing" && token === undefined)
          return { ok: true, value: { found: false } };
        if (token !== undefined && statusOf(page.error) === 410) {
          expired = true;
          break;
        }
        return page;
      }
      items.push(...(page.value.items ?? []));
      resourceVersion = page.value.metadata?.resourceVersion;
      token = page.value.metadata?.continue || undefined;
    } while (token !== undefined);
    if (!expired) return { ok: true, value: { found: true, items, resourceVersion } };
    if (restarts >= maxRestarts)
      return {
        ok: false,
        failure: "fatal",
        error: new Error(`${path}: the list expired (410) ${restarts + 1} times in a row`),
      };
  }
}

/** Start-up failed for good: the process should exit (Kubernetes restarts it). */
export class StartError extends Error {
  constructor(
    message: string,
    readonly failure: string,
    readonly error: unknown,
  ) {
    super(message);
    this.name = "StartError";
  }

  /** The StartError of a request `what` that failed for good. */
  static of(what: string, r: { failure: string; error: unknown }): StartError {
    const why =
      r.failure === "denied"
        ? "not allowed (RBAC or credentials)"
        : r.failure === "missing"
          ? "not found"
          : "cannot continue";
    const detail = r.error instanceof Error ? r.error.message : String(r.error);
    return new StartError(`${what}: ${why}: ${detail}`, r.failure, r.error);
  }
}
