/**
 * npm run conformance — the official Gateway API conformance suite against the local cluster
 * with the controller running. --version picks the suite's release: v1.6.1 (the default,
 * pinned in hack/go.mod) or v1.7.0 (pinned in hack/peers/conformance/go.mod, a module of its
 * own: it needs Go 1.27 and the Kubernetes 0.37 modules; see suiteVersions). The Gateway API
 * CRDs the cluster installs are v1.7.0's whichever suite runs.
 *
 *   1. hack/cluster.sh up (remembers whether the cluster was already running)
 *   2. npx pepr dev (hack/pepr-dev.ts) unless KG_CONTROLLER=external; with --deployed the
 *      module as `npx pepr deploy` installs it instead (hack/deployed.ts: dist/, rebuilt unless
 *      fresh, applied; Pepr's admission and watcher pods on the local kubelet, no pepr dev)
 *   3. GatewayClass `kengine` (controllerName kengine.io/gateway-controller); waits for
 *      Accepted=True (current generation) and a non-empty status.supportedFeatures
 *   4. builds the suite (hack/conformance/conformance_test.go, go test -c in the version's
 *      module) once into the peers cache, runs it; the output goes
 *      to reports/conformance.log, progress lines to stdout
 *   5. copies the suite's report to reports/conformance-report.yaml and prints a summary
 *   6. stops the controller (deployed: saves the pods' logs, removes what it applied);
 *      removes the GatewayClass if it created it; brings the cluster down only if it brought
 *      it up (KG_KEEP_CLUSTER=1 keeps it)
 *
 * Exit code: 0 when the suite completed and wrote its report (whatever the results), 1 with
 * --strict when any test failed, 2 when the run could not complete (cluster, controller,
 * GatewayClass, build, the suite stopped before writing a report, or another pepr dev
 * disturbed the run).
 *
 * Flags: --version=v1.6.1|v1.7.0  --profiles=GATEWAY-HTTP,GATEWAY-GRPC,GATEWAY-TLS  --deployed
 *        --run-test=NAME  --skip-tests=A,B
 *        --strict  --debug  --no-cleanup  --continue-after-setup-failure
 *        --timeout-overrides='Name:secs;...'
 *        --gateway-class=kengine  --gwc-timeout=SECONDS  --help
 *        --usable-address=IP  --unusable-address=IP   (GatewayStaticAddresses)
 */
import { ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  diagnoseLog,
  failureReasons,
  formatSummary,
  summarizeReportYaml,
} from "./conformance-summary";
import { deployModule, distIsFresh, peprNamespace, undeployModule } from "./deployed";
import { PeprDev, startPeprDev, webhookName } from "./pepr-dev";
import pkg from "../package.json";

const root = join(__dirname, "..");
const hack = join(root, "hack");
const reportsDir = join(root, "reports");
const localDir = process.env.KG_LOCAL_DIR ?? join(root, ".local");
const kubeconfig = join(localDir, "kubeconfig");
const kubectlBin = join(localDir, "bin", "kubectl");
const controllerName = "kengine.io/gateway-controller";
const defaultProfiles = "GATEWAY-HTTP,GATEWAY-GRPC,GATEWAY-TLS";
/** Logged by hack/conformance/conformance_test.go when setup failed and the tests ran anyway. */
const setupFailedMarker = "KENGINE-CONFORMANCE: SETUP FAILED";
/** Static addresses for GatewayStaticAddresses on the local load balancer (hack/kubelet/loadbalancer.ts). */
const defaultAddresses = { usable: "127.20.250.1", unusable: "192.0.2.1" };
const knownProfiles = [
  "GATEWAY-HTTP",
  "GATEWAY-GRPC",
  "GATEWAY-TLS",
  "GATEWAY-TCP",
  "GATEWAY-UDP",
  "MESH-HTTP",
  "MESH-GRPC",
];

/**
 * The suite releases this script can run. v1.6.1 is hack/go.mod's (the module the control plane
 * and echo-basic are built from); v1.7.0 has a module of its own, hack/peers/conformance,
 * because it needs Go 1.27 and the Kubernetes 0.37 modules (GOTOOLCHAIN=auto fetches the
 * toolchain its go.mod names from the module proxy).
 */
export const suiteVersions = {
  // The cluster installs v1.7.0's CRDs (hack/build-peers.sh); suite v1.6.1 refuses to run on
  // CRDs of another release, so its run installs v1.6.1's first (installSuiteCrds).
  "v1.6.1": { dir: hack, pkg: "./conformance", env: {}, images: false, crds: "v1.6.1" },
  "v1.7.0": {
    dir: join(hack, "peers", "conformance"),
    pkg: ".",
    env: { GOTOOLCHAIN: "auto" },
    images: true,
  },
} as const;
export type SuiteVersion = keyof typeof suiteVersions;
export const defaultVersion: SuiteVersion = "v1.6.1";

const usage = `usage: npm run conformance -- [flags]
  --profiles=LIST         conformance profiles (default ${defaultProfiles})
  --version=V             the suite's release: ${Object.keys(suiteVersions).join(" or ")} (default ${defaultVersion})
  --run-test=NAME         run one test (e.g. HTTPRouteSimpleSameNamespace); features still come from the GatewayClass
  --skip-tests=A,B        skip these tests (they are listed as skipped in the report)
  --deployed              run the module as \`npx pepr deploy\` installs it (dist/, rebuilt unless newer than the
                          sources; Pepr's controller image on the local kubelet) instead of \`pepr dev\`
  --strict                exit 1 when any test failed (default: 0 whenever the suite completed)
  --debug                 the suite's debug logging (request/response dumps)
  --continue-after-setup-failure
                          run the tests even if the suite's setup fails (e.g. one base Pod never Ready);
                          the report is then marked as measured against an incomplete setup
  --no-cleanup            keep the suite's base resources (namespaces gateway-conformance-*) afterwards
  --timeout-overrides=S   the suite's timeout overrides, e.g. 'GatewayMustHaveAddress:300;NamespacesMustBeReady:900'
  --gateway-class=NAME    GatewayClass to create and test (default kengine)
  --gwc-timeout=SECONDS   how long to wait for the GatewayClass to be Accepted with features (default 120)
  --usable-address=IP     the suite's -usable-address for GatewayStaticAddresses (default ${defaultAddresses.usable}:
                          outside the range the local load balancer hands out by itself, so always free)
  --unusable-address=IP   the suite's -unusable-address (default ${defaultAddresses.unusable}: the local load balancer
                          serves only 127.20.0.0/16)
environment:
  KG_CONTROLLER=external  do not start pepr dev (nor deploy with --deployed); a controller is already running against the cluster
  KG_KEEP_CLUSTER=1       leave the cluster running even if this run started it
  KG_LOCAL_DIR=DIR        use another local cluster instance (default .local/)
  KG_CONFORMANCE_URL, KG_CONFORMANCE_CONTACT   implementation url / contact for the report`;

interface Options {
  version: SuiteVersion;
  profiles: string;
  runTest?: string;
  skipTests?: string;
  strict: boolean;
  /** The module as `npx pepr deploy` installs it (hack/deployed.ts) instead of `pepr dev`. */
  deployed: boolean;
  debug: boolean;
  cleanup: boolean;
  continueAfterSetupFailure: boolean;
  timeoutOverrides?: string;
  gatewayClass: string;
  gwcTimeoutS: number;
  usableAddress: string;
  unusableAddress: string;
}

class UsageError extends Error {}

export function parseArgs(argv: readonly string[]): Options {
  const o: Options = {
    version: defaultVersion,
    profiles: defaultProfiles,
    strict: false,
    deployed: false,
    debug: false,
    cleanup: true,
    continueAfterSetupFailure: false,
    gatewayClass: "kengine",
    gwcTimeoutS: 120,
    usableAddress: defaultAddresses.usable,
    unusableAddress: defaultAddresses.unusable,
  };
  for (const a of argv) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(a);
    if (!m) throw new UsageError(`unexpected argument ${a}`);
    const [, name, value] = m;
    const need = (): string => {
      if (value === undefined || value === "")
        throw new UsageError(`--${name} needs a value (--${name}=...)`);
      return value;
    };
    switch (name) {
      case "profiles":
        o.profiles = need();
        for (const p of o.profiles.split(","))
          if (!knownProfiles.includes(p))
            throw new UsageError(`unknown profile ${p} (known: ${knownProfiles.join(", ")})`);
        break;
      case "version": {
        const v = need();
        if (!(v in suiteVersions))
          throw new UsageError(
            `unknown suite version ${v} (known: ${Object.keys(suiteVersions).join(", ")})`,
          );
        o.version = v as SuiteVersion;
        break;
      }
      case "run-test":
        o.runTest = need();
        break;
      case "skip-tests":
        o.skipTests = need();
        break;
      case "strict":
        o.strict = true;
        break;
      case "deployed":
        if (value !== undefined) throw new UsageError("--deployed takes no value");
        o.deployed = true;
        break;
      case "debug":
        o.debug = true;
        break;
      case "continue-after-setup-failure":
        o.continueAfterSetupFailure = true;
        break;
      case "no-cleanup":
        o.cleanup = false;
        break;
      case "timeout-overrides":
        o.timeoutOverrides = need();
        break;
      case "gateway-class":
        o.gatewayClass = need();
        break;
      case "gwc-timeout":
        o.gwcTimeoutS = Number(need());
        if (!Number.isFinite(o.gwcTimeoutS) || o.gwcTimeoutS <= 0)
          throw new UsageError("--gwc-timeout needs seconds > 0");
        break;
      case "usable-address":
        o.usableAddress = need();
        break;
      case "unusable-address":
        o.unusableAddress = need();
        break;
      case "help":
        throw new UsageError("");
      default:
        throw new UsageError(`unknown flag --${name}`);
    }
  }
  return o;
}

const say = (msg: string) => process.stdout.write(`conformance: ${msg}\n`);
const elapsed = (since: number) => {
  const s = Math.round((Date.now() - since) / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
};

/** A step that cannot complete: exit code 2 with this message. */
class RunError extends Error {}

function run(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
) {
  const r = spawnSync(cmd, args, {
    cwd: opts.cwd ?? root,
    env: opts.env ?? process.env,
    encoding: "utf8",
    timeout: opts.timeoutMs ?? 60_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return { code: r.status ?? -1, stdout: r.stdout ?? "", stderr: r.stderr ?? "", error: r.error };
}

function kubectl(args: string[], input?: string) {
  const r = spawnSync(kubectlBin, ["--kubeconfig", kubeconfig, ...args], {
    input,
    encoding: "utf8",
    timeout: 60_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

function clusterRunning(): boolean {
  const r = run("bash", [join(hack, "cluster.sh"), "status"], { timeoutMs: 30_000 });
  return /kube-apiserver\s+running/.test(r.stdout);
}

function clusterUp(): void {
  say(`cluster: hack/cluster.sh up (${localDir})`);
  // Inherit stdio: building peers can take minutes the first time and prints progress.
  const r = spawnSync("bash", [join(hack, "cluster.sh"), "up"], {
    cwd: root,
    stdio: "inherit",
    timeout: 1_800_000,
  });
  if (r.status !== 0)
    throw new RunError(`hack/cluster.sh up failed (exit ${r.status ?? r.signal})`);
}

interface GatewayClassStatus {
  exists: boolean;
  accepted?: { status: string; reason: string; message: string; current: boolean };
  features: string[];
  controllerName?: string;
}

function readGatewayClass(name: string): GatewayClassStatus {
  const r = kubectl(["get", "gatewayclass", name, "-o", "json"]);
  if (r.code !== 0) return { exists: false, features: [] };
  const gwc = JSON.parse(r.stdout);
  const cond = (gwc.status?.conditions ?? []).find((c: { type: string }) => c.type === "Accepted");
  return {
    exists: true,
    controllerName: gwc.spec?.controllerName,
    accepted: cond && {
      status: cond.status,
      reason: cond.reason ?? "",
      message: cond.message ?? "",
      current: cond.observedGeneration === gwc.metadata?.generation,
    },
    features: (gwc.status?.supportedFeatures ?? []).map((f: { name: string }) => f.name),
  };
}

/** Applies the GatewayClass; returns whether this run created it. */
function applyGatewayClass(name: string): boolean {
  const before = readGatewayClass(name);
  if (before.exists && before.controllerName !== controllerName) {
    throw new RunError(
      `GatewayClass ${name} exists with controllerName ${before.controllerName}, not ${controllerName}`,
    );
  }
  const manifest = JSON.stringify({
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "GatewayClass",
    metadata: { name },
    spec: { controllerName },
  });
  const r = kubectl(["apply", "-f", "-"], manifest);
  if (r.code !== 0) throw new RunError(`cannot apply GatewayClass ${name}: ${r.stderr.trim()}`);
  return !before.exists;
}

async function waitForGatewayClass(name: string, timeoutS: number): Promise<string[]> {
  const deadline = Date.now() + timeoutS * 1000;
  let s = readGatewayClass(name);
  for (;;) {
    const ok = s.accepted?.status === "True" && s.accepted.current && s.features.length > 0;
    if (ok) return s.features;
    if (Date.now() > deadline) break;
    await new Promise(r => setTimeout(r, 1000));
    s = readGatewayClass(name);
  }
  const what: string[] = [];
  if (!s.accepted)
    what.push("no Accepted condition (is the controller running and does it own this class?)");
  else if (s.accepted.status !== "True")
    what.push(
      `Accepted=${s.accepted.status} reason=${s.accepted.reason} message=${JSON.stringify(s.accepted.message)}`,
    );
  else if (!s.accepted.current)
    what.push("Accepted condition is for an older generation (observedGeneration stale)");
  if (s.features.length === 0)
    what.push("status.supportedFeatures is empty (the controller must advertise its features)");
  throw new RunError(
    `GatewayClass ${name} (controllerName ${controllerName}) not ready after ${timeoutS}s: ${what.join("; ")}`,
  );
}

/**
 * Pids of `pepr dev` processes other than ours (and their parents: npx, sh) in our network
 * namespace: one in another namespace has its own port 3000 and cluster, so it cannot disturb.
 */
function otherPeprDevs(exclude: ReadonlySet<number> = new Set()): number[] {
  const r = run(
    "pgrep",
    ["--ns", String(process.pid), "--nslist", "net", "-f", "pepr/dist/cli\\.js dev"],
    {
      timeoutMs: 10_000,
    },
  );
  return r.stdout
    .split("\n")
    .map(Number)
    .filter(p => p > 0 && p !== process.pid && !exclude.has(p));
}

/** What identifies our controller's webhook registration: its caBundle(s). */
function webhookFingerprint(): string {
  const r = kubectl([
    "get",
    "validatingwebhookconfiguration",
    webhookName,
    "--ignore-not-found",
    "-o",
    "jsonpath={.metadata.uid}{range .webhooks[*]}/{.clientConfig.caBundle}{end}",
  ]);
  return r.code === 0 ? r.stdout.trim() : "";
}

/**
 * Watches, during the run, that nobody else's pepr dev starts and that our webhook
 * registration stays ours. Returns a function giving the first disturbance seen, if any.
 */
function watchForInterference(
  ourPeprPids: ReadonlySet<number>,
  external: boolean,
): { stop(): string | undefined } {
  const fingerprint = external ? "" : webhookFingerprint();
  let disturbance: string | undefined;
  const check = () => {
    if (disturbance) return;
    const at = new Date().toISOString();
    const others = external ? [] : otherPeprDevs(ourPeprPids);
    if (others.length > 0)
      disturbance = `${at}: another pepr dev started (pid ${others.join(", ")})`;
    else if (!external && webhookFingerprint() !== fingerprint)
      disturbance = `${at}: the webhook registration ${webhookName} was replaced or removed by someone else`;
    if (disturbance) say(`WARNING: ${disturbance}; the results of this run are not reliable`);
  };
  const timer = setInterval(check, 5000);
  return {
    stop() {
      clearInterval(timer);
      check();
      return disturbance;
    },
  };
}

/**
 * Status left by an earlier controller (e.g. an older supportedFeatures list) would satisfy
 * waitForGatewayClass before this run's controller has written its own: clears it.
 */
function clearGatewayClassStatus(name: string): void {
  if (!readGatewayClass(name).exists) return;
  kubectl([
    "patch",
    "gatewayclass",
    name,
    "--subresource=status",
    "--type=merge",
    "-p",
    '{"status":null}',
  ]);
}

/**
 * --deployed: the module as `npx pepr deploy` installs it (hack/deployed.ts), dist/ rebuilt
 * unless newer than the module's sources. Returns the clean-up: the admission and watcher
 * pods' logs to reports/conformance-controller.log, then removes what it applied (the CRDs and
 * pepr-system stay, as after tests/e2e/deployed.test.ts).
 */
function deployController(): () => void {
  const skipBuild = distIsFresh();
  say(
    `controller: deploying the module (${skipBuild ? "dist/ is newer than its sources, not rebuilt" : "npm run build"}; Pepr's pods in ${peprNamespace})`,
  );
  const t0 = Date.now();
  const d = deployModule({
    kubeconfig,
    kubectl: kubectlBin,
    skipBuild,
    say: m => say(`controller: ${m}`),
  });
  const undeploy = () => undeployModule({ kubeconfig, kubectl: kubectlBin });
  if (!d.ok) {
    undeploy();
    throw new RunError(`deployed mode: ${d.error}`);
  }
  say(
    `controller: ${skipBuild ? "" : `built in ${d.buildSeconds} s, `}Pepr's admission and watcher pods Available after ${d.rolloutSeconds} s (ready in ${elapsed(t0)})`,
  );
  return () => {
    const controllerLog = join(reportsDir, "conformance-controller.log");
    // Every pod of both Deployments (two admission replicas), each line prefixed by its pod.
    const logs = ["admission", "watcher"].map(c => {
      const args = ["logs", "-n", peprNamespace, "-l", `pepr.dev/controller=${c}`];
      const more = ["--all-containers", "--prefix", "--tail=-1", "--max-log-requests=10"];
      const r = run(kubectlBin, ["--kubeconfig", kubeconfig, ...args, ...more], {
        timeoutMs: 120_000,
      });
      return `# kubectl ${[...args, ...more].join(" ")}\n${r.stdout}${r.stderr}`;
    });
    writeFileSync(controllerLog, logs.join("\n"));
    say(`controller: Pepr's pod logs in ${controllerLog}; removing the deployed module`);
    undeploy();
  };
}

/** The suite's base namespaces must not be terminating (left over from a previous run). */
async function waitForOldNamespaces(timeoutS: number): Promise<void> {
  const names = [
    "gateway-conformance-infra",
    "gateway-conformance-app-backend",
    "gateway-conformance-web-backend",
  ];
  const deadline = Date.now() + timeoutS * 1000;
  let said = false;
  for (;;) {
    const r = kubectl([
      "get",
      "namespace",
      ...names,
      "--ignore-not-found",
      "-o",
      "jsonpath={range .items[?(@.status.phase=='Terminating')]}{.metadata.name} {end}",
    ]);
    const terminating = r.stdout.trim();
    if (r.code === 0 && terminating === "") return;
    if (Date.now() > deadline) {
      throw new RunError(
        `namespaces still terminating from a previous run after ${timeoutS}s: ${terminating || r.stderr.trim()}`,
      );
    }
    if (!said) say(`waiting for namespaces of a previous run to go away: ${terminating}`);
    said = true;
    await new Promise(res => setTimeout(res, 2000));
  }
}

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
function buildTestBinary(version: SuiteVersion): string {
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

function implementation() {
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
function runSuite(
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

async function main(): Promise<number> {
  let opts: Options;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    if (e instanceof UsageError) {
      if (e.message) process.stderr.write(`conformance: ${e.message}\n`);
      process.stderr.write(`${usage}\n`);
      return e.message ? 2 : 0;
    }
    throw e;
  }

  const started = Date.now();
  const cleanups: Array<() => Promise<void> | void> = [];
  let child: ChildProcess | undefined;
  let interrupted = false;
  const onSignal = (sig: NodeJS.Signals) => {
    interrupted = true;
    say(`${sig}: stopping`);
    child?.kill("SIGTERM");
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  try {
    mkdirSync(reportsDir, { recursive: true });
    const wasRunning = clusterRunning();
    clusterUp();
    if (!wasRunning && process.env.KG_KEEP_CLUSTER !== "1") {
      cleanups.push(() => {
        say("cluster: hack/cluster.sh down (this run brought it up)");
        spawnSync("bash", [join(hack, "cluster.sh"), "down"], {
          cwd: root,
          stdio: "inherit",
          timeout: 300_000,
        });
      });
    }
    if (interrupted) throw new RunError("interrupted");

    // Build first: a broken build should not leave a controller running.
    const bin = buildTestBinary(opts.version);
    installSuiteCrds(opts.version);

    let controller: PeprDev | undefined;
    const ourPeprPids = new Set<number>();
    if (process.env.KG_CONTROLLER === "external") {
      say(
        `controller: KG_CONTROLLER=external, not ${opts.deployed ? "deploying" : "starting pepr dev"}`,
      );
    } else {
      // Another pepr dev (someone's test) would replace our webhook registration mid-run.
      const others = otherPeprDevs();
      if (others.length > 0) {
        throw new RunError(
          `another pepr dev is running (pid ${others.join(", ")}): it would take over the webhook during the run. ` +
            "Wait for it to finish, or set KG_CONTROLLER=external to measure the controller that is already running.",
        );
      }
      clearGatewayClassStatus(opts.gatewayClass);
    }
    if (process.env.KG_CONTROLLER !== "external" && opts.deployed) {
      cleanups.push(deployController());
    } else if (process.env.KG_CONTROLLER !== "external") {
      // pepr dev serves its webhooks on port 3000; a second one would fail to start.
      const busy = run("ss", ["-Hltn", "sport = :3000"], { timeoutMs: 10_000 });
      if (busy.code === 0 && busy.stdout.trim() !== "") {
        throw new RunError(
          "port 3000 is in use: another pepr dev (or module) seems to be running against a cluster. Stop it, " +
            "or set KG_CONTROLLER=external to measure the controller that is already running.",
        );
      }
      const controllerLog = join(reportsDir, "conformance-controller.log");
      say(`controller: starting npx pepr dev (output in ${controllerLog})`);
      const t0 = Date.now();
      const out = createWriteStream(controllerLog);
      controller = await startPeprDev({ kubeconfig, kubectl: kubectlBin, echo: out });
      for (const p of otherPeprDevs()) ourPeprPids.add(p);
      cleanups.push(async () => {
        say("controller: stopping pepr dev");
        await controller?.stop();
        out.end();
      });
      say(`controller: ready in ${elapsed(t0)}`);
    }
    if (interrupted) throw new RunError("interrupted");

    await waitForOldNamespaces(300);
    const created = applyGatewayClass(opts.gatewayClass);
    if (created) {
      cleanups.push(() => {
        if (process.env.KG_KEEP_CLUSTER === "1" || !opts.cleanup) return;
        kubectl([
          "delete",
          "gatewayclass",
          opts.gatewayClass,
          "--ignore-not-found",
          "--wait=false",
        ]);
      });
    }
    say(
      `GatewayClass ${opts.gatewayClass}: waiting up to ${opts.gwcTimeoutS}s for Accepted and supportedFeatures`,
    );
    const features = await waitForGatewayClass(opts.gatewayClass, opts.gwcTimeoutS);
    say(
      `GatewayClass ${opts.gatewayClass}: Accepted; supportedFeatures (${features.length}): ${features.join(", ")}`,
    );

    const work = mkdtempSync(join(tmpdir(), "kg-conformance-"));
    cleanups.push(() => rmSync(work, { recursive: true, force: true }));
    const reportTmp = join(work, "report.yaml");
    const impl = implementation();
    const args = [
      "-test.v",
      "-test.run=^TestConformance$",
      "-test.timeout=6h",
      "-test.count=1",
      `-gateway-class=${opts.gatewayClass}`,
      `-conformance-profiles=${opts.profiles}`,
      `-report-output=${reportTmp}`,
      `-organization=${impl.organization}`,
      `-project=${impl.project}`,
      `-url=${impl.url}`,
      `-version=${impl.version}`,
      `-contact=${impl.contact}`,
      `-cleanup-base-resources=${opts.cleanup}`,
      `-cleanup-test-resources=true`,
      `-usable-address=${opts.usableAddress}`,
      `-unusable-address=${opts.unusableAddress}`,
    ];
    if (opts.runTest) args.push(`-run-test=${opts.runTest}`);
    if (opts.skipTests) args.push(`-skip-tests=${opts.skipTests}`);
    if (opts.debug) args.push("-debug");
    if (opts.continueAfterSetupFailure) args.push("-kengine.continue-after-setup-failure");
    if (opts.timeoutOverrides) args.push(`-timeout-config-overrides=${opts.timeoutOverrides}`);

    const logPath = join(reportsDir, "conformance.log");
    say(
      `suite: ${opts.version}, running profiles ${opts.profiles}${opts.runTest ? `, test ${opts.runTest}` : ""} (log: ${logPath})`,
    );
    const watch = watchForInterference(ourPeprPids, process.env.KG_CONTROLLER === "external");
    const t0 = Date.now();
    const code = await runSuite(bin, args, logPath, c => (child = c), !opts.runTest);
    child = undefined;
    const suiteTime = elapsed(t0);
    const disturbed = watch.stop();
    say(`suite: exited ${code} after ${suiteTime} (total ${elapsed(started)})`);

    if (interrupted && opts.cleanup) {
      // The suite was killed before its own cleanup: remove its base namespaces.
      say("interrupted: deleting the suite's namespaces");
      kubectl([
        "delete",
        "namespace",
        "gateway-conformance-infra",
        "gateway-conformance-app-backend",
        "gateway-conformance-web-backend",
        "--ignore-not-found",
        "--wait=false",
      ]);
    }
    if (!existsSync(reportTmp)) {
      const why = diagnoseLog(readFileSync(logPath, "utf8"));
      throw new RunError(
        `the suite wrote no report${interrupted ? " (interrupted)" : ""}: it stopped before running the tests.\n` +
          (why.length
            ? `last messages from ${logPath}:\n${why.map(l => `  ${l}`).join("\n")}`
            : `see ${logPath}`),
      );
    }
    // A disturbed run's report must not replace the last good one.
    const reportPath = join(
      reportsDir,
      disturbed ? "conformance-report.disturbed.yaml" : "conformance-report.yaml",
    );
    copyFileSync(reportTmp, reportPath);
    const summary = summarizeReportYaml(readFileSync(reportPath, "utf8"));
    process.stdout.write(`\n${formatSummary(summary)}\n\n`);
    const logText = readFileSync(logPath, "utf8");
    if (summary.failedTests.length > 0) {
      const reasons = failureReasons(logText, summary.failedTests);
      process.stdout.write("first error of each failed test (full output in the log):\n");
      for (const [t, r] of reasons)
        process.stdout.write(`  ${t}: ${r || "(no testify error found)"}\n`);
      process.stdout.write("\n");
    }
    if (logText.includes(setupFailedMarker)) {
      const why = diagnoseLog(logText.slice(0, logText.indexOf(setupFailedMarker)));
      say(
        "WARNING: the suite's setup FAILED and the tests ran anyway (--continue-after-setup-failure); " +
          "these results are measured against an incomplete setup. Setup stopped at:\n" +
          why.map(l => `  ${l}`).join("\n"),
      );
    }
    say(`report: ${reportPath}; suite ran ${suiteTime}`);
    if (disturbed) {
      throw new RunError(
        `the run was disturbed (${disturbed}); its report is in ${reportPath}, reports/conformance-report.yaml is unchanged`,
      );
    }
    if (opts.strict && summary.totalFailed > 0) {
      say(`--strict: ${summary.failedTests.length} test(s) failed`);
      return 1;
    }
    return 0;
  } catch (e) {
    if (e instanceof RunError) {
      process.stderr.write(`conformance: ERROR: ${e.message}\n`);
      return 2;
    }
    process.stderr.write(
      `conformance: ERROR: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
    );
    return 2;
  } finally {
    for (const c of cleanups.reverse()) {
      try {
        await c();
      } catch (e) {
        process.stderr.write(
          `conformance: cleanup: ${e instanceof Error ? e.message : String(e)}\n`,
        );
      }
    }
  }
}

if (require.main === module) {
  main().then(
    code => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`conformance: ERROR: ${String(e)}\n`);
      process.exit(2);
    },
  );
}
