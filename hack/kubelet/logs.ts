/**
 * Container log files and the rendering GET /containerLogs needs (pure parts tested).
 * One file per container attempt: <state>/pods/<uid>/logs/<container>/<restartCount>.log, one
 * line per output line: "<RFC3339Nano> <stdout|stderr> <text>".
 */
export interface LogLine {
  readonly time: string;
  readonly stream: "stdout" | "stderr";
  readonly text: string;
}

/** RFC 3339 with nanoseconds, like the CRI log format. */
export function nanoTime(d: Date = new Date()): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, ".$1000000Z");
}

export const formatLogLine = (l: LogLine): string => `${l.time} ${l.stream} ${l.text}\n`;

export function parseLogLine(line: string): LogLine | undefined {
  const a = line.indexOf(" ");
  const b = line.indexOf(" ", a + 1);
  if (a < 0 || b < 0) return undefined;
  const stream = line.slice(a + 1, b);
  if (stream !== "stdout" && stream !== "stderr") return undefined;
  return { time: line.slice(0, a), stream, text: line.slice(b + 1) };
}

export interface LogQuery {
  readonly tailLines?: number;
  readonly timestamps: boolean;
  readonly sinceTime?: Date;
  readonly limitBytes?: number;
}

/** Parses the query string of a /containerLogs request (pure). */
export function parseLogQuery(q: URLSearchParams, now: Date = new Date()) {
  const num = (k: string): number | undefined => {
    const v = q.get(k);
    if (v === null || v === "") return undefined;
    const n = Number(v);
    return Number.isFinite(n) ? n : undefined;
  };
  const bool = (k: string): boolean => q.get(k) === "true" || q.get(k) === "1";
  const sinceSeconds = num("sinceSeconds");
  const sinceTimeRaw = q.get("sinceTime");
  const sinceTime =
    sinceSeconds !== undefined
      ? new Date(now.getTime() - sinceSeconds * 1000)
      : sinceTimeRaw
        ? new Date(sinceTimeRaw)
        : undefined;
  return {
    follow: bool("follow"),
    previous: bool("previous"),
    query: {
      tailLines: num("tailLines"),
      timestamps: bool("timestamps"),
      sinceTime,
      limitBytes: num("limitBytes"),
    } satisfies LogQuery,
  };
}

/** Renders stored log lines the way kubectl logs shows them (pure). */
export function renderLogs(content: string, q: LogQuery): string {
  let lines = content
    .split("\n")
    .filter(l => l.length > 0)
    .map(parseLogLine)
    .filter((l): l is LogLine => l !== undefined);
  if (q.sinceTime) {
    const since = q.sinceTime.getTime();
    lines = lines.filter(l => new Date(l.time).getTime() >= since);
  }
  if (q.tailLines !== undefined && q.tailLines >= 0) {
    lines = q.tailLines === 0 ? [] : lines.slice(-q.tailLines);
  }
  let out = lines.map(l => renderLine(l, q.timestamps)).join("");
  if (q.limitBytes !== undefined && Buffer.byteLength(out) > q.limitBytes) {
    out = Buffer.from(out).subarray(0, q.limitBytes).toString("utf8");
  }
  return out;
}

export const renderLine = (l: LogLine, timestamps: boolean): string =>
  timestamps ? `${l.time} ${l.text}\n` : `${l.text}\n`;

/** Splits a chunk stream into complete lines, keeping the partial tail (pure, stateful). */
export class LineSplitter {
  private rest = "";
  push(chunk: string): string[] {
    const parts = (this.rest + chunk).split("\n");
    this.rest = parts.pop() ?? "";
    return parts.map(p => (p.endsWith("\r") ? p.slice(0, -1) : p));
  }
  flush(): string[] {
    const r = this.rest;
    this.rest = "";
    return r ? [r] : [];
  }
}
