/**
 * What a V8 heap snapshot holds, by constructor, and the paths that keep it alive:
 * `node --max-old-space-size=4096 --import tsx hack/bench/heap-holders.ts <a.heapsnapshot>
 * [<b.heapsnapshot>] [top]` prints the `top` (default 25) constructors by self size (with two
 * snapshots: by growth from a to b), and for the largest growers the shortest retainer path
 * from the GC roots of a few of their instances (edges named, weak edges skipped), so the
 * holder shows by name (a class's private field, a Map, a closure's context).
 */
import { readFileSync } from "node:fs";

interface Snapshot {
  readonly snapshot: {
    readonly meta: {
      readonly node_fields: string[];
      readonly node_types: [string[]];
      readonly edge_fields: string[];
      readonly edge_types: [string[]];
    };
  };
  readonly nodes: number[];
  readonly edges: number[];
  readonly strings: string[];
}

interface Heap {
  readonly count: number;
  readonly type: (n: number) => string;
  readonly name: (n: number) => string;
  readonly self: (n: number) => number;
  /** Edges from node n: [type, name, to] each. */
  readonly edges: (n: number) => Iterable<[string, string, number]>;
}

function load(path: string): Heap {
  const s = JSON.parse(readFileSync(path, "utf8")) as Snapshot;
  const nf = s.snapshot.meta.node_fields;
  const ef = s.snapshot.meta.edge_fields;
  const N = nf.length;
  const E = ef.length;
  const [nTypes] = s.snapshot.meta.node_types;
  const [eTypes] = s.snapshot.meta.edge_types;
  const iType = nf.indexOf("type");
  const iName = nf.indexOf("name");
  const iSelf = nf.indexOf("self_size");
  const iEdges = nf.indexOf("edge_count");
  const eType = ef.indexOf("type");
  const eName = ef.indexOf("name_or_index");
  const eTo = ef.indexOf("to_node");
  const count = s.nodes.length / N;
  const firstEdge = new Uint32Array(count + 1);
  for (let n = 0; n < count; n++) firstEdge[n + 1] = firstEdge[n]! + s.nodes[n * N + iEdges]!;
  return {
    count,
    type: n => nTypes[s.nodes[n * N + iType]!]!,
    name: n => s.strings[s.nodes[n * N + iName]!]!,
    self: n => s.nodes[n * N + iSelf]!,
    *edges(n) {
      for (let e = firstEdge[n]!; e < firstEdge[n + 1]!; e++) {
        const t = eTypes[s.edges[e * E + eType]!]!;
        const raw = s.edges[e * E + eName]!;
        const name = t === "element" || t === "hidden" ? `[${raw}]` : s.strings[raw]!;
        yield [t, name, s.edges[e * E + eTo]! / N];
      }
    },
  };
}

/** "constructor name" of a node as DevTools groups it. */
const group = (h: Heap, n: number): string => {
  const t = h.type(n);
  return t === "object" || t === "closure" || t === "native" ? `${t}:${h.name(n)}` : `(${t})`;
};

function totals(h: Heap): Map<string, { count: number; bytes: number }> {
  const m = new Map<string, { count: number; bytes: number }>();
  for (let n = 0; n < h.count; n++) {
    const g = group(h, n);
    const t = m.get(g) ?? { count: 0, bytes: 0 };
    t.count++;
    t.bytes += h.self(n);
    m.set(g, t);
  }
  return m;
}

/**
 * Self sizes summed by holder: each object counted once, for the first named holder on its
 * shortest strong path from the roots (a class's private field `Class.#field`, or a module's
 * top-level variable as `module-variable`), so "held by" sums to the heap.
 */
function holders(h: Heap, nodes?: Map<string, number>): Map<string, number> {
  const label: (string | undefined)[] = new Array<string | undefined>(h.count);
  const seen = new Uint8Array(h.count);
  label[0] = "(roots)";
  seen[0] = 1;
  let frontier = [0];
  const sums = new Map<string, number>();
  while (frontier.length) {
    const next: number[] = [];
    for (const n of frontier) {
      sums.set(label[n]!, (sums.get(label[n]!) ?? 0) + h.self(n));
      for (const [t, name, to] of h.edges(n)) {
        if (t === "weak" || t === "shortcut" || seen[to]) continue;
        seen[to] = 1;
        let l = label[n]!;
        if (l === "(roots)" || l.startsWith("(module ")) {
          // the first named holder below the roots: a private field, or a module variable
          const from = h.name(n);
          if (name.startsWith("#") && h.type(n) === "object") l = `${from}.${name}`;
          else if (
            from === "system / Context" &&
            t === "context" &&
            !/^(previous|extension|scope_info)$/.test(name)
          )
            l = `(module ${name})`;
          if (l !== label[n] && nodes && !nodes.has(l)) nodes.set(l, to);
        }
        label[to] = l;
        next.push(to);
      }
    }
    frontier = next;
  }
  return sums;
}

/** Bytes only `node` keeps alive: what is no longer reachable from the roots without it. */
function retained(h: Heap, node: number): number {
  const seen = new Uint8Array(h.count);
  seen[0] = 1;
  seen[node] = 1;
  let frontier = [0];
  while (frontier.length) {
    const next: number[] = [];
    for (const n of frontier)
      for (const [t, , to] of h.edges(n)) {
        if (t === "weak" || t === "shortcut" || seen[to]) continue;
        seen[to] = 1;
        next.push(to);
      }
    frontier = next;
  }
  let bytes = 0;
  for (let n = 0; n < h.count; n++) if (!seen[n] || n === node) bytes += h.self(n);
  return bytes;
}

/** Shortest strong path from the root (node 0) to `target`, as "name.edge → …". */
function retainerPaths(h: Heap, targets: readonly number[]): string[] {
  const parent = new Int32Array(h.count).fill(-1);
  const via: string[] = new Array<string>(h.count);
  parent[0] = 0;
  let frontier = [0];
  while (frontier.length) {
    const next: number[] = [];
    for (const n of frontier)
      for (const [t, name, to] of h.edges(n)) {
        if (t === "weak" || t === "shortcut" || parent[to] !== -1) continue;
        parent[to] = n;
        via[to] = name;
        next.push(to);
      }
    frontier = next;
  }
  return targets.map(target => {
    const steps: string[] = [];
    for (let n = target; n !== 0 && parent[n] !== -1 && steps.length < 40; n = parent[n]!)
      steps.push(`${group(h, parent[n]!)} .${via[n]}`);
    return parent[target] === -1 ? "(unreachable)" : steps.reverse().join(" → ");
  });
}

const mib = (b: number) => Math.round((b / 2 ** 20) * 100) / 100;

const [aPath, bPath, topArg] = process.argv.slice(2);
if (!aPath) throw new Error("usage: heap-holders.ts <a.heapsnapshot> [<b.heapsnapshot>] [top]");
const top = Number((bPath && !bPath.endsWith(".heapsnapshot") ? bPath : topArg) ?? 25);
const b = bPath?.endsWith(".heapsnapshot") ? load(bPath) : undefined;
const a = load(aPath);
const ta = totals(a);
const tb = b ? totals(b) : undefined;
const rows = [...(tb ?? ta)].map(([g, t]) => ({
  group: g,
  count: t.count - (tb ? (ta.get(g)?.count ?? 0) : 0),
  MiB: mib(t.bytes - (tb ? (ta.get(g)?.bytes ?? 0) : 0)),
}));
rows.sort((x, y) => y.MiB - x.MiB);
console.log(tb ? `growth ${aPath} → ${bPath}` : aPath);
console.table(rows.slice(0, top));
const h = b ?? a;
const nodesA = new Map<string, number>();
const nodesB = new Map<string, number>();
const ha = holders(a, nodesA);
const hb = b ? holders(b, nodesB) : undefined;
const held = [...(hb ?? ha)]
  .map(([holder, bytes]) => ({ holder, MiB: mib(bytes - (hb ? (ha.get(holder) ?? 0) : 0)) }))
  .sort((x, y) => y.MiB - x.MiB);
console.log(hb ? "held by (growth)" : "held by");
console.table(held.slice(0, top));
// exact retained sizes (what each holder alone keeps alive) of the first ten
const retainedRows = held.slice(0, 10).flatMap(({ holder }) => {
  const nb = (b ? nodesB : nodesA).get(holder);
  if (nb === undefined) return [];
  const na = b ? nodesA.get(holder) : undefined;
  return [
    {
      holder,
      ...(b && { retainedBeforeMiB: na === undefined ? 0 : mib(retained(a, na)) }),
      retainedMiB: mib(retained(h, nb)),
    },
  ];
});
console.log("retained (held by it alone)");
console.table(retainedRows);
for (const row of rows.slice(0, 6)) {
  // the largest instances of this group
  const nodes: number[] = [];
  for (let n = 0; n < h.count; n++) if (group(h, n) === row.group) nodes.push(n);
  nodes.sort((x, y) => h.self(y) - h.self(x));
  const sample = [nodes[0]!, nodes[Math.floor(nodes.length / 2)]!, nodes[nodes.length - 1]!];
  console.log(`\n${row.group} (${row.count}, ${row.MiB} MiB): retainer paths`);
  for (const p of new Set(retainerPaths(h, sample))) console.log(`  ${p}`);
}
