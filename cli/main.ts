/**
 * The `kubectl-kengine` executable (kubectl finds it on PATH as the `kengine` plugin). Reads the
 * cluster with the user's kubeconfig (cluster.ts), computes with the pure parts and prints.
 * Exit codes: 0 all is well, 1 something is wrong (status, explain), 2 usage or access error.
 */
import { KubeConfig } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { kubeClient } from "../capabilities/kube/client";
import { TRAFFIC_INTERVAL_MS } from "../capabilities/reconcile/options";
import { Args, USAGE, parseArgs } from "./args";
import { currentNamespace, getText, leaderIdentity, podProxyPath, readCluster } from "./cluster";
import { configReport, configYAML, parseObjectArg } from "./config";
import { explainRoute, formatExplain, parseRouteArg } from "./explain";
import { ClusterView, keyOf, localTranslation } from "./model";
import { formatStatus, statusReport } from "./status";
import { useColour } from "./table";
import { formatTop, requestSamples, topReport } from "./top";

export interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly colour: boolean;
  readonly now: () => Date;
}

/** A command run over a cluster view (tests pass a fixture view). Returns the exit code. */
export function runCommand(
  args: Args,
  view: ClusterView,
  defaultNamespace: string,
  io: Io,
): number {
  const ns = args.namespace ?? defaultNamespace;
  const json = (v: unknown) => io.out(JSON.stringify(v, null, 2));
  switch (args.command) {
    case "status": {
      const [name] = args.positional;
      const all = args.allNamespaces || (args.namespace === undefined && name === undefined);
      const report = statusReport(view, io.now(), {
        ...(!all && { namespace: ns }),
        ...(name !== undefined && { name }),
      });
      if (name !== undefined && report.gateways.length === 0) {
        io.err(`Gateway ${ns}/${name} not found, or not of a Kengine class`);
        return 2;
      }
      if (args.output === "json") json(report);
      else if (args.output === "yaml") io.out(stringify(report));
      else io.out(formatStatus(report, io.now(), io.colour, all));
      return report.ok ? 0 : 1;
    }
    case "explain": {
      const [arg] = args.positional;
      const ref = arg === undefined ? undefined : parseRouteArg(arg);
      if (!ref) {
        io.err("explain needs a route: NAME (an HTTPRoute) or KIND/NAME");
        return 2;
      }
      const report = explainRoute(view, localTranslation(view), { ...ref, namespace: ns });
      if (!report) {
        io.err(`${ref.kind} ${ns}/${ref.name} not found`);
        return 2;
      }
      if (args.output === "json") json(report);
      else if (args.output === "yaml") io.out(stringify(report));
      else io.out(formatExplain(report, io.colour));
      return report.ok ? 0 : 1;
    }
    case "config": {
      const [arg] = args.positional;
      if (arg === undefined) {
        io.err("config needs a Gateway or a proxy (KengineProxy or pod name)");
        return 2;
      }
      const object = args.object === undefined ? undefined : parseObjectArg(args.object);
      if (args.object !== undefined && !object) {
        io.err(
          `--object ${args.object}: KIND/NS/NAME (HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute, ListenerSet) or Listener/NS/GATEWAY/LISTENER`,
        );
        return 2;
      }
      const proxy = view.proxies.find(
        p => p.metadata.namespace === ns && (p.metadata.name === arg || p.spec?.pod === arg),
      );
      const gateway = view.objects.some(o => o.kind === "Gateway" && keyOf(o) === `${ns}/${arg}`)
        ? `${ns}/${arg}`
        : proxy
          ? `${ns}/${proxy.spec?.gateway ?? ""}`
          : undefined;
      const report =
        gateway &&
        configReport(view, localTranslation(view), gateway, {
          ...(object && { object }),
          ...(!gateway.endsWith(`/${arg}`) && { proxy: arg }),
        });
      if (!report) {
        io.err(`no Gateway of a Kengine class and no proxy named ${arg} in ${ns}`);
        return 2;
      }
      if (args.output === "json") json(report);
      else io.out(configYAML(report));
      return 0;
    }
    default:
      io.err(args.command === undefined ? USAGE : `unknown command ${args.command}\n\n${USAGE}`);
      return 2;
  }
}

function kubeConfig(args: Args): KubeConfig {
  const kc = new KubeConfig();
  if (args.kubeconfig) kc.loadFromFile(args.kubeconfig);
  else kc.loadFromDefault();
  if (args.context) kc.setCurrentContext(args.context);
  return kc;
}

/** The metrics port of Pepr's watcher pods (its HTTPS server). */
const METRICS_PORT = 3000;
/** The controller reads every proxy's request counters this often: a shorter window may hold no
 * reading at all and show zero. */
const CONTROLLER_READ_SECONDS = TRAFFIC_INTERVAL_MS / 1000;

/** `top`: two scrapes of the leading controller's /metrics, `windowSeconds` apart. */
async function top(args: Args, io: Io): Promise<number> {
  const [by = "routes"] = args.positional;
  if (by !== "routes" && by !== "gateways") {
    io.err(`top routes or top gateways, not ${by}`);
    return 2;
  }
  const windowSeconds = args.windowSeconds ?? 2 * CONTROLLER_READ_SECONDS;
  let scrape: () => Promise<string>;
  try {
    if (args.metricsUrl) {
      const url = args.metricsUrl;
      scrape = () => getText({ url, insecure: args.insecure === true });
    } else {
      const kc = kubeConfig(args);
      const ns = args.controllerNamespace ?? "pepr-system";
      const leader = await leaderIdentity(kubeClient(kc, { userAgent: "kubectl-kengine" }), ns);
      if (!leader) {
        io.err(`no controller holds the leader Lease in ${ns}: nothing counts traffic now`);
        return 1;
      }
      const path = podProxyPath(ns, leader, METRICS_PORT, "/metrics");
      scrape = () => getText({ kc, path });
    }
    const before = requestSamples(await scrape());
    if (args.output !== "json") io.err(`counting for ${windowSeconds} s…`);
    if (windowSeconds < CONTROLLER_READ_SECONDS)
      io.err(
        `note: the controller reads the proxies every ${CONTROLLER_READ_SECONDS} s; a shorter window may count nothing`,
      );
    await new Promise(r => setTimeout(r, windowSeconds * 1000));
    const report = topReport(before, requestSamples(await scrape()), windowSeconds, by);
    if (args.output === "json") io.out(JSON.stringify(report, null, 2));
    else if (args.output === "yaml") io.out(stringify(report));
    else io.out(formatTop(report, io.colour));
    return 0;
  } catch (e) {
    io.err(
      `cannot read the controller's metrics: ${e instanceof Error ? e.message : String(e)}` +
        (args.metricsUrl
          ? ""
          : "\n(under pepr dev, the leader is not a pod: use --metrics-url https://localhost:3000/metrics --insecure-skip-tls-verify)"),
    );
    return 2;
  }
}

export async function main(argv: readonly string[]): Promise<number> {
  const args = parseArgs(argv);
  const io: Io = {
    out: t => process.stdout.write(t.endsWith("\n") ? t : `${t}\n`),
    err: t => process.stderr.write(t.endsWith("\n") ? t : `${t}\n`),
    colour: useColour(process.stdout, process.env),
    now: () => new Date(),
  };
  if (typeof args === "string") {
    io.err(`${args}\n\n${USAGE}`);
    return 2;
  }
  if (args.help || args.command === undefined || args.command === "help") {
    io.out(USAGE);
    return 0;
  }
  if (args.command === "top") return top(args, io);
  if (!["status", "explain", "config"].includes(args.command))
    return runCommand(args, { objects: [], proxies: [], unreadable: [] }, "default", io);
  let view: ClusterView;
  let ns: string;
  try {
    const kc = kubeConfig(args);
    ns = currentNamespace(kc);
    view = await readCluster(kubeClient(kc, { userAgent: "kubectl-kengine" }));
  } catch (e) {
    io.err(`cannot read the cluster: ${e instanceof Error ? e.message : String(e)}`);
    return 2;
  }
  return runCommand(args, view, ns, io);
}

if (require.main === module) void main(process.argv.slice(2)).then(code => process.exit(code));
