/**
 * Election settings from the environment (the watcher Deployment's env, or the shell running
 * `pepr dev`). Durations are Go-style ("15s", "500ms", "1m") or plain seconds ("15"). Bad values
 * are reported by name; the caller refuses to start with them.
 */
import { DEFAULT_ELECTION, ElectionConfig } from "./types";

export const ELECTION_ENV = {
  name: "KENGINE_LEASE_NAME",
  leaseDurationMs: "KENGINE_LEASE_DURATION",
  renewDeadlineMs: "KENGINE_RENEW_DEADLINE",
  retryPeriodMs: "KENGINE_RETRY_PERIOD",
} as const;

export const DEFAULT_LEASE_NAME = "kengine-gateway-leader";

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000 };

/** "15s" → 15000, "500ms" → 500, "1m" → 60000, "15" → 15000; undefined if not a duration. */
export function parseDuration(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(text);
  if (!m) return undefined;
  const ms = Number(m[1]) * UNIT_MS[m[2] ?? "s"];
  return Number.isFinite(ms) && ms > 0 ? Math.round(ms) : undefined;
}

export type ElectionSettings = Pick<
  ElectionConfig,
  "name" | "leaseDurationMs" | "renewDeadlineMs" | "retryPeriodMs"
>;

export type ElectionEnvResult =
  | { readonly ok: true; readonly value: ElectionSettings }
  | { readonly ok: false; readonly error: string };

export function electionFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): ElectionEnvResult {
  const problems: string[] = [];
  const value: { -readonly [K in keyof ElectionSettings]: ElectionSettings[K] } = {
    name: DEFAULT_LEASE_NAME,
    ...DEFAULT_ELECTION,
  };
  const name = env[ELECTION_ENV.name];
  if (name !== undefined && name !== "") {
    if (!/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(name))
      problems.push(`${ELECTION_ENV.name}=${JSON.stringify(name)}: not a valid object name`);
    else value.name = name;
  }
  for (const key of ["leaseDurationMs", "renewDeadlineMs", "retryPeriodMs"] as const) {
    const raw = env[ELECTION_ENV[key]];
    if (raw === undefined || raw === "") continue;
    const ms = parseDuration(raw);
    if (ms === undefined)
      problems.push(
        `${ELECTION_ENV[key]}=${JSON.stringify(raw)}: not a duration (e.g. "15s", "500ms", "15")`,
      );
    else value[key] = ms;
  }
  if (!problems.length) {
    if (!(value.renewDeadlineMs > value.retryPeriodMs))
      problems.push(
        `${ELECTION_ENV.renewDeadlineMs} (${value.renewDeadlineMs} ms) must be longer than ${ELECTION_ENV.retryPeriodMs} (${value.retryPeriodMs} ms)`,
      );
    if (!(value.leaseDurationMs > value.renewDeadlineMs))
      problems.push(
        `${ELECTION_ENV.leaseDurationMs} (${value.leaseDurationMs} ms) must be longer than ${ELECTION_ENV.renewDeadlineMs} (${value.renewDeadlineMs} ms)`,
      );
  }
  return problems.length
    ? { ok: false, error: `leader election settings: ${problems.join("; ")}` }
    : { ok: true, value };
}
