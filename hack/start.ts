/**
 * `npm start`: the local platform, the controller (`pepr dev`) and a sample Gateway with an
 * echo backend. Prints a working curl line; Ctrl-C stops everything it started.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { request as httpsRequest } from "node:https";
import { join } from "node:path";
import { main as kubectlKengine } from "../cli/main";
import { deployModule, distIsFresh } from "./deployed";
import { Pebble, startPebble } from "./pebble";
import { mirrorModule, moduleCopy, startPeprDev } from "./pepr-dev";

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
/** A jsonpath of the sample Gateway `demo`. */
const demo = (path: string): string =>
  kubectl("get", "gateway", "demo", "-n", "kengine-demo", "-o", `jsonpath=${path}`).stdout.trim();
const addressOf = (): string => demo("{.status.addresses[0].value}");

const HTTPS_HOST = "demo.kengine.local";
/** The sample Ingress's host (hack/samples/demo-ingress.yaml). */
const INGRESS_HOST = "ingress.kengine.local";

/**
 * Whether the sample answers 200 through the Gateway's address (the curl lines we print):
 * over HTTP, or over HTTPS with the certificate trusted by `root` (the local ACME CA's).
 */
const served = (address: string, root?: string, host = HTTPS_HOST): Promise<boolean> =>
  new Promise(resolve => {
    const common = { host: address, path: "/", headers: { Host: host }, timeout: 2000 };
    const answered = (res: { statusCode?: number; resume(): void }) => {
      res.resume();
      resolve(res.statusCode === 200);
    };
    const req =
      root === undefined
        ? request({ ...common, port: 80 }, answered)
        : httpsRequest(
            { ...common, port: 443, servername: host, ca: root, agent: false },
            answered,
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
  // The local ACME CA; its DNS resolves the sample's HTTPS name to the Gateway's address.
  let gatewayAddress: string | undefined;
  const pebble: Pebble = await startPebble({
    dir: join(local, "pebble"),
    resolve: name =>
      name === HTTPS_HOST ? (gatewayAddress ??= addressOf() || undefined) : undefined,
  });
  say(`local ACME CA (Pebble) at ${pebble.directory}`);
  // Deployed, no child process keeps this one alive until Ctrl-C (which takes the cluster down).
  const keepAlive = deployed ? setInterval(() => undefined, 3_600_000) : undefined;
  // `pepr dev` runs from a copy of the module that follows edits of the repository (ready in
  // about a quarter of the time: in the repository it lints, formats and type-checks the whole
  // project first, docs/development.md).
  const moduleDir = deployed ? undefined : moduleCopy("kg-start-");
  const unmirror = moduleDir ? mirrorModule(moduleDir) : undefined;
  if (moduleDir) process.on("exit", () => rmSync(moduleDir, { recursive: true, force: true }));
  const dev = deployed
    ? { stop: async () => clearInterval(keepAlive) }
    : await startPeprDev({
        kubeconfig,
        kubectl: kubectlBin,
        moduleDir,
        echo: process.env.KG_VERBOSE ? process.stdout : undefined,
      });

  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say("stopping");
    await dev.stop();
    unmirror?.();
    await pebble.close();
    if (process.env.KG_KEEP_CLUSTER !== "1") cluster("down");
    process.exit(code);
  };
  process.on("SIGINT", () => void stop(0));
  process.on("SIGTERM", () => void stop(0));

  if (deployed) {
    // A build of the sources as they are is what `npm run build` would write again.
    const skipBuild = distIsFresh();
    if (skipBuild) say("dist/ is a build of the module's sources as they are: not rebuilding it");
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
  const https = readFileSync(join(root, "hack", "samples", "demo-https.yaml"), "utf8")
    .replaceAll("PEBBLE_DIRECTORY", pebble.directory)
    .replaceAll("PEBBLE_TLS_CA", JSON.stringify(pebble.tlsCaPem));
  const httpsApplied = spawnSync(kubectlBin, ["--kubeconfig", kubeconfig, "apply", "-f", "-"], {
    encoding: "utf8",
    input: https,
  });
  if (httpsApplied.status !== 0) {
    process.stderr.write(httpsApplied.stderr);
    return stop(1);
  }
  const ingressApplied = kubectl("apply", "-f", join(root, "hack", "samples", "demo-ingress.yaml"));
  if (ingressApplied.status !== 0) {
    process.stderr.write(ingressApplied.stderr);
    return stop(1);
  }
  say(
    "sample applied: namespace kengine-demo (echo Deployment, Gateway demo with HTTP and automatic HTTPS, HTTPRoute echo, IngressClass kengine served by that Gateway, Ingress echo)",
  );

  const hasNode = kubectl("get", "node", "kengine-local").status === 0;
  if (!hasNode) {
    say("no node yet (kengine-local): pods will not run. Press Ctrl-C to stop.");
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
    const programmed = demo("{.status.conditions[?(@.type=='Programmed')].status}");
    const addr = addressOf();
    // Programmed can precede the load balancer forwarding to the (just Ready) proxies.
    if (programmed === "True" && addr && (await served(addr))) {
      say(
        `ready after ${Math.round((Date.now() - began) / 1000)} s. Try:\n\n  curl -H 'Host: demo.kengine.local' http://${addr}/\n`,
      );
      await ingressLine(addr);
      await httpsLine(addr, pebble);
      say(
        "inspect: kubectl --kubeconfig .local/kubeconfig get gateway,httproute,pods -n kengine-demo",
      );
      await pluginStatus();
      say("Ctrl-C stops everything.");
      return;
    }
    await sleep(1000);
  }
  const why = demo("{.status.conditions[?(@.type=='Programmed')].message}");
  say(
    `the Gateway is not programmed after 3 minutes: ${why || "no status yet"}. Logs: .local/logs/, KG_VERBOSE=1 shows the module's.`,
  );
  say("Ctrl-C stops everything.");
}

/** Waits (1 minute at most) for the sample Ingress to answer and prints its curl line. */
async function ingressLine(addr: string): Promise<void> {
  for (let i = 0; i < 60; i++) {
    if (await served(addr, undefined, INGRESS_HOST)) {
      say(`the sample Ingress: curl -H 'Host: ${INGRESS_HOST}' http://${addr}/\n`);
      return;
    }
    await sleep(1000);
  }
  say(
    "the sample Ingress does not answer after 1 minute: kubectl --kubeconfig .local/kubeconfig describe ingress echo -n kengine-demo",
  );
}

/** The kubectl plugin's line for the demo Gateway (docs/operations.md §8, `kubectl kengine`). */
async function pluginStatus(): Promise<void> {
  say(
    "kubectl kengine status -n kengine-demo (the plugin npm run build writes to dist/kubectl-kengine):",
  );
  try {
    await kubectlKengine(["status", "-n", "kengine-demo", "--kubeconfig", kubeconfig]);
  } catch (e) {
    say(`kubectl kengine status failed: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Waits (2 minutes at most) for the automatic certificate and prints the https curl line. */
async function httpsLine(addr: string, pebble: Pebble): Promise<void> {
  say("waiting for the HTTPS listener's certificate from the local ACME CA");
  const root = await pebble.root();
  const rootFile = join(local, "pebble", "root.pem");
  writeFileSync(rootFile, root);
  for (let i = 0; i < 120; i++) {
    if (await served(addr, root)) {
      say(
        `automatic HTTPS ready after ${Math.round((Date.now() - began) / 1000)} s (certificate issued by Pebble). Try:\n\n  curl --cacert ${rootFile} --resolve ${HTTPS_HOST}:443:${addr} https://${HTTPS_HOST}/\n`,
      );
      return;
    }
    await sleep(1000);
  }
  const why = demo(
    "{.status.listeners[?(@.name=='https')].conditions[?(@.type=='Programmed')].message}",
  );
  say(`no certificate after 2 minutes: ${why || "no listener status yet"}`);
}

main().catch(e => {
  process.stderr.write(`start: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
