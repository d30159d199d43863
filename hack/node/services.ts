/**
 * What no upstream component gives a node without a cloud, as one process beside the real node
 * (started by hack/node/node.sh; README.md):
 *
 * - LoadBalancer Services: the local load balancer (loadbalancer.ts: a loopback address
 *   127.20.x.y per Service in status.loadBalancer, and a host-side forwarder to the Service's
 *   ready endpoints, `ipMode: Proxy` so that kube-proxy leaves the address to it). kube-proxy
 *   serves the cluster IPs.
 * - The API server for pods: kube-apiserver listens on loopback only, so this forwards the node's
 *   bridge address (10.244.0.1:16443, where node.sh's EndpointSlice for the `kubernetes` Service
 *   points; kube-proxy sends 10.96.0.1:443 there) to it.
 *
 *   tsx hack/node/services.ts --kubeconfig FILE [--api-listen HOST:PORT]
 *   (rights: hack/cluster.sh kubelet_rbac; the kubeconfig's server is the API server forwarded to)
 */
import { Api } from "./api";
import { forwardTcp, upstreamOf } from "./forward";
import { loadKubeconfig } from "./kubeconfig";
import { LoadBalancers } from "./loadbalancer";
import { logger as log } from "./log";

function flag(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

async function main(): Promise<void> {
  const kubeconfig = flag("--kubeconfig");
  if (!kubeconfig) {
    process.stderr.write("usage: services.ts --kubeconfig FILE [--api-listen HOST:PORT]\n");
    process.exit(2);
  }
  const creds = loadKubeconfig(kubeconfig);
  const [host, port] = (flag("--api-listen") ?? "10.244.0.1:16443").split(":");
  const upstream = upstreamOf(creds.server);
  const api = await forwardTcp({ host: host!, port: Number(port) }, upstream);
  log.info(`API server for pods: ${host}:${port} → ${upstream.host}:${upstream.port}`);
  const lbs = new LoadBalancers(new Api(creds, log), log);
  lbs.start();
  log.info("node services ready: LoadBalancer Services get 127.20.x.y addresses");
  const stop = (sig: string) => {
    log.info(`${sig}: stopping`);
    lbs.stop();
    api.stop();
    process.exit(0);
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

process.on("unhandledRejection", e => log.error(`unhandled rejection: ${String(e)}`));
main().catch(e => {
  log.error(`node services failed to start: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
