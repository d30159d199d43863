/**
 * The JSON text of route lists: Go's encoding (what the proxy hashes) and plain
 * `JSON.stringify`, with the text of a route that several lists share made once.
 */

/** A JSON object as plain data. */
export type Obj = { readonly [k: string]: unknown };
export const asObject = (v: unknown): Obj | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : undefined;

/**
 * JSON as Go's encoding/json writes a value decoded into `any`: object keys sorted, `<`, `>`,
 * `&`, U+2028 and U+2029 escaped. Caddy decodes a `/load` body that way and encodes it again
 * before provisioning, so the proxy hashes a config's host lists in this form; deltas are sent
 * in it too, so that both hash alike.
 */
export function goJSON(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(goJSON).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o)
      .filter(k => o[k] !== undefined)
      .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    return `{${keys.map(k => `${goString(k)}:${goJSON(o[k])}`).join(",")}}`;
  }
  return typeof v === "string" ? goString(v) : JSON.stringify(v);
}

const GO_ESCAPES: Readonly<Record<string, string>> = {
  "<": "\\u003c",
  ">": "\\u003e",
  "&": "\\u0026",
  "\u2028": "\\u2028",
  "\u2029": "\\u2029",
};
const goString = (s: string): string =>
  JSON.stringify(s).replace(/[<>&\u2028\u2029]/g, c => GO_ESCAPES[c]);

/**
 * The JSON of a list's routes in `form`, joined: the text of a route several lists hold (a
 * merged host route: `match` names several hosts) is made once per route object.
 */
export function listJSON(
  list: object,
  form: (v: unknown) => string,
  kept: WeakMap<object, string>,
): string {
  if (!Array.isArray(list)) return form(list);
  const parts: string[] = [];
  for (const r of list as unknown[]) {
    if (!shared(r)) {
      parts.push(form(r));
      continue;
    }
    let text = kept.get(r);
    if (text === undefined) kept.set(r, (text = form(r)));
    parts.push(text);
  }
  return `[${parts.join(",")}]`;
}

/** A route that names several hosts (held by the list of each). */
const shared = (r: unknown): r is object => {
  const match = asObject(r)?.match;
  const host = Array.isArray(match) ? asObject(match[0])?.host : undefined;
  return Array.isArray(host) && host.length > 1;
};

export const plainJSON = (v: unknown): string => JSON.stringify(v) ?? "null";
