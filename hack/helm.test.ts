/**
 * hack/upgrade-from names the previous build tests/e2e/helm-upgrade.test.ts upgrades from: a
 * commit of this repository whose module can be built against this checkout's node_modules
 * (its package-lock.json installs the same packages) and differs from the current one.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { upgradeFrom } from "./helm";

const repoRoot = join(__dirname, "..");
const git = (...args: string[]) =>
  spawnSync("git", args, { cwd: repoRoot, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });

/** Every package a lock file installs: its path in node_modules, version and integrity. */
const installed = (lock: string): Record<string, string> =>
  Object.fromEntries(
    Object.entries(
      (JSON.parse(lock) as { packages: Record<string, { version?: string; integrity?: string }> })
        .packages,
    )
      .filter(([path]) => path !== "")
      .map(([path, p]) => [path, `${p.version} ${p.integrity}`]),
  );

describe("hack/upgrade-from", () => {
  const commit = upgradeFrom();

  it("names a full commit of this repository", () => {
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
    expect(git("cat-file", "-t", commit).stdout.trim()).toBe("commit");
  });

  it("installs the packages this checkout's package-lock.json installs, and its module sources differ", () => {
    // the tree node_modules holds; which of them package.json declares, and as what, may differ
    expect(installed(git("show", `${commit}:package-lock.json`).stdout)).toEqual(
      installed(readFileSync(join(repoRoot, "package-lock.json"), "utf8")),
    );
    const changed = git("diff", "--name-only", commit, "--", "capabilities", "pepr.ts").stdout;
    expect(changed.split("\n").filter(f => f && !f.endsWith(".test.ts")).length).toBeGreaterThan(0);
  });
});
