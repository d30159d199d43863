/**
 * The local cluster and the controller under test for npm run conformance (hack/conformance.ts):
 * kubectl, the cluster's lifecycle, the GatewayClass, the controller (pepr dev or deployed) and
 * the watch that no other pepr dev disturbs the run.
 */
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { deployModule, distIsFresh, peprNamespace, undeployModule } from "./deployed";
import { webhookName } from "./pepr-dev";

export const root = join(__dirname, "..");
export const hack = join(root, "hack");
export const reportsDir = join(root, "reports");
export const localDir = process.env.KG_LOCAL_DIR ?? join(root, ".local");
export const kubeconfig = join(localDir, "kubeconfig");
export const kubectlBin = join(localDir, "bin", "kubectl");
export const controllerName = "kengine.io/gateway-controller";

export const say = (msg: string) => process.stdout.write(`conformance: ${msg}\n`);
export const elapsed = (since: number) => {
  const s = Math.round((Date.now() - since) / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
};

/** A step that cannot complete: exit code 2 with this message. */
export class RunError extends Error {}

export function run(
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

export function kubectl(args: string[], input?: string) {
  const r = spawnSync(kubectlBin, ["--kubeconfig", kubeconfig, ...args], {
    input,
    encoding: "utf8",
    timeout: 60_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

export function clusterRunning(): boolean {
  const r = run("bash", [join(hack, "cluster.sh"), "status"], { timeoutMs: 30_000 });
  return /kube-apiserver\s+running/.test(r.stdout);
}

export function clusterUp(): void {
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
export function applyGatewayClass(name: string): boolean {
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

export async function waitForGatewayClass(name: string, timeoutS: number): Promise<string[]> {
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
export function otherPeprDevs(exclude: ReadonlySet<number> = new Set()): number[] {
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
export function watchForInterference(
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
export function clearGatewayClassStatus(name: string): void {
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
 * unless it is a build of the module's sources as they are (distIsFresh). Returns the clean-up: the admission and watcher
 * pods' logs to reports/conformance-controller.log, then removes what it applied (the CRDs and
 * pepr-system stay, as after tests/e2e/deployed.test.ts).
 */
export function deployController(): () => void {
  const skipBuild = distIsFresh();
  say(
    `controller: deploying the module (${skipBuild ? "dist/ is a build of the sources as they are, not rebuilt" : "npm run build"}; Pepr's pods in ${peprNamespace})`,
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
export async function waitForOldNamespaces(timeoutS: number): Promise<void> {
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
