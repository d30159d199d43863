/**
 * The Helm chart `npm run build` writes (`dist/<uuid>-chart`), installed on the local cluster
 * with a real helm: the test peer `helm` (hack/peers/helm, helm.sh/helm/v3 built by
 * hack/build-peers.sh). Used by tests/e2e/helm.test.ts (install, admission, traffic) and
 * tests/e2e/helm-upgrade.test.ts (an upgrade from the previous build while traffic flows).
 *
 * The previous build is the module as it was at the commit named in `hack/upgrade-from` (a
 * commit on main): its sources are taken from git (`git archive`, no worktree), built with
 * `npm run build` against this checkout's node_modules (the commit's package-lock.json must
 * install the same packages) and cached per commit under
 * `${XDG_CACHE_HOME:-~/.cache}/kengine-gateway/upgrade-from/`.
 */
import { spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import cfg from "../package.json";
import { peerBin } from "./peers";
import {
  buildModule,
  deployments,
  distIsFresh,
  peprNamespace,
  waitForControllerPodsGone,
} from "./deployed";

const repoRoot = join(__dirname, "..");
export const releaseName = "kengine-gateway";
/**
 * Where helm keeps the release record. Not pepr-system: the chart creates that namespace (its
 * template `namespace.yaml`), and helm stores the record before it applies the templates.
 */
export const releaseNamespace = "default";
/** The chart a build writes into its dist/ directory. */
export const chartOf = (dist: string): string => join(dist, `${cfg.pepr.uuid}-chart`);

export type Result<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: string };

export interface HelmOptions {
  readonly helm: string;
  readonly kubeconfig: string;
  /** Helm's own cache, config and data directories live here (not in the user's home). */
  readonly home: string;
}

/** helm (the test peer, built on first use) against a local cluster whose state is in `localDir`. */
export const localHelm = (
  kubeconfig: string,
  kubectl: string,
  localDir: string,
): HelmOptions & KubectlOptions => ({
  helm: peerBin("helm"),
  kubeconfig,
  kubectl,
  home: join(localDir, "helm"),
});

export interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs helm against the kubeconfig; never throws. */
export function runHelm(o: HelmOptions, args: readonly string[], timeoutMs = 300_000): Run {
  const r = spawnSync(o.helm, [...args, "--kubeconfig", o.kubeconfig], {
    encoding: "utf8",
    timeout: timeoutMs,
    env: {
      ...process.env,
      HELM_CACHE_HOME: join(o.home, "cache"),
      HELM_CONFIG_HOME: join(o.home, "config"),
      HELM_DATA_HOME: join(o.home, "data"),
    },
  });
  return {
    code: r.status ?? -1,
    stdout: r.stdout ?? "",
    stderr: r.stderr ?? String(r.error ?? ""),
  };
}

export interface KubectlOptions {
  readonly kubectl: string;
  readonly kubeconfig: string;
}

const kubectlRun = (o: KubectlOptions, args: readonly string[], timeoutMs = 120_000): Run => {
  const r = spawnSync(o.kubectl, ["--kubeconfig", o.kubeconfig, ...args], {
    encoding: "utf8",
    timeout: timeoutMs,
  });
  return {
    code: r.status ?? -1,
    stdout: r.stdout ?? "",
    stderr: r.stderr ?? String(r.error ?? ""),
  };
};

/**
 * `helm upgrade --install` of a chart, then waits until both of Pepr's Deployments have rolled
 * out (every new pod Ready, no old one left). Returns the seconds it took.
 */
export function installChart(
  o: HelmOptions & KubectlOptions,
  chart: string,
  timeoutSeconds = 180,
): Result<number> {
  const began = Date.now();
  const h = runHelm(
    o,
    [
      "upgrade",
      "--install",
      releaseName,
      chart,
      "--namespace",
      releaseNamespace,
      "--wait",
      `--timeout=${timeoutSeconds}s`,
    ],
    (timeoutSeconds + 30) * 1000,
  );
  if (h.code !== 0)
    return { ok: false, error: `helm upgrade --install ${chart}: ${h.stderr.trim()}` };
  for (const d of deployments) {
    const w = kubectlRun(
      o,
      ["rollout", "status", "-n", peprNamespace, `deployment/${d}`, `--timeout=${timeoutSeconds}s`],
      (timeoutSeconds + 30) * 1000,
    );
    if (w.code !== 0) {
      const pods = kubectlRun(o, ["get", "pods", "-n", peprNamespace, "-o", "wide"]).stdout;
      return { ok: false, error: `deployment/${d} did not roll out: ${w.stderr.trim()}\n${pods}` };
    }
  }
  return { ok: true, value: Math.round((Date.now() - began) / 1000) };
}

/**
 * Lets the release own an existing `pepr-system` (left by `pepr dev`, `pepr deploy` or another
 * install: the chart has a Namespace template, and helm refuses to take over an object that is
 * not its own), the way Helm documents it: its labels and annotations, plus
 * `helm.sh/resource-policy: keep` so that uninstalling leaves it as it was found.
 */
export function adoptNamespace(o: KubectlOptions): void {
  if (kubectlRun(o, ["get", "namespace", peprNamespace]).code !== 0) return;
  kubectlRun(o, [
    "label",
    "--overwrite",
    "namespace",
    peprNamespace,
    "app.kubernetes.io/managed-by=Helm",
  ]);
  kubectlRun(o, [
    "annotate",
    "--overwrite",
    "namespace",
    peprNamespace,
    `meta.helm.sh/release-name=${releaseName}`,
    `meta.helm.sh/release-namespace=${releaseNamespace}`,
    "helm.sh/resource-policy=keep",
  ]);
}

/**
 * `helm uninstall --wait`, then waits for Pepr's pods (and the namespace, if the release
 * created and so deleted it) to be gone: the next test may run the module in pepr-system.
 */
export function uninstallChart(o: HelmOptions & KubectlOptions): void {
  runHelm(
    o,
    ["uninstall", releaseName, "--namespace", releaseNamespace, "--wait", "--timeout=120s"],
    150_000,
  );
  waitForControllerPodsGone(o);
  kubectlRun(o, ["wait", "--for=delete", `namespace/${peprNamespace}`, "--timeout=120s"], 150_000);
}

/** This checkout's dist/, rebuilt first unless it is a build of the sources as they are. */
export function currentDist(): Result<string> {
  if (!distIsFresh()) {
    const b = buildModule();
    if (!b.ok) return b;
  }
  return { ok: true, value: join(repoRoot, "dist") };
}

/** The commit named in hack/upgrade-from (its first line that is not a comment). */
export function upgradeFrom(): string {
  const line = readFileSync(join(repoRoot, "hack", "upgrade-from"), "utf8")
    .split("\n")
    .map(l => l.trim())
    .find(l => l && !l.startsWith("#"));
  return line ?? "";
}

/**
 * The previous build's dist/ (cached per commit): the sources of `commit` as git has them,
 * without their tests, built by their own `npm run build`.
 */
export function previousBuild(
  commit = upgradeFrom(),
  say: (m: string) => void = () => undefined,
): Result<string> {
  if (!/^[0-9a-f]{7,40}$/.test(commit))
    return { ok: false, error: `hack/upgrade-from: "${commit}" is not a commit` };
  const git = (args: string[]) =>
    spawnSync("git", args, { cwd: repoRoot, encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  const full = git(["rev-parse", "--verify", "--quiet", `${commit}^{commit}`]);
  if (full.status !== 0)
    return {
      ok: false,
      error: `commit ${commit} (hack/upgrade-from) is not in this clone: fetch main's history (git fetch --unshallow)`,
    };
  const sha = full.stdout.trim();
  const pepr = (
    JSON.parse(readFileSync(join(repoRoot, "node_modules", "pepr", "package.json"), "utf8")) as {
      version: string;
    }
  ).version;
  const root = join(
    process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"),
    "kengine-gateway",
    "upgrade-from",
  );
  const dist = join(root, `${sha.slice(0, 12)}-pepr-${pepr}`);
  if (existsSync(join(dist, ".done"))) return { ok: true, value: dist };

  say(`building the previous build (commit ${sha.slice(0, 12)}, hack/upgrade-from)`);
  const work = mkdtempSync(join(tmpdir(), "kg-previous-"));
  try {
    const tar = join(work, "src.tar");
    const a = git(["archive", "--format=tar", "-o", tar, sha]);
    if (a.status !== 0) return { ok: false, error: `git archive ${sha}: ${a.stderr.trim()}` };
    const src = join(work, "src");
    mkdirSync(src);
    const x = spawnSync("tar", ["-xf", tar, "-C", src], { encoding: "utf8" });
    if (x.status !== 0) return { ok: false, error: `tar -xf: ${x.stderr.trim()}` };
    // Tests stay out: the build type-checks what tsconfig includes, and they are not shipped.
    const find = spawnSync("find", [src, "-name", "*.test.ts", "-delete"], { encoding: "utf8" });
    if (find.status !== 0) return { ok: false, error: `find: ${find.stderr.trim()}` };
    symlinkSync(join(repoRoot, "node_modules"), join(src, "node_modules"));
    const b = buildModule(src);
    if (!b.ok) return { ok: false, error: `the previous build (${sha.slice(0, 12)}): ${b.error}` };
    mkdirSync(root, { recursive: true });
    const tmp = `${dist}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    cpSync(join(src, "dist"), tmp, { recursive: true });
    cpSync(join(src, "package.json"), join(tmp, ".done"));
    rmSync(dist, { recursive: true, force: true });
    renameSync(tmp, dist);
    return { ok: true, value: dist };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
