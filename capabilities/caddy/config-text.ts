/**
 * A config's JSON text built from pieces kept per route-table host list, so that a render that
 * changed a few lists serialises only those. No I/O; the pieces are kept in weak maps keyed by
 * the list objects a render reuses (caddy/render-memo.ts).
 */
import { Hash, randomBytes } from "node:crypto";
import { hostsKeys } from "./hosts-change";
import { asObject, listJSON, Obj, plainJSON } from "./list-json";
import { ROUTE_TABLE_HANDLER } from "./route-table";

const texts = new WeakMap<object, string>();

/**
 * A config's JSON text (the same bytes as `JSON.stringify(config)`) as pieces: the skeleton's
 * text and each route table's `hosts` from its lists' texts, kept per list object and key (a
 * render keeps unchanged lists as the same objects, caddy/render-memo.ts). The text is joined
 * only when asked for; its size and its hash come from the pieces, so a build that pushes
 * deltas serialises what changed, not the whole table.
 */
export interface ConfigText {
  /** UTF-8 length of the text. */
  readonly bytes: number;
  /** Feeds the text to `hash` piece by piece (the digest of the whole text: SHA-256 streams). */
  update(hash: Hash): void;
  /** The text (joined on first use). */
  text(): string;
}

/** The same as `JSON.stringify(config)`, from the kept pieces (see ConfigText). */
export const configJSON = (config: Obj): string => configText(config).text();

export function configText(config: Obj): ConfigText {
  const tables: HostsParts[] = [];
  const copy = withTables(config, hosts => {
    tables.push(hostsParts(hosts));
    return `${SPLICE}${tables.length - 1}`;
  });
  if (tables.length === 0) return plainText(JSON.stringify(config));
  const parts = JSON.stringify(copy).split(SPLICED);
  // Odd parts are the markers' numbers: each once, in order (else the plain way).
  if (
    parts.length !== 2 * tables.length + 1 ||
    parts.some((p, i) => i % 2 === 1 && p !== String((i - 1) / 2))
  )
    return plainText(JSON.stringify(config));
  const skeleton = parts.filter((_, i) => i % 2 === 0);
  let bytes = 0;
  for (const p of skeleton) bytes += Buffer.byteLength(p);
  for (const t of tables) bytes += t.bytes;
  let text: string | undefined;
  return {
    bytes,
    update: hash => {
      skeleton.forEach((p, i) => {
        hash.update(p);
        const t = tables[i];
        if (t === undefined) return;
        // `{` + the parts without the first one's comma + `}`
        if (t.parts.length === 0) hash.update("{}");
        else {
          hash.update("{");
          hash.update(t.parts[0]!.slice(1));
          for (let j = 1; j < t.parts.length; j++) hash.update(t.parts[j]!);
          hash.update("}");
        }
      });
    },
    text: () =>
      (text ??= skeleton
        .map((p, i) => (i < tables.length ? p + hostsText(tables[i]!) : p))
        .join("")),
  };
}

const plainText = (text: string): ConfigText => ({
  bytes: Buffer.byteLength(text),
  update: hash => void hash.update(text),
  text: () => text,
});

/** Stands for a table's hosts in the text (NUL and a per-process nonce: no config holds it). */
const NONCE = randomBytes(8).toString("hex");
const SPLICE = `\u0000kengine-hosts-${NONCE}-`;
/** The marker as JSON.stringify writes it (NUL as `\u0000`), its number captured. */
const SPLICED = new RegExp(`"\\\\u0000kengine-hosts-${NONCE}-(\\d+)"`);

/** A table's `hosts` as pieces: `,"<key>":<list JSON>` per key, and their UTF-8 length with braces. */
interface HostsParts {
  readonly parts: readonly string[];
  readonly bytes: number;
}

const partsOf = new WeakMap<object, HostsParts>();
const listParts = new WeakMap<object, { readonly key: string; part: string; bytes: number }>();

/** The pieces of a table's `hosts` (once per hosts object; each key's piece once per list object). */
function hostsParts(hosts: Obj): HostsParts {
  let t = partsOf.get(hosts);
  if (t !== undefined) return t;
  const parts: string[] = [];
  let bytes = 2;
  for (const key of hostsKeys(hosts)) {
    const list = hosts[key];
    if (list === undefined) continue;
    if (list === null || typeof list !== "object") {
      const part = `,${JSON.stringify(key)}:${JSON.stringify(list)}`;
      parts.push(part);
      bytes += Buffer.byteLength(part);
      continue;
    }
    let p = listParts.get(list);
    if (p?.key !== key) {
      const part = `,${JSON.stringify(key)}:${listJSON(list, plainJSON, texts)}`;
      listParts.set(list, (p = { key, part, bytes: Buffer.byteLength(part) }));
    }
    parts.push(p.part);
    bytes += p.bytes;
  }
  // (the first part's comma is not written)
  if (parts.length > 0) bytes -= 1;
  partsOf.set(hosts, (t = { parts, bytes }));
  return t;
}

const hostsText = (t: HostsParts): string => `{${t.parts.join("").slice(1)}}`;

/** `config` with each route table handler's `hosts` replaced by `sub(hosts)` (a shallow copy). */
function withTables(config: Obj, sub: (hosts: Obj) => unknown): Obj {
  const apps = asObject(config.apps);
  const http = asObject(apps?.http);
  const servers = asObject(http?.servers);
  if (!servers) return config;
  let changed = false;
  const out: Record<string, unknown> = {};
  for (const [name, server] of Object.entries(servers)) {
    const routes = asObject(server)?.routes;
    out[name] = server;
    if (!Array.isArray(routes)) continue;
    let any = false;
    const mapped = (routes as unknown[]).map(r => {
      const handle = asObject(r)?.handle;
      if (!Array.isArray(handle) || !handle.some(isTableHandler)) return r;
      any = true;
      return {
        ...asObject(r),
        handle: (handle as unknown[]).map(h =>
          isTableHandler(h) ? { ...asObject(h), hosts: sub(asObject(asObject(h)!.hosts)!) } : h,
        ),
      };
    });
    if (any) out[name] = { ...asObject(server), routes: mapped };
    changed ||= any;
  }
  return changed ? { ...config, apps: { ...apps, http: { ...http, servers: out } } } : config;
}

const isTableHandler = (h: unknown): boolean => {
  const o = asObject(h);
  return o?.handler === ROUTE_TABLE_HANDLER && asObject(o.hosts) !== undefined;
};
