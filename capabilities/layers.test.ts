/**
 * The rooms of capabilities/ and which way their imports may point (docs/architecture.md §3).
 * A module imports only from its own room or from a lower layer; rooms on the same layer stay
 * independent of each other; no set of modules imports itself round in a cycle; and no file is
 * so long that its job cannot be told from its name. The walk
 * reads every non-test source file's `import`/`export … from` lines, type-only ones included:
 * a type that points up drags its room's concepts up with it.
 */
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";

/** Layer of every room, lowest first. Top-level files are rooms of their own name. */
export const LAYERS: readonly (readonly string[])[] = [
  ["generated", "flavor", "kube", "log.ts", "same-data.ts", "result.ts"],
  ["ir", "ownership", "metrics", "election"],
  ["validation"],
  ["snapshot"],
  ["provision", "pki"],
  ["acme", "ingress"],
  ["translate", "caddy"],
  ["status"],
  ["proxies"],
  ["workload"],
  ["reconcile", "admission.ts", "webhook-keepalive.ts"],
  ["controller.ts"],
];

const ROOT = join(__dirname);

const MAX_LINES = 600;

/**
 * Files still longer than MAX_LINES, with the length each may not exceed (docs/architecture.md
 * §5): a debt may shrink or be paid, never grow, and no file joins the list.
 */
const LONG_FILE_DEBTS: Readonly<Record<string, number>> = {};

const sources = (dir: string): string[] =>
  readdirSync(dir).flatMap(name => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") && !name.endsWith(".test.ts") ? [path] : [];
  });

const roomOf = (file: string): string => relative(ROOT, file).split("/")[0]!;

const resolveImport = (from: string, spec: string): string | undefined => {
  const base = normalize(join(dirname(from), spec));
  for (const candidate of [`${base}.ts`, join(base, "index.ts"), base]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      /* try the next spelling */
    }
  }
  return undefined;
};

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+["'](\.{1,2}\/[^"']+)["']/g;

/** Every relative import of every source file, resolved to a file. */
export const importGraph = (): Map<string, string[]> => {
  const graph = new Map<string, string[]>();
  for (const file of sources(ROOT)) {
    const text = readFileSync(file, "utf8");
    const targets: string[] = [];
    for (const m of text.matchAll(IMPORT)) {
      const target = resolveImport(file, m[1]!);
      if (target && target.startsWith(ROOT)) targets.push(target);
    }
    graph.set(file, targets);
  }
  return graph;
};

const layerOf = (room: string): number => LAYERS.findIndex(rooms => rooms.includes(room));

/** Strongly connected components with more than one file (Tarjan). */
const cycles = (graph: Map<string, string[]>): string[][] => {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) out.push(scc.map(f => relative(ROOT, f)).sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
};

describe("rooms and the direction of imports", () => {
  const graph = importGraph();

  it("every room has a layer", () => {
    const rooms = new Set([...graph.keys()].map(roomOf));
    expect([...rooms].filter(r => layerOf(r) < 0)).toEqual([]);
  });

  it("no module imports from a higher layer or from another room on its own layer", () => {
    const wrong: string[] = [];
    for (const [file, targets] of graph) {
      const from = roomOf(file);
      for (const target of targets) {
        const to = roomOf(target);
        if (to !== from && layerOf(to) >= layerOf(from))
          wrong.push(`${relative(ROOT, file)} -> ${relative(ROOT, target)}`);
      }
    }
    expect(wrong.sort()).toEqual([]);
  });

  it("no import cycle", () => {
    expect(cycles(graph)).toEqual([]);
  });

  it("no source file outside generated/ is longer than 600 lines, but the known debts, which only shrink", () => {
    const found = [...graph.keys()]
      .filter(f => roomOf(f) !== "generated")
      .map(f => [relative(ROOT, f), readFileSync(f, "utf8").split("\n").length] as const);
    const wrong = found.flatMap(([file, lines]) => {
      const cap = LONG_FILE_DEBTS[file];
      if (cap === undefined) return lines > MAX_LINES ? [`${file}: ${lines} lines`] : [];
      if (lines > cap) return [`${file}: ${lines} lines, more than its debt of ${cap}`];
      if (lines <= MAX_LINES) return [`${file}: ${lines} lines, paid: take it off LONG_FILE_DEBTS`];
      return [];
    });
    const gone = Object.keys(LONG_FILE_DEBTS).filter(f => !found.some(([file]) => file === f));
    expect([...wrong, ...gone.map(f => `${f}: gone, take it off LONG_FILE_DEBTS`)]).toEqual([]);
  });

  it("the walk sees the imports (a known arrow is found)", () => {
    const controller = graph.get(join(ROOT, "controller.ts")) ?? [];
    expect(controller.some(t => roomOf(t) === "reconcile")).toBe(true);
  });
});
