/**
 * `npm start`: the local platform, the controller (`pepr dev`) and a sample Gateway with an
 * echo backend. Prints a working curl line; Ctrl-C stops everything it started.
 */
import { spawnSync } from "node:child_process";
import { request } from "node:http";
import { join } from "node:path";
import { deployModule, distIsFresh } from "./deployed";
import { startPeprDev } from "./pepr-dev";

const root = join(__dirname, "..");
const local = process.env.KG_LOCAL_DIR ?? join(root, ".local");
const kubeconfig = join(local, "kubeconfig");
const kubectlBin = join(local, "bin", "kubectl");

const began = Date.now();
const say = (msg: string) => process.stdout.write(`start: ${msg}\n`);
const cluster = (cmd: "up" | "down") => {
  const r = spawnSync("bash", [join(root, "hack", "cluster.sh"), cmd], { stdio: "inherit" });
  if (r.status !== 0) throw new Error(`hack/cluster.sh ${cmd} failed (exit ${r.status})`);
};
const kubectl = (...args: string[]) =>
  spawnSync(kubectlBin, ["--kubeconfig", kubeconfig, ...args], {
    encoding: "utf8",
    timeout: 180_000,
  });
const sleep = (ms: number) => new Promise(r => setTimeout(r, ms));

/** Whether the sample answers through the Gateway's address (the curl line we print). */
const served = (address: string): Promise<boolean> =>
  new Promise(resolve => {
    const req = request(
      {
        host: address,
        port: 80,
        path: "/",
        headers: { Host: "demo.kengine.local" },
        timeout: 2000,
      },
      res => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(false));
    req.end();
  });

async function main(): Promise<void> {
  say(
    "bringing up the local cluster (a first run builds its peers: hack/build-peers.sh says what and about how long)",
  );
  cluster("up");
  // --deployed: the module as a cluster runs it (hack/deployed.ts), no `pepr dev` process.
  const deployed = process.argv.includes("--deployed");
  say(
    `cluster up after ${Math.round((Date.now() - began) / 1000)} s; ` +
      (deployed
        ? "deploying the built module (Pepr's controller image in pepr-system)"
        : "starting the controller with `pepr dev` (builds the module)"),
  );
  // Deployed, no child process keeps this one alive until Ctrl-C (which takes the cluster down).
  const keepAlive = deployed ? setInterval(() => undefined, 3_600_000) : undefined;
  const dev = deployed
    ? { stop: async () => clearInterval(keepAlive) }
    : await startPeprDev({
        kubeconfig,
        kubectl: kubectlBin,
        echo: process.env.KG_VERBOSE ? process.stdout : undefined,
      });
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say("stopping");
    await dev.stop();
    if (process.env.KG_KEEP_CLUSTER !== "1") cluster("down");
    process.exit(code);
  };
  process.on("SIGINT", () => void stop(0));
  process.on("SIGTERM", () => void stop(0));

  if (deployed) {
    // dist/ newer than every module source is what `npm run build` would write again.
    const skipBuild = distIsFresh();
    if (skipBuild) say("dist/ is newer than the module's sources: not rebuilding it");
    const d = deployModule({ kubeconfig, kubectl: kubectlBin, say, skipBuild });
    if (!d.ok) {
      process.stderr.write(`start: ${d.error}\n`);
      return stop(1);
    }
    say(
      `${skipBuild ? "" : `module built in ${d.buildSeconds} s, `}Pepr's pods Available after ${d.rolloutSeconds} s (kubectl -n pepr-system get pods)`,
    );
  }

  const applied = kubectl("apply", "-f", join(root, "hack", "samples", "demo.yaml"));
  if (applied.status !== 0) {
    process.stderr.write(applied.stderr);
    return stop(1);
  }
  say("sample applied: namespace kengine-demo (echo Deployment, Gateway demo, HTTPRoute echo)");

  const hasNode = kubectl("get", "node", "kengine-local").status === 0;
  if (!hasNode) {
    say("no local kubelet yet: pods will not run. Press Ctrl-C to stop.");
    return;
  }
  const avail = kubectl(
    "wait",
    "-n",
    "kengine-demo",
    "--for=condition=Available",
    "deployment/echo",
    "--timeout=120s",
  );
  if (avail.status !== 0) say(`echo backend not available yet: ${avail.stderr.trim()}`);

  // The controller provisions the Gateway's proxies; it is ready when they run its config.
  say("waiting for the Gateway's proxies to be programmed");
  for (let i = 0; i < 180; i++) {
    const programmed = kubectl(
      "get",
      "gateway",
      "demo",
      "-n",
      "kengine-demo",
      "-o",
      "jsonpath={.status.conditions[?(@.type=='Programmed')].status}",
    ).stdout.trim();
    const addr = kubectl(
      "get",
      "gateway",
      "demo",
      "-n",
      "kengine-demo",
      "-o",
      "jsonpath={.status.addresses[0].value}",
    ).stdout.trim();
    // Programmed can precede the load balancer forwarding to the (just Ready) proxies.
    if (programmed === "True" && addr && (await served(addr))) {
      say(
        `ready after ${Math.round((Date.now() - began) / 1000)} s. Try:\n\n  curl -H 'Host: demo.kengine.local' http://${addr}/\n`,
      );
      say(
        "inspect: kubectl --kubeconfig .local/kubeconfig get gateway,httproute,pods -n kengine-demo",
      );
      say("Ctrl-C stops everything.");
      return;
    }
    await sleep(1000);
  }
  const why = kubectl(
    "get",
    "gateway",
    "demo",
    "-n",
    "kengine-demo",
    "-o",
    "jsonpath={.status.conditions[?(@.type=='Programmed')].message}",
  ).stdout.trim();
  say(
    `the Gateway is not programmed after 3 minutes: ${why || "no status yet"}. Logs: .local/logs/, KG_VERBOSE=1 shows the module's.`,
  );
  say("Ctrl-C stops everything.");
}

main().catch(e => {
  process.stderr.write(`start: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
