/**
 * When to talk to the CA: renew at two thirds of a certificate's lifetime, back off after a
 * failure (exponential, never sooner than the CA's Retry-After). Pure.
 */
import { StoredState } from "./issuers";

export interface BackoffSettings {
  readonly baseMs: number;
  readonly maxMs: number;
}

export const DEFAULT_ACME_BACKOFF: BackoffSettings = { baseMs: 30_000, maxMs: 6 * 3600_000 };

/** Two thirds into [notBefore, notAfter]. */
export const renewalTime = (notBefore: Date, notAfter: Date): Date =>
  new Date(notBefore.getTime() + ((notAfter.getTime() - notBefore.getTime()) * 2) / 3);

/** The earliest next attempt after the `failures`-th failure in a row (failures ≥ 1). */
export function retryTime(
  now: Date,
  failures: number,
  retryAfterSeconds: number | undefined,
  b: BackoffSettings = DEFAULT_ACME_BACKOFF,
): Date {
  const exp = Math.min(b.maxMs, b.baseMs * 2 ** Math.max(0, Math.min(30, failures - 1)));
  const ca = (retryAfterSeconds ?? 0) * 1000;
  return new Date(now.getTime() + Math.max(exp, ca));
}

export type Decision =
  | { readonly kind: "order"; readonly why: "missing" | "renewal" | "resume" }
  | { readonly kind: "wait"; readonly until?: Date };

/** Whether a name needs the CA now, or when to look again. */
export function decide(state: StoredState, now: Date): Decision {
  const blockedUntil = state.retryAt && state.retryAt > now ? state.retryAt : undefined;
  const due = !state.hasCertificate || (state.renewAt !== undefined && state.renewAt <= now);
  if (!due) return { kind: "wait", ...(state.renewAt && { until: state.renewAt }) };
  if (blockedUntil) return { kind: "wait", until: blockedUntil };
  if (state.order && state.state === "Pending") return { kind: "order", why: "resume" };
  return { kind: "order", why: state.hasCertificate ? "renewal" : "missing" };
}
