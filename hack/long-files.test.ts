/**
 * No script of hack/ is so long that its job cannot be told from its name: the rule that
 * capabilities/layers.test.ts keeps for the module (docs/architecture.md §5), for the
 * development scripts. Tests and generated files are left out.
 */
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const MAX_LINES = 600;

const sources = (dir: string): string[] =>
  readdirSync(dir).flatMap(name => {
    const path = join(dir, name);
    if (statSync(path).isDirectory())
      return name === "node_modules" || name === "generated" ? [] : sources(path);
    return name.endsWith(".ts") && !name.endsWith(".test.ts") ? [path] : [];
  });

describe("hack/ scripts", () => {
  it(`no source file is longer than ${MAX_LINES} lines`, () => {
    const files = sources(__dirname);
    expect(files.length).toBeGreaterThan(0);
    const long = files
      .map(f => [relative(__dirname, f), readFileSync(f, "utf8").split("\n").length] as const)
      .filter(([, lines]) => lines > MAX_LINES)
      .map(([file, lines]) => `${file}: ${lines} lines`);
    expect(long).toEqual([]);
  });
});
