/**
 * The module copy `npm start` and the suites run `pepr dev` from, and the mirror that keeps
 * `npm start`'s copy in step with edits (real files and real filesystem events; no cluster).
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mirrorModule, moduleCopy } from "./pepr-dev";

/** A repository with the files moduleCopy takes, and a test beside a source. */
function fakeRepo(): string {
  const repo = mkdtempSync(join(tmpdir(), "kg-fake-repo-"));
  mkdirSync(join(repo, "capabilities", "routes"), { recursive: true });
  mkdirSync(join(repo, "node_modules"));
  writeFileSync(join(repo, "capabilities", "routes", "a.ts"), "export const a = 1;\n");
  writeFileSync(join(repo, "capabilities", "routes", "a.test.ts"), "test('a', () => {});\n");
  writeFileSync(join(repo, "pepr.ts"), "// entry\n");
  writeFileSync(join(repo, "tsconfig.json"), "{}\n");
  writeFileSync(join(repo, "package.json"), "{}\n");
  return repo;
}

async function until(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`not seen within 5 s: ${what}`);
    await new Promise(r => setTimeout(r, 20));
  }
}

describe("moduleCopy and mirrorModule", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("copies the module without its tests", () => {
    const repo = fakeRepo();
    const copy = moduleCopy("kg-copy-", repo);
    dirs.push(repo, copy);
    expect(readFileSync(join(copy, "capabilities", "routes", "a.ts"), "utf8")).toBe(
      "export const a = 1;\n",
    );
    expect(existsSync(join(copy, "capabilities", "routes", "a.test.ts"))).toBe(false);
    expect(existsSync(join(copy, "pepr.ts"))).toBe(true);
  });

  it("brings edits, new files, new folders and deletions into the copy; tests stay out", async () => {
    const repo = fakeRepo();
    const copy = moduleCopy("kg-copy-", repo);
    dirs.push(repo, copy);
    const stop = mirrorModule(copy, repo);
    try {
      const inCopy = (...p: string[]) => join(copy, "capabilities", ...p);
      writeFileSync(join(repo, "capabilities", "routes", "a.ts"), "export const a = 2;\n");
      await until("the edit", () => readFileSync(inCopy("routes", "a.ts"), "utf8").includes("2"));

      mkdirSync(join(repo, "capabilities", "ingress"));
      writeFileSync(join(repo, "capabilities", "ingress", "b.ts"), "export const b = 1;\n");
      writeFileSync(join(repo, "capabilities", "ingress", "b.test.ts"), "test('b', () => {});\n");
      await until("the new file in a new folder", () => existsSync(inCopy("ingress", "b.ts")));

      // an editor's save: a temporary file renamed over the original
      writeFileSync(join(repo, "pepr.ts.tmp"), "// entry, edited\n");
      renameSync(join(repo, "pepr.ts.tmp"), join(repo, "pepr.ts"));
      await until("pepr.ts replaced", () =>
        readFileSync(join(copy, "pepr.ts"), "utf8").includes("edited"),
      );

      rmSync(join(repo, "capabilities", "routes", "a.ts"));
      await until("the deletion", () => !existsSync(inCopy("routes", "a.ts")));

      expect(existsSync(inCopy("ingress", "b.test.ts"))).toBe(false);
      expect(existsSync(inCopy("routes", "a.test.ts"))).toBe(false);
    } finally {
      stop();
    }

    // stopped: nothing follows any more
    writeFileSync(join(repo, "capabilities", "ingress", "b.ts"), "export const b = 2;\n");
    await new Promise(r => setTimeout(r, 200));
    expect(readFileSync(join(copy, "capabilities", "ingress", "b.ts"), "utf8")).toBe(
      "export const b = 1;\n",
    );
  });
});
