/**
 * The samples of a Prometheus text exposition (what Caddy's admin `/metrics` returns): one
 * `{ name, labels, value }` per sample line; comments, blank lines and lines that do not parse
 * are skipped (never a crash on a proxy's odd output).
 */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;

function parseLabels(
  text: string,
  at: number,
): { labels: Record<string, string>; end: number } | undefined {
  const labels: Record<string, string> = {};
  let i = at;
  for (;;) {
    while (text[i] === " " || text[i] === ",") i++;
    if (text[i] === "}") return { labels, end: i + 1 };
    const name = LABEL_NAME.exec(text.slice(i))?.[0];
    if (!name) return undefined;
    i += name.length;
    while (text[i] === " ") i++;
    if (text[i] !== "=" || text[i + 1] !== '"') return undefined;
    i += 2;
    let value = "";
    for (;;) {
      const c = text[i];
      if (c === undefined) return undefined;
      if (c === '"') break;
      if (c === "\\") {
        const n = text[i + 1];
        value += n === "n" ? "\n" : (n ?? "");
        i += 2;
        continue;
      }
      value += c;
      i++;
    }
    labels[name] = value;
    i++;
  }
}

export function parsePrometheusText(text: string, wanted?: (name: string) => boolean): Sample[] {
  const out: Sample[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const name = NAME.exec(line)?.[0];
    if (!name || (wanted && !wanted(name))) continue;
    let labels: Record<string, string> = {};
    let rest = line.slice(name.length);
    if (rest.startsWith("{")) {
      const parsed = parseLabels(line, name.length + 1);
      if (!parsed) continue;
      labels = parsed.labels;
      rest = line.slice(parsed.end);
    }
    const valueText = rest.trim().split(/\s+/)[0];
    if (valueText === undefined || valueText === "") continue;
    const value =
      valueText === "+Inf" ? Infinity : valueText === "-Inf" ? -Infinity : Number(valueText);
    if (Number.isNaN(value) && valueText !== "NaN") continue;
    out.push({ name, labels, value });
  }
  return out;
}
