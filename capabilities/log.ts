/**
 * The module's structured logger: winston, writing JSON lines on stdout shaped as Pepr's own
 * (pino's): `level` as pino's number, `time` (epoch milliseconds, or ISO 8601 when
 * PINO_TIME_STAMP=iso, as Pepr does), `pid`, `hostname`, `msg`, then the fields of the entry
 * (the object and Gateway it is about). One format for operators to parse in the pod's log.
 * The level comes from LOG_LEVEL (Pepr's too; default info).
 */
import { hostname } from "node:os";
import type { Writable } from "node:stream";
import winston from "winston";

/** Pino's level numbers by winston (npm) level. */
const PINO_LEVELS: Readonly<Record<string, number>> = {
  error: 50,
  warn: 40,
  info: 30,
  http: 30,
  verbose: 20,
  debug: 20,
  silly: 10,
};
/** LOG_LEVEL names pino knows and winston does not. */
const WINSTON_LEVEL: Readonly<Record<string, string>> = { fatal: "error", trace: "silly" };

export interface LogOptions {
  /** LOG_LEVEL: a pino or winston level name. */
  readonly level?: string;
  /** PINO_TIME_STAMP=iso: ISO 8601 times instead of epoch milliseconds. */
  readonly isoTime?: boolean;
  /** Tests: where the lines go instead of stdout. */
  readonly stream?: Writable;
}

/** The fields winston keeps for itself (the level and message are renamed, the rest dropped). */
const OWN = new Set(["level", "message", "timestamp"]);

export function createLog(options: LogOptions = {}): winston.Logger {
  const host = hostname();
  const pinoShape = winston.format(info => {
    const fields = Object.fromEntries(Object.entries(info).filter(([k]) => !OWN.has(k)));
    const line = {
      level: PINO_LEVELS[info.level] ?? 30,
      time: options.isoTime ? new Date().toISOString() : Date.now(),
      pid: process.pid,
      hostname: host,
      msg: info.message,
      ...fields,
    };
    // winston routes by its own (symbol) level; the JSON below has pino's
    return Object.assign(line, {
      [Symbol.for("level")]: info[Symbol.for("level")],
    }) as unknown as winston.Logform.TransformableInfo;
  });
  const requested = options.level ?? "info";
  return winston.createLogger({
    level: WINSTON_LEVEL[requested] ?? requested,
    format: winston.format.combine(pinoShape(), winston.format.json({ deterministic: false })),
    defaultMeta: { component: "kengine-gateway" },
    transports: [
      options.stream
        ? new winston.transports.Stream({ stream: options.stream })
        : new winston.transports.Console(),
    ],
  });
}

export const log = createLog({
  level: process.env.LOG_LEVEL,
  isoTime: process.env.PINO_TIME_STAMP === "iso",
});
