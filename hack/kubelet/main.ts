/**
 * The kengine-local kubelet: registers the node, binds and runs Pods as local processes in
 * their own network namespaces, serves container logs, and gives LoadBalancer Services a
 * loopback address. Started by hack/cluster.sh up; see hack/kubelet/README.md.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Api } from "./api";
import { ApiService, ApiServiceForwarder, upstreamOf } from "./apiservice";
import { parseArgs } from "./args";
import { Binder } from "./binder";
import { EventRecorder } from "./events";
import { bridgeIP, Ipam, podCIDR } from "./ipam";
import { loadKubeconfig } from "./kubeconfig";
import { LoadBalancers } from "./loadbalancer";
import { logger as log } from "./log";
import { LogServer } from "./logserver";
import { ensureBridge, netnsList, removeNetns } from "./network";
import { NodeAgent } from "./node";
import { OciLayout } from "./oci";
import type { InstalledPepr } from "./pepr-image";
import { PodManager } from "./pods";

const machineLock = "/run/kengine-local-kubelet.json";

/** The pepr package this repository installed: what Pepr's controller image runs here. */
function installedPepr(): InstalledPepr | undefined {
  const nodeModules = join(__dirname, "..", "..", "node_modules");
  try {
    const pkg = JSON.parse(readFileSync(join(nodeModules, "pepr", "package.json"), "utf8")) as {
      version: string;
    };
    return { version: pkg.version, nodeModules, node: process.execPath };
  } catch {
    return undefined;
  }
}

/** The other live kubelet holding the machine lock, if any. */
function runningKubelet(): { pid: number; state: string } | undefined {
  try {
    const held = JSON.parse(readFileSync(machineLock, "utf8")) as { pid: number; state: string };
    if (held.pid === process.pid) return undefined;
    const cmdline = readFileSync(`/proc/${held.pid}/cmdline`, "utf8");
    return cmdline.includes("hack/kubelet/main.ts") ? held : undefined;
  } catch {
    return undefined; // no lock, or its process is gone
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  // Pod networking (kg-br0, kg-* namespaces, 10.244.0.1:10250) is machine-wide: one kubelet only.
  const other = runningKubelet();
  if (other) {
    throw new Error(
      `another local kubelet (pid ${other.pid}, state ${other.state}) owns this machine's pod network; ` +
        `stop it first (or start this cluster with KG_NO_KUBELET=1)`,
    );
  }
  writeFileSync(machineLock, JSON.stringify({ pid: process.pid, state: args.state }));
  mkdirSync(args.state, { recursive: true });
  writeFileSync(join(args.state, "kubelet.pid"), String(process.pid));
  const creds = loadKubeconfig(args.kubeconfig);
  const api = new Api(creds, log);
  const controllers = new Api(loadKubeconfig(args.controllersKubeconfig), log);

  // Whatever a previous run left (it crashed or was killed) is restarted from scratch.
  for (const ns of await netnsList()) await removeNetns(ns);
  await ensureBridge();
  const forwarder = new ApiServiceForwarder(api, upstreamOf(creds.server), log);
  let apiService: ApiService | undefined;
  try {
    apiService = await forwarder.start();
  } catch (e) {
    log.warn(`pods get no in-cluster API access: ${String(e)}`);
  }
  const pepr = installedPepr();

  const logServer = new LogServer(
    {
      host: bridgeIP,
      port: args.port,
      cert: args.tlsCert ? readFileSync(args.tlsCert) : creds.cert,
      key: args.tlsKey ? readFileSync(args.tlsKey) : creds.key,
      ca: args.clientCA ? readFileSync(args.clientCA) : creds.ca,
    },
    log,
  );
  const node = new NodeAgent(
    api,
    { name: args.nodeName, internalIP: bridgeIP, port: args.port, podCIDR, maxPods: 110 },
    log,
  );
  const ipam = new Ipam(join(args.state, "ipam.json"));
  const pods = new PodManager(
    api,
    args.nodeName,
    {
      api,
      log,
      ipam,
      peersBin: args.peers,
      ...(args.images
        ? {
            images: new OciLayout(
              args.images,
              args.imageCache ?? join(args.images, "..", "rootfs"),
            ),
          }
        : {}),
      ...(pepr ? { pepr } : {}),
      ...(apiService ? { apiService } : {}),
      stateDir: args.state,
      hostIP: bridgeIP,
      events: new EventRecorder(api, args.nodeName, log),
    },
    log,
  );
  logServer.setPods(pods);
  await logServer.listen();
  await node.register();
  node.run();
  const podInformer = pods.start();
  await podInformer.hasSynced();
  ipam.retain(new Set([...podInformer.cache.values()].map(p => p.metadata.uid ?? "")));
  new Binder(controllers, args.nodeName, log).start();
  const lbs = new LoadBalancers(controllers, log);
  lbs.start();
  log.info(
    `kubelet ready: node ${args.nodeName}, pods on ${podCIDR}, logs on https://${bridgeIP}:${args.port}`,
  );

  let stopping = false;
  const shutdown = (sig: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${sig}: stopping pods`);
    node.stop();
    lbs.stop();
    forwarder.stop();
    const hard = setTimeout(() => process.exit(1), 8000);
    void Promise.all([
      pods.stopAll(3000),
      node.markNotReady().catch(e => log.warn(`marking the node NotReady: ${String(e)}`)),
    ]).finally(() => {
      clearTimeout(hard);
      process.exit(0);
    });
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}

process.on("unhandledRejection", e => log.error(`unhandled rejection: ${String(e)}`));
process.on("uncaughtException", e => log.error(`uncaught exception: ${e.stack ?? String(e)}`));

main().catch(e => {
  log.error(`kubelet failed to start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  process.exit(1);
});
