/**
 * Golden tests: tests/golden/<case>.in.yaml (a complete snapshot) → <case>.out.yaml
 * (statuses + IR) and <case>.caddy.json (Caddy config per Gateway).
 * Regenerate with: UPDATE_GOLDEN=1 npx jest --selectProjects unit capabilities/translate/golden
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseSnapshotYAML, renderGolden } from "../../hack/translate";

const dir = join(__dirname, "..", "..", "tests", "golden");
const cases = readdirSync(dir)
  .filter(f => f.endsWith(".in.yaml"))
  .map(f => f.slice(0, -".in.yaml".length))
  .sort();
const update = process.env.UPDATE_GOLDEN === "1";

describe("goldens", () => {
  it("has cases", () => {
    expect(cases.length).toBeGreaterThan(0);
  });
  it.each(cases)("%s", name => {
    const objects = parseSnapshotYAML(readFileSync(join(dir, `${name}.in.yaml`), "utf8"));
    const got = renderGolden(objects);
    // Determinism: the input order of objects must not matter.
    const again = renderGolden([...objects].reverse());
    expect(again).toEqual(got);
    const outFile = join(dir, `${name}.out.yaml`);
    const caddyFile = join(dir, `${name}.caddy.json`);
    if (update || !existsSync(outFile) || !existsSync(caddyFile)) {
      if (!update) throw new Error(`missing golden for ${name}: run with UPDATE_GOLDEN=1`);
      writeFileSync(outFile, got.out);
      writeFileSync(caddyFile, got.caddy);
      return;
    }
    expect(got.out).toBe(readFileSync(outFile, "utf8"));
    expect(got.caddy).toBe(readFileSync(caddyFile, "utf8"));
  });
});
