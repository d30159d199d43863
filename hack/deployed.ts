/**
 * Deployed mode (`npm start -- --deployed`, tests/e2e/deployed.test.ts): the module as a
 * cluster runs it. `npm run build`, then what docs/operations.md §2 applies ("With kubectl
 * only"): our CRDs, the generated `dist/pepr-module-<uuid>.yaml` (Pepr's admission and watcher
 * Deployments on Pepr's controller image, the module Secret, the TLS Secret, the Service the
 * webhook is called through, RBAC) and our Role. No `pepr dev` process: the node runs
 * the controller image (hack/node/pepr-image.sh) and kube-apiserver calls the webhook
 * through its Service's endpoints.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { parseAllDocuments } from "yaml";
import cfg from "../package.json";

const repoRoot = join(__dirname, "..");
export const moduleName = `pepr-${cfg.pepr.uuid}`;
export const peprNamespace = "pepr-system";
/** The admission and watcher Deployments `npm run build` generates. */
export const deployments = [moduleName, `${moduleName}-watcher`] as const;

export interface DeployOptions {
  readonly kubeconfig: string;
  readonly kubectl: string;
  /** Skip `npm run build` (dist/ is already built). */
  readonly skipBuild?: boolean;
  readonly say?: (msg: string) => void;
  /** How long to wait for the Deployments to be Available. */
  readonly timeoutSeconds?: number;
}

export type Deployed =
  | { readonly ok: true; readonly buildSeconds: number; readonly rolloutSeconds: number }
  | { readonly ok: false; readonly error: string };

/** The files applied, in order (CRDs first; our Role needs Pepr's namespace). */
export function manifests(dist: string): readonly string[] {
  return [
    join(dist, "kengine-gateway-crds.yaml"),
    join(dist, `pepr-module-${cfg.pepr.uuid}.yaml`),
    join(dist, "kengine-gateway-rbac.yaml"),
  ];
}

/** `npm run build` in a checkout of the module (this one unless told): dist/ there. */
export function buildModule(
  dir = repoRoot,
): { readonly ok: true } | { readonly ok: false; readonly error: string } {
  const b = spawnSync("npm", ["run", "build"], { cwd: dir, encoding: "utf8" });
  return b.status === 0
    ? { ok: true }
    : { ok: false, error: `npm run build failed:\n${b.stdout}${b.stderr}` };
}

export function deployModule(opts: DeployOptions): Deployed {
  const say = opts.say ?? (() => undefined);
  const kubectl = (args: string[], timeoutMs = 120_000) =>
    spawnSync(opts.kubectl, ["--kubeconfig", opts.kubeconfig, ...args], {
      encoding: "utf8",
      timeout: timeoutMs,
    });
  const began = Date.now();
  if (!opts.skipBuild) {
    say("building the module (npm run build)");
    const b = buildModule();
    if (!b.ok) return b;
  }
  const built = Date.now();
  for (const file of manifests(join(repoRoot, "dist"))) {
    const r = kubectl(["apply", "--server-side", "--force-conflicts", "-f", file]);
    if (r.status !== 0) return { ok: false, error: `kubectl apply -f ${file}: ${r.stderr.trim()}` };
  }
  say(`applied ${manifests("dist").join(", ")}; waiting for Pepr's admission and watcher pods`);
  const timeout = opts.timeoutSeconds ?? 240;
  const names = deployments.map(d => `deployment/${d}`);
  const w = kubectl(
    ["wait", "-n", peprNamespace, "--for=condition=Available", `--timeout=${timeout}s`, ...names],
    (timeout + 30) * 1000,
  );
  if (w.status !== 0) {
    const pods = kubectl(["get", "pods", "-n", peprNamespace, "-o", "wide"]).stdout;
    return {
      ok: false,
      error: `Pepr's Deployments are not Available after ${timeout} s: ${w.stderr.trim()}\n${pods}`,
    };
  }
  return {
    ok: true,
    buildSeconds: Math.round((built - began) / 1000),
    rolloutSeconds: Math.round((Date.now() - built) / 1000),
  };
}

/** What `npm run build` reads: a change to any of these calls for a new build (distIsFresh). */
const BUILD_SOURCES = [
  "capabilities",
  "pepr.ts",
  "package.json",
  "deploy",
  "hack/dist.ts",
  "hack/dist-check.ts",
  "hack/webhook.ts",
  "hack/service-accounts.ts",
] as const;

/** The file in dist/ that says what a build was made from (hack/dist.ts writes it last). */
export const BUILD_STAMP = ".build-stamp";

/** sha256 over the paths and contents of files and directories (sorted), relative to root. */
function digest(root: string, paths: readonly string[]): string {
  const h = createHash("sha256");
  const walk = (p: string): void => {
    if (!existsSync(p)) return;
    if (statSync(p).isDirectory()) {
      for (const n of readdirSync(p).sort()) walk(join(p, n));
      return;
    }
    h.update(relative(root, p)).update("\0").update(readFileSync(p)).update("\0");
  };
  for (const p of paths) walk(join(root, p));
  return h.digest("hex");
}

/**
 * What a build in `dist` of the checkout at `root` is: the digest of the sources it was made
 * from and of the manifests it wrote. By content, not modification times: `pepr build` and
 * `pepr dev` write back every source file they check the formatting of, unchanged, so after
 * any `pepr dev` start every source looked newer than dist/ and each suite that deploys the
 * module built it again.
 */
export function buildStamp(dist: string, root = repoRoot): string {
  return `sources ${digest(root, BUILD_SOURCES)}\nmanifests ${digest(
    dist,
    manifests(dist).map(f => relative(dist, f)),
  )}\n`;
}

/** Whether dist/ holds a whole `npm run build` of the sources as they are now (tests skip the rebuild then). */
export function distIsFresh(): boolean {
  const dist = join(repoRoot, "dist");
  if (!manifests(dist).every(existsSync)) return false;
  const stamp = join(dist, BUILD_STAMP);
  return existsSync(stamp) && readFileSync(stamp, "utf8") === buildStamp(dist);
}

/** kind/name (and namespace) of every object in a manifest file but Namespaces (pure). */
export function objectRefs(manifest: string): { kind: string; name: string; namespace?: string }[] {
  return parseAllDocuments(manifest)
    .map(d => d.toJS() as { kind?: string; metadata?: { name?: string; namespace?: string } })
    .filter(o => o?.kind && o.kind !== "Namespace" && o.metadata?.name)
    .map(o => ({
      kind: o.kind as string,
      name: o.metadata?.name as string,
      ...(o.metadata?.namespace ? { namespace: o.metadata.namespace } : {}),
    }));
}

/**
 * Removes what deployModule applied except the Namespace and our CRDs (other tests run the
 * module with `pepr dev` next, in the same pepr-system), and waits for Pepr's pods to go.
 */
export function undeployModule(opts: Pick<DeployOptions, "kubeconfig" | "kubectl">): void {
  const [, moduleYaml, rbacYaml] = manifests(join(repoRoot, "dist"));
  for (const file of [rbacYaml, moduleYaml]) {
    for (const o of objectRefs(readFileSync(file, "utf8"))) {
      spawnSync(
        opts.kubectl,
        [
          "--kubeconfig",
          opts.kubeconfig,
          "delete",
          "--ignore-not-found",
          "--wait=true",
          ...(o.namespace ? ["-n", o.namespace] : []),
          o.kind,
          o.name,
        ],
        { encoding: "utf8", timeout: 120_000 },
      );
    }
  }
  waitForControllerPodsGone(opts);
}

/** Waits (up to 60 s) until no pod of Pepr's admission or watcher is left in pepr-system. */
export function waitForControllerPodsGone(
  opts: Pick<DeployOptions, "kubeconfig" | "kubectl">,
): void {
  spawnSync(
    opts.kubectl,
    [
      "--kubeconfig",
      opts.kubeconfig,
      "wait",
      "-n",
      peprNamespace,
      "--for=delete",
      "pod",
      "-l",
      "pepr.dev/controller",
      "--timeout=60s",
    ],
    { encoding: "utf8", timeout: 90_000 },
  );
}
