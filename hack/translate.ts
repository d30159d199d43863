/**
 * Offline translation: a snapshot file (multi-document YAML of Kubernetes objects) →
 * statuses, IR and Caddy JSON. For debugging and for the goldens (tests/golden).
 *
 *   npx tsx hack/translate.ts tests/golden/basic.in.yaml            # out.yaml then caddy JSON
 *   npx tsx hack/translate.ts --caddy tests/golden/basic.in.yaml    # Caddy JSON only
 */
import { readFileSync } from "node:fs";
import { parseAllDocuments, stringify } from "yaml";
import { renderCaddyJSON, toCaddyConfig } from "../capabilities/caddy";
import { KubeObject, Snapshot, snapshotOf } from "../capabilities/snapshot";
import { RefusedObject, identityOf, translate } from "../capabilities/translate";

/** Parses a multi-document YAML snapshot (empty documents and `List` wrappers allowed). */
export function parseSnapshotYAML(text: string): KubeObject[] {
  const out: KubeObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(doc.errors.map(e => e.message).join("; "));
    const o = doc.toJS() as (KubeObject & { items?: KubeObject[] }) | null;
    if (!o) continue;
    if (o.kind === "List" || (o.kind ?? "").endsWith("List")) out.push(...(o.items ?? []));
    else out.push(o);
  }
  return out;
}

/**
 * Golden inputs may hold `kind: ProxyRefusal` documents (not Kubernetes objects): what a
 * Gateway's proxies refused, as the culprit search reports it; the fingerprint is that of the
 * object as the snapshot has it.
 */
function goldenRefusals(snapshot: Snapshot, objects: readonly KubeObject[]): RefusedObject[] {
  const wanted = objects.filter(o => o.kind === "ProxyRefusal");
  if (wanted.length === 0) return [];
  const candidates = translate(snapshot, { candidates: true }).candidates;
  return wanted.map(o => {
    const r = (o as KubeObject & { spec: Omit<RefusedObject, "fingerprint"> }).spec;
    const found = candidates?.get(r.gateway)?.find(c => identityOf(c) === identityOf(r));
    if (!found) throw new Error(`ProxyRefusal ${o.metadata.name}: no such object in ${r.gateway}`);
    return { ...r, fingerprint: found.fingerprint };
  });
}

export interface GoldenOutput {
  /** Statuses and IR, as YAML. */
  readonly out: string;
  /** Caddy config per Gateway (`namespace/name` → config), as deterministic JSON. */
  readonly caddy: string;
}

/** Translates a golden input: its objects, with its ProxyRefusal documents as `refused`. */
export function translateGolden(objects: readonly KubeObject[]): ReturnType<typeof translate> {
  const snapshot = snapshotOf(objects.filter(o => o.kind !== "ProxyRefusal"));
  return translate(snapshot, { refused: goldenRefusals(snapshot, objects) });
}

export function renderGolden(objects: readonly KubeObject[]): GoldenOutput {
  const result = translateGolden(objects);
  const out = stringify(
    {
      statuses: result.statuses,
      gateways: result.gateways.map(ir => ({
        ...ir,
        certificates: ir.certificates.map(c => ({ id: c.id })),
      })),
    },
    { lineWidth: 0, sortMapEntries: false },
  );
  const configs: Record<string, unknown> = {};
  for (const ir of result.gateways) configs[`${ir.namespace}/${ir.name}`] = toCaddyConfig(ir);
  return { out, caddy: renderCaddyJSON(configs) };
}

function main(argv: string[]): void {
  const caddyOnly = argv.includes("--caddy");
  const files = argv.filter(a => !a.startsWith("--"));
  if (files.length !== 1) {
    process.stderr.write("usage: tsx hack/translate.ts [--caddy] <snapshot.yaml>\n");
    process.exit(2);
  }
  const g = renderGolden(parseSnapshotYAML(readFileSync(files[0], "utf8")));
  if (!caddyOnly) process.stdout.write(g.out + "---\n");
  process.stdout.write(g.caddy);
}

if (require.main === module) main(process.argv.slice(2));
