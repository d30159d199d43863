/**
 * The conformance suite itself for npm run conformance (hack/conformance.ts): the CRDs of its
 * release, its Go test binary (built once per inputs into the peers cache), and running it with
 * progress lines on stdout.
 */
import { ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { SuiteVersion, suiteVersions } from "./conformance-args";
import { elapsed, hack, kubeconfig, kubectl, run, RunError, say } from "./conformance-cluster";
import pkg from "../package.json";

/** Logged by hack/conformance/conformance_test.go when setup failed and the tests ran anyway. */
export const setupFailedMarker = "KENGINE-CONFORMANCE: SETUP FAILED";

/**
 * v1.7.0's suite imports the echo server's gRPC/TCP/UDP client packages from
 * sigs.k8s.io/gateway-api-conformance-images, where v1.7.0 moved echo-basic; the module proxy
 * does not serve that module (403). hack/peers/conformance/go.mod replaces it with
 * ./.images, written here from the very packages of the echo-basic the local cluster runs
 * (sigs.k8s.io/gateway-api/conformance v1.6.1, pinned in hack/go.mod, checksummed by hack/go.sum):
 * the suite's clients then speak exactly the protocol of the echo server under test.
 * Returns the source version, for the test binary's hash.
 */
function writeImagesModule(): string {
  const m = run(
    "go",
    ["list", "-m", "-f", "{{.Version}} {{.Dir}}", "sigs.k8s.io/gateway-api/conformance"],
    { cwd: hack, timeoutMs: 300_000 },
  );
  const [version, dir] = m.stdout.trim().split(" ");
  if (m.code !== 0 || !version || !dir || !existsSync(join(dir, "echo-basic")))
    throw new RunError(`cannot find sigs.k8s.io/gateway-api/conformance's echo-basic: ${m.stderr}`);
  const out = join(suiteVersions["v1.7.0"].dir, ".images");
  rmSync(out, { recursive: true, force: true });
  for (const p of ["grpcechoserver", "tcpserver", "udpechoserver"]) {
    const from = join(dir, "echo-basic", p);
    mkdirSync(join(out, "echo-basic", p), { recursive: true });
    for (const f of readdirSync(from).filter(n => n.endsWith(".go") && !n.endsWith("_test.go")))
      writeFileSync(join(out, "echo-basic", p, f), readFileSync(join(from, f)));
  }
  writeFileSync(
    join(out, "go.mod"),
    `// Written by hack/conformance.ts from sigs.k8s.io/gateway-api/conformance@${version}/echo-basic.\n` +
      "module sigs.k8s.io/gateway-api-conformance-images\n\ngo 1.24\n",
  );
  return version;
}

/**
 * Installs the Gateway API CRDs (experimental channel, as hack/cluster.sh does) of the suite's
 * release when it is not the one the cluster installs: sigs.k8s.io/gateway-api at that
 * version, from the suite's module (downloaded and checksummed by its go.sum).
 */
export function installSuiteCrds(version: SuiteVersion): void {
  const suite = suiteVersions[version];
  if (!("crds" in suite)) return;
  const m = run("go", ["mod", "download", "-json", `sigs.k8s.io/gateway-api@${suite.crds}`], {
    cwd: suite.dir,
    env: { ...process.env, ...suite.env },
    timeoutMs: 300_000,
  });
  const dir = m.code === 0 ? (JSON.parse(m.stdout) as { Dir?: string }).Dir : undefined;
  const crds = dir && join(dir, "config", "crd", "experimental");
  if (!crds || !existsSync(crds))
    throw new RunError(`no CRDs for sigs.k8s.io/gateway-api@${suite.crds}: ${m.stderr.trim()}`);
  for (const f of readdirSync(crds)
    .filter(n => /^gateway\.networking\..*\.yaml$/.test(n))
    .sort()) {
    const r = kubectl(["apply", "--server-side", "--force-conflicts", "-f", join(crds, f)]);
    if (r.code !== 0) throw new RunError(`cannot apply ${f} (${suite.crds}): ${r.stderr.trim()}`);
  }
  // The suite refuses a cluster whose Gateway API CRDs come from several releases: remove the
  // kinds the newer release added (e.g. v1.7.0's XTelemetryPolicy).
  // name<TAB>bundle-version per CRD (the full JSON of the Gateway API CRDs is megabytes).
  const all = kubectl([
    "get",
    "crd",
    "-o",
    "jsonpath={range .items[*]}{.metadata.name}{'\\t'}{.metadata.annotations.gateway\\.networking\\.k8s\\.io/bundle-version}{'\\n'}{end}",
  ]);
  if (all.code !== 0) throw new RunError(`cannot list CRDs: ${all.stderr.trim()}`);
  const stray = all.stdout
    .split("\n")
    .map(l => l.split("\t"))
    .filter(([name, v]) => name && v && v !== suite.crds)
    .map(([name]) => name);
  if (stray.length > 0) {
    const d = kubectl(["delete", "crd", ...stray]);
    if (d.code !== 0)
      throw new RunError(`cannot delete CRDs ${stray.join(", ")}: ${d.stderr.trim()}`);
  }
  say(
    `installed the Gateway API ${suite.crds} CRDs (experimental channel) for suite ${version}` +
      (stray.length > 0 ? `; removed ${stray.join(", ")} (not in ${suite.crds})` : ""),
  );
}

/** Builds the Go test binary once per version hash, into the peers cache. */
export function buildTestBinary(version: SuiteVersion): string {
  const suite = suiteVersions[version];
  // build-peers.sh prints the cache directory.
  const r = run("bash", [join(hack, "build-peers.sh"), "kubectl"], {
    cwd: hack,
    timeoutMs: 1_800_000,
  });
  if (r.code !== 0) throw new RunError(`hack/build-peers.sh failed:\n${r.stderr.slice(-3000)}`);
  const cache = r.stdout.trim().split("\n").pop() ?? "";
  const env = { ...process.env, CGO_ENABLED: "0", ...suite.env };
  // The peers' hash does not cover the suite: name the binary by its own inputs.
  const h = createHash("sha256");
  h.update(version);
  if (suite.images) h.update(writeImagesModule());
  h.update(run("go", ["version"], { cwd: suite.dir, env, timeoutMs: 600_000 }).stdout);
  for (const f of ["go.mod", "go.sum"]) h.update(readFileSync(join(suite.dir, f)));
  const src = join(hack, "conformance");
  for (const f of readdirSync(src)
    .filter(n => n.endsWith(".go"))
    .sort()) {
    h.update(f);
    h.update(readFileSync(join(src, f)));
  }
  const bin = join(cache, "bin", `conformance-${h.digest("hex").slice(0, 16)}.test`);
  if (existsSync(bin)) return bin;
  say(`building the ${version} suite (go test -c ${suite.pkg} in ${suite.dir}) ...`);
  const start = Date.now();
  const b = run("go", ["test", "-c", "-trimpath", "-o", `${bin}.tmp`, suite.pkg], {
    cwd: suite.dir,
    env,
    timeoutMs: 1_800_000,
  });
  if (b.code !== 0) {
    rmSync(`${bin}.tmp`, { force: true });
    throw new RunError(`go test -c failed:\n${(b.stdout + b.stderr).slice(-3000)}`);
  }
  renameSync(`${bin}.tmp`, bin);
  say(`built ${bin} in ${elapsed(start)}`);
  return bin;
}

export function implementation() {
  const p = pkg as {
    version: string;
    homepage?: string;
    repository?: string | { url?: string };
    bugs?: string | { url?: string };
  };
  const repo = typeof p.repository === "string" ? p.repository : p.repository?.url;
  const url =
    process.env.KG_CONFORMANCE_URL ??
    p.homepage ??
    repo ??
    "https://github.com/kengine/kengine-gateway";
  const bugs = typeof p.bugs === "string" ? p.bugs : p.bugs?.url;
  const contact =
    process.env.KG_CONFORMANCE_CONTACT ?? bugs ?? `${url.replace(/\.git$/, "")}/issues`;
  return { organization: "kengine", project: "kengine-gateway", url, version: p.version, contact };
}

/** Runs the suite; resolves with the exit code. Output to logPath; progress lines to stdout. */
export function runSuite(
  bin: string,
  args: string[],
  logPath: string,
  onChild: (c: ChildProcess) => void,
  showSkips: boolean,
): Promise<number> {
  const log = createWriteStream(logPath);
  log.write(`# ${bin} ${args.join(" ")}\n`);
  const child = spawn(bin, args, {
    cwd: join(hack, "conformance"),
    env: { ...process.env, KUBECONFIG: kubeconfig },
    stdio: ["ignore", "pipe", "pipe"],
  });
  onChild(child);
  let partial = "";
  const progress = (d: Buffer) => {
    log.write(d);
    partial += d.toString();
    const lines = partial.split("\n");
    partial = lines.pop() ?? "";
    for (const l of lines) {
      // Top-level results of each conformance test, and the suite's setup steps.
      if (
        /^\s*--- (PASS|FAIL): TestConformance\/\S+/.test(l) ||
        /^=== RUN\s+TestConformance\/[^/\s]+$/.test(l) ||
        (showSkips && /^\s*--- SKIP: TestConformance\/\S+/.test(l)) ||
        l.includes(setupFailedMarker) ||
        /Test Setup: /.test(l) ||
        /^(FAIL|PASS|ok)\b/.test(l)
      ) {
        process.stdout.write(`  ${l.trim().replace(/^\S+\.go:\d+: /, "")}\n`);
      }
    }
  };
  child.stdout?.on("data", progress);
  child.stderr?.on("data", progress);
  return new Promise(resolve => {
    child.once("exit", (code, signal) => {
      log.end(() => resolve(code ?? (signal ? 128 : 1)));
    });
  });
}
