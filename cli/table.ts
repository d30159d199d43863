/**
 * Output like `kubectl get`: upper-case headers, columns padded with three spaces, `<none>`
 * for an empty cell; colour (red for what is wrong, green for what is fine) only when the
 * output is a terminal and NO_COLOR is not set.
 */

export type Tone = "ok" | "bad" | "warn" | undefined;

/** A cell: its text and, optionally, how it should look on a terminal. */
export interface Cell {
  readonly text: string;
  readonly tone?: Tone;
}
export type CellInput = string | number | Cell | undefined;

const CODES: Record<Exclude<Tone, undefined>, string> = {
  ok: "\u001b[32m",
  bad: "\u001b[31m",
  warn: "\u001b[33m",
};
const RESET = "\u001b[0m";

export const cell = (text: string, tone?: Tone): Cell => ({ text, tone });

const asCell = (c: CellInput): Cell =>
  c === undefined || c === ""
    ? { text: "<none>" }
    : typeof c === "object"
      ? c
      : { text: String(c) };

/** Whether to colour: a terminal, and the user did not ask for none (no-color.org). */
export const useColour = (stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean =>
  stream.isTTY === true && env["NO_COLOR"] === undefined && env["TERM"] !== "dumb";

export const paint = (text: string, tone: Tone, colour: boolean): string =>
  colour && tone ? `${CODES[tone]}${text}${RESET}` : text;

/** The table as lines, without a trailing newline. */
export function formatTable(
  headers: readonly string[],
  rows: readonly (readonly CellInput[])[],
  colour = false,
): string {
  const cells = rows.map(r => headers.map((_, i) => asCell(r[i])));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map(r => r[i]!.text.length)));
  const line = (texts: readonly Cell[]): string =>
    texts
      .map((c, i) => {
        const padded = i === texts.length - 1 ? c.text : c.text.padEnd(widths[i]!);
        return paint(padded, c.tone, colour);
      })
      .join("   ")
      .trimEnd();
  return [line(headers.map(h => ({ text: h.toUpperCase() }))), ...cells.map(line)].join("\n");
}

/** `kubectl get`'s AGE: 5s, 3m, 2h, 4d. */
export function age(from: string | undefined, now: Date): string {
  if (!from) return "<unknown>";
  const s = Math.max(0, Math.floor((now.getTime() - Date.parse(from)) / 1000));
  if (Number.isNaN(s)) return "<unknown>";
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}
