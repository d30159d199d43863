/**
 * KengineParameters `spec.limits`: what one request may cost the proxy (docs/operations.md §11, "Cost").
 * Class level only, like allowGatewayOverrides: the platform team sets them in the parameters a
 * GatewayClass references; a Gateway's own parameters that set them are refused at admission and
 * make the Gateway Accepted=False/InvalidParameters (validation/overrides.ts calls
 * gatewayLimitsProblems).
 *
 * - externalAuthMaxBodyBytes: the most of a request body an ExternalAuth filter may forward
 *   (HTTPExternalAuthFilter forwardBody.maxSize); a larger maxSize is refused at admission and
 *   makes its listener Accepted=False (translate/listenerfilters.ts).
 * - requestHeaderTimeout: how long a client may take to send a request's headers (Caddy
 *   `read_header_timeout`): the slowloris bound.
 * - requestBodyTimeout: how long reading a request body may stall without a byte arriving
 *   (Caddy `read_idle_timeout`, reset on every read, like nginx's client_body_timeout): slow
 *   but moving uploads and client streams are never cut. Only the Bundled proxy has it
 *   (capabilities `readIdleTimeout`); Caddy's `read_timeout`, a single deadline on the whole
 *   request read, would cut every upload and client stream longer than the limit, so it is not
 *   used in its place (docs/operations.md, "Request limits").
 * - idleTimeout: how long a kept-alive connection may wait for its next request (`idle_timeout`).
 */
import { FieldProblem, display, truncate } from "./regex";

/** The hard ceiling of externalAuthMaxBodyBytes: 16 MiB (the proxy's own ceiling too). */
export const MAX_EXTERNAL_AUTH_BODY_BYTES = 16 * 1024 * 1024;

export interface Limits {
  /** Bytes; at most MAX_EXTERNAL_AUTH_BODY_BYTES. */
  readonly externalAuthMaxBodyBytes: number;
  /** Go durations, as Caddy reads them. */
  readonly requestHeaderTimeout: string;
  readonly requestBodyTimeout: string;
  readonly idleTimeout: string;
}

export const DEFAULT_LIMITS: Limits = {
  externalAuthMaxBodyBytes: 65536,
  requestHeaderTimeout: "10s",
  requestBodyTimeout: "60s",
  idleTimeout: "5m",
};

export const LIMITS_FIELD = "limits";

const TIMEOUTS = ["requestHeaderTimeout", "requestBodyTimeout", "idleTimeout"] as const;
const FIELDS: readonly string[] = ["externalAuthMaxBodyBytes", ...TIMEOUTS];

/** A Go duration without sign (time.ParseDuration's grammar); the CRD's pattern too. */
export const DURATION_PATTERN = "^([0-9]+(\\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$";
const DURATION = new RegExp(DURATION_PATTERN);
const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};
/** Timeouts range from one second to one day: shorter cuts ordinary clients, longer is none. */
export const TIMEOUT_RANGE_MS = { min: 1000, max: 86_400_000 } as const;

/** Milliseconds of a Go duration string, or undefined when it is not one. */
export function durationMs(v: unknown): number | undefined {
  if (typeof v !== "string" || v.length > 32 || !DURATION.test(v)) return undefined;
  let ms = 0;
  for (const m of v.matchAll(/([0-9]+(?:\.[0-9]*)?)(ns|us|µs|ms|s|m|h)/g))
    ms += Number(m[1]) * UNIT_MS[m[2]!]!;
  return ms;
}

const isObject = (v: unknown): v is Readonly<Record<string, unknown>> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Problems of `spec.limits` (any KengineParameters; class level only is checked apart). */
export function limitsProblems(limits: unknown): FieldProblem[] {
  const at = `spec.${LIMITS_FIELD}`;
  if (limits === undefined) return [];
  if (!isObject(limits))
    return [{ path: at, value: truncate(display(limits)), message: "must be an object" }];
  const out: FieldProblem[] = [];
  for (const k of Object.keys(limits).slice(0, FIELDS.length + 1))
    if (!FIELDS.includes(k))
      out.push({
        path: `${at}.${truncate(k, 48)}`,
        value: "",
        message: `is not a limit (accepted: ${FIELDS.join(", ")})`,
      });
  const bytes = limits.externalAuthMaxBodyBytes;
  if (
    bytes !== undefined &&
    (typeof bytes !== "number" ||
      !Number.isInteger(bytes) ||
      bytes < 0 ||
      bytes > MAX_EXTERNAL_AUTH_BODY_BYTES)
  )
    out.push({
      path: `${at}.externalAuthMaxBodyBytes`,
      value: truncate(display(bytes)),
      message: `must be a whole number of bytes from 0 to ${MAX_EXTERNAL_AUTH_BODY_BYTES} (16 MiB)`,
    });
  for (const k of TIMEOUTS) {
    const v = limits[k];
    if (v === undefined) continue;
    const ms = durationMs(v);
    if (ms === undefined || ms < TIMEOUT_RANGE_MS.min || ms > TIMEOUT_RANGE_MS.max)
      out.push({
        path: `${at}.${k}`,
        value: truncate(display(v)),
        message:
          ms === undefined
            ? 'is not a duration: a number with a unit (ms, s, m, h), e.g. "10s" or "1m30s"'
            : "must be from 1s to 24h",
      });
  }
  return out;
}

/** The refusal of `spec.limits` in a Gateway's own parameters (empty when it sets none). */
export function gatewayLimitsProblems(gatewaySpec: { readonly limits?: unknown } | undefined) {
  return gatewaySpec?.limits === undefined
    ? []
    : [
        {
          path: `spec.${LIMITS_FIELD}`,
          value: truncate(display(gatewaySpec.limits)),
          message:
            "has effect only in the parameters a GatewayClass references; a Gateway's own parameters cannot change the class's limits",
        },
      ];
}

/** The limits a class's parameters set, each field defaulted (malformed fields: the default). */
export function resolveLimits(limits: unknown): Limits {
  if (!isObject(limits)) return DEFAULT_LIMITS;
  const ok = limitsProblems(limits);
  const valid = (k: string) => !ok.some(p => p.path === `spec.${LIMITS_FIELD}.${k}`);
  const pick = <K extends keyof Limits>(k: K): Limits[K] =>
    limits[k] !== undefined && valid(k) ? (limits[k] as Limits[K]) : DEFAULT_LIMITS[k];
  return {
    externalAuthMaxBodyBytes: pick("externalAuthMaxBodyBytes"),
    requestHeaderTimeout: pick("requestHeaderTimeout"),
    requestBodyTimeout: pick("requestBodyTimeout"),
    idleTimeout: pick("idleTimeout"),
  };
}
