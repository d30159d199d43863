/**
 * hack/upgrade-from names the previous build tests/e2e/helm-upgrade.test.ts upgrades from: a
 * commit of this repository whose module can be built against this checkout's node_modules
 * (the same package-lock.json) and differs from the current one.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { upgradeFrom } from "./helm";

const repoRoot = join(__dirname, "..");
const git = (...args: string[]) =>
  spawnSync("git", args, { cwd: repoRoot, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });

describe("hack/upgrade-from", () => {
  const commit = upgradeFrom();

  it("names a full commit of this repository", () => {
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
    expect(git("cat-file", "-t", commit).stdout.trim()).toBe("commit");
  });

  it("shares package-lock.json with this checkout, and its module sources differ", () => {
    expect(git("show", `${commit}:package-lock.json`).stdout).toBe(
      readFileSync(join(repoRoot, "package-lock.json"), "utf8"),
    );
    const changed = git("diff", "--name-only", commit, "--", "capabilities", "pepr.ts").stdout;
    expect(changed.split("\n").filter(f => f && !f.endsWith(".test.ts")).length).toBeGreaterThan(0);
  });
});
