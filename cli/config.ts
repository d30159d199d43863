/**
 * `kubectl kengine config GATEWAY|PROXY`: a Gateway's Caddy config with, for each part, the
 * objects it came from (the renderer's source map, caddy/config.ts `caddySourceMap`).
 *
 * What the proxies run comes only from what the controller stores: the Gateway's last-good
 * Secret holds the last sealed config a proxy of the Gateway accepted, with its hash; a proxy
 * whose KengineProxy `appliedHash` is that hash's prefix runs exactly those bytes. When the
 * Secret is not readable (or holds no config), the report shows the desired config computed
 * here by the controller's translator and renderer instead, and says so. Private keys are
 * never printed. Pure.
 */
import { isDeepStrictEqual } from "node:util";
import { Document } from "yaml";
import { caddySourceMap, toCaddyConfig } from "../capabilities/caddy";
import type { SourceObject } from "../capabilities/caddy";
import type { TranslateResult } from "../capabilities/translate";
import type { KubeObject } from "../capabilities/snapshot";
import { ClusterView, proxyGateway, proxySynced } from "./model";

const HASH_ANNOTATION = "gateway.kengine.io/config-hash";
const KEY_ANNOTATION = "gateway.kengine.io/config-key";
const STORED_ANNOTATION = "gateway.kengine.io/config-stored";

export type ConfigSource = "running" | "desired";

export interface ProvenanceEntry {
  /** JSON pointer into `config` (e.g. `/apps/http/servers/https-443/routes/0`). */
  readonly path: string;
  /** The objects that produced this part: `HTTPRoute ns/name`, `Listener ns/gw/name`, … */
  readonly sources: readonly string[];
  /** Running config only: false when this part differs from what the objects give now. */
  readonly matchesDesired?: boolean;
}

export interface ConfigReport {
  readonly gateway: string;
  /**
   * running: the last config a proxy of the Gateway accepted (its last-good Secret);
   * desired: computed here from the objects (the Secret could not be read).
   */
  readonly source: ConfigSource;
  readonly sourceDetail: string;
  /** Full sha256 of the running config (source running). */
  readonly hash?: string;
  readonly proxies: readonly {
    readonly pod: string;
    readonly appliedHash?: string;
    readonly desiredHash?: string;
    /** Whether it runs the controller's current desired config (KengineProxy Synced). */
    readonly synced: boolean;
    /** Source running: whether this proxy runs `config` (its applied hash is the config's). */
    readonly runsThisConfig?: boolean;
  }[];
  readonly provenance: readonly ProvenanceEntry[];
  readonly config: unknown;
}

export const sourceText = (o: SourceObject): string =>
  o.kind === "Listener"
    ? `Listener ${o.namespace}/${o.name}/${o.listener}`
    : `${o.kind} ${o.namespace}/${o.name}`;

/** `KIND/NS/NAME` (Listener: `Listener/NS/GATEWAY/LISTENER`) as `sourceText` prints it. */
export function parseObjectArg(arg: string): string | undefined {
  const parts = arg.split("/");
  if (parts.length < 3 || parts.some(p => p === "")) return undefined;
  const kinds: Record<string, string> = {
    httproute: "HTTPRoute",
    grpcroute: "GRPCRoute",
    tlsroute: "TLSRoute",
    tcproute: "TCPRoute",
    udproute: "UDPRoute",
    listenerset: "ListenerSet",
    listener: "Listener",
  };
  const kind = kinds[parts[0]!.toLowerCase()];
  if (!kind) return undefined;
  if (kind === "Listener")
    return parts.length === 4 ? `Listener ${parts.slice(1).join("/")}` : undefined;
  return parts.length === 3 ? `${kind} ${parts[1]}/${parts[2]}` : undefined;
}

/** Replaces private keys (PEM) anywhere in `v` with a marker. */
export function redact(v: unknown): unknown {
  if (typeof v === "string")
    return /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(v) ? "<private key: not shown>" : v;
  if (Array.isArray(v)) return v.map(redact);
  if (v && typeof v === "object")
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, redact(x)]));
  return v;
}

const segments = (pointer: string): string[] =>
  pointer
    .split("/")
    .slice(1)
    .map(s => s.replace(/~1/g, "/").replace(/~0/g, "~"));

export function at(v: unknown, pointer: string): unknown {
  let cur = v;
  for (const s of segments(pointer)) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string, unknown>)[s];
  }
  return cur;
}

function lastGood(
  view: ClusterView,
  gateway: string,
): { hash: string; config: unknown } | undefined {
  const [ns, name] = gateway.split("/");
  const s = view.objects.find(
    o =>
      o.kind === "Secret" &&
      o.metadata.namespace === ns &&
      o.metadata.name === `${name}-kengine-last-good`,
  ) as (KubeObject & { data?: Record<string, string> }) | undefined;
  const a = s?.metadata.annotations;
  const key = a?.[KEY_ANNOTATION];
  const hash = a?.[HASH_ANNOTATION];
  const data = key ? s?.data?.[key] : undefined;
  if (!hash || a?.[STORED_ANNOTATION] !== "true" || !data) return undefined;
  try {
    return { hash, config: JSON.parse(Buffer.from(data, "base64").toString("utf8")) };
  } catch {
    return undefined;
  }
}

/** The config report of one Gateway (`namespace/name`); undefined when it is not one of ours. */
export function configReport(
  view: ClusterView,
  translation: TranslateResult,
  gateway: string,
  options: { readonly object?: string; readonly proxy?: string } = {},
): ConfigReport | undefined {
  const ir = translation.gateways.find(g => `${g.namespace}/${g.name}` === gateway);
  if (!ir) return undefined;
  const desired = toCaddyConfig(ir, { memo: false }) as unknown;
  const map = caddySourceMap(ir, { memo: false });
  const stored = lastGood(view, gateway);
  const config = stored?.config ?? desired;
  const proxies = view.proxies
    .filter(p => proxyGateway(p) === gateway)
    .filter(
      p =>
        options.proxy === undefined ||
        p.metadata.name === options.proxy ||
        p.spec?.pod === options.proxy,
    )
    .map(p => ({
      pod: p.spec?.pod ?? p.metadata.name,
      ...(p.status?.appliedHash && { appliedHash: p.status.appliedHash }),
      ...(p.status?.desiredHash && { desiredHash: p.status.desiredHash }),
      synced: proxySynced(p),
      ...(stored && {
        runsThisConfig: !!p.status?.appliedHash && stored.hash.startsWith(p.status.appliedHash),
      }),
    }));
  const provenance: ProvenanceEntry[] = [];
  for (const [where, owners] of [...map.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const sources = owners.map(sourceText);
    if (options.object !== undefined && !sources.includes(options.object)) continue;
    const path = `/apps${where}`;
    if (at(config, path) === undefined) continue;
    provenance.push({
      path,
      sources,
      ...(stored && { matchesDesired: isDeepStrictEqual(at(config, path), at(desired, path)) }),
    });
  }
  const shown =
    options.object === undefined
      ? config
      : Object.fromEntries(provenance.map(p => [p.path, at(config, p.path)]));
  const runs = proxies.filter(p => p.runsThisConfig).map(p => p.pod);
  return {
    gateway,
    source: stored ? "running" : "desired",
    sourceDetail: stored
      ? `the last config a proxy of the Gateway accepted (Secret ${gateway.split("/")[0]}/${ir.name}-kengine-last-good, sha256 ${stored.hash.slice(0, 12)}); ${runs.length > 0 ? `running now on ${runs.join(", ")}` : "no proxy reports running it now"}`
      : "the desired config, computed here from the objects by the controller's translator (the last-good Secret is not readable to you, or holds no config yet); without the management listener the controller adds when it seals and pushes it",
    ...(stored && { hash: stored.hash }),
    proxies,
    provenance,
    config: redact(shown),
  };
}

/** The report as YAML: the config with each part's sources as a comment above it. */
export function configYAML(r: ConfigReport): string {
  const { provenance, config, ...head } = r;
  const doc = new Document({ ...head, config });
  doc.commentBefore = ` ${r.source === "running" ? "Running" : "Desired (computed locally)"} config of Gateway ${r.gateway}; "# from" comments name the objects each part came from`;
  for (const p of provenance) {
    const path =
      r.config && typeof r.config === "object" && p.path in (r.config as object)
        ? [p.path]
        : segments(p.path);
    const node = doc.getIn(
      ["config", ...path.map(s => (/^\d+$/.test(s) ? Number(s) : s))],
      true,
    ) as { commentBefore?: string | null } | undefined;
    if (node && typeof node === "object")
      node.commentBefore = ` from ${p.sources.join(", ")}${p.matchesDesired === false ? " (differs from what these objects give now)" : ""}`;
  }
  return doc.toString({ lineWidth: 0 });
}
