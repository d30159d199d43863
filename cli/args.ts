/** The plugin's command line, parsed (pure): a command, its positional arguments and flags. */

export type Output = "table" | "json" | "yaml";

export interface Args {
  readonly command?: string;
  readonly positional: readonly string[];
  readonly namespace?: string;
  readonly allNamespaces: boolean;
  readonly output?: Output;
  readonly object?: string;
  readonly kubeconfig?: string;
  readonly context?: string;
  readonly help: boolean;
  /** top: seconds between the two scrapes. */
  readonly windowSeconds?: number;
  /** top: the controller's /metrics URL (pepr dev), instead of the leader pod through the API server. */
  readonly metricsUrl?: string;
  readonly insecure?: boolean;
  /** top: where the controller runs (its leader Lease). */
  readonly controllerNamespace?: string;
}

export const USAGE = `kubectl kengine: what Kengine Gateway's proxies run, and why

Usage:
  kubectl kengine status  [-n NS | -A] [GATEWAY] [-o json]
      Per Gateway of the Kengine classes: PROGRAMMED, proxies running the current config
      (synced/total), last sync, routes accepted/attached, refused objects with the
      controller's reasons, the earliest certificate expiry. Exit code 1 when anything is wrong.
      Without -n and GATEWAY: every namespace.
  kubectl kengine explain [-n NS] [KIND/]ROUTE [-o json]
      For each hostname and path of a route (default kind HTTPRoute): served or not, by which
      listener and proxies, and if not, why. Exit code 1 when a part is not served, or not yet
      by every proxy.
  kubectl kengine config  [-n NS] GATEWAY|PROXY [--object KIND/NS/NAME] [-o yaml|json]
      A Gateway's Caddy config, each part annotated with the objects it came from: the config its
      proxies last accepted (the controller's last-good Secret), or, when that cannot be read, the
      desired config computed locally (the output says which). --object: only that object's parts
      (Listener/NS/GATEWAY/LISTENER for a Gateway listener).

  kubectl kengine top     [routes|gateways] [--window 30s] [-o json]
      Requests per second and 5xx share per route (or Gateway), every proxy of a Gateway summed
      once, from two scrapes of the leading controller's /metrics (through the API server's pods
      proxy: needs get on pods/proxy in the controller's namespace). Under pepr dev:
      --metrics-url https://localhost:3000/metrics --insecure-skip-tls-verify.

Flags:
  -n, --namespace NS   namespace (default: the kubeconfig context's)
  -A, --all-namespaces every namespace (status)
  -o, --output FORMAT  json, yaml (config) or the default table
      --kubeconfig F   kubeconfig file (default: $KUBECONFIG or ~/.kube/config)
      --context NAME   kubeconfig context
      --controller-namespace NS  where the controller runs (default pepr-system)
  -h, --help
`;

export function parseArgs(argv: readonly string[]): Args | string {
  const positional: string[] = [];
  let namespace: string | undefined;
  let allNamespaces = false;
  let output: Output | undefined;
  let object: string | undefined;
  let kubeconfig: string | undefined;
  let context: string | undefined;
  let help = false;
  let windowSeconds: number | undefined;
  let metricsUrl: string | undefined;
  let insecure = false;
  let controllerNamespace: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf("=");
    const [flag, inline] =
      a.startsWith("--") && eq > 0 ? [a.slice(0, eq), a.slice(eq + 1)] : [a, undefined];
    const value = (): string | undefined => inline ?? argv[++i];
    switch (flag) {
      case "-n":
      case "--namespace":
        namespace = value();
        if (!namespace) return `${flag} needs a namespace`;
        break;
      case "-A":
      case "--all-namespaces":
        allNamespaces = true;
        break;
      case "-o":
      case "--output": {
        const o = value();
        if (o !== "json" && o !== "yaml" && o !== "table")
          return `${flag}: json, yaml or table, not ${o ?? "nothing"}`;
        output = o;
        break;
      }
      case "--object":
        object = value();
        if (!object) return "--object needs KIND/NS/NAME";
        break;
      case "--kubeconfig":
        kubeconfig = value();
        break;
      case "--context":
        context = value();
        break;
      case "--window": {
        const w = /^(\d+)(s|m)?$/.exec(value() ?? "");
        if (!w) return "--window: a duration such as 10s or 1m";
        windowSeconds = Number(w[1]) * (w[2] === "m" ? 60 : 1);
        if (windowSeconds < 1) return "--window: at least 1s";
        break;
      }
      case "--metrics-url":
        metricsUrl = value();
        if (!metricsUrl) return "--metrics-url needs a URL";
        break;
      case "--insecure-skip-tls-verify":
        insecure = true;
        break;
      case "--controller-namespace":
        controllerNamespace = value();
        if (!controllerNamespace) return "--controller-namespace needs a namespace";
        break;
      case "-h":
      case "--help":
        help = true;
        break;
      default:
        if (a.startsWith("-") && a !== "-") return `unknown flag ${a}`;
        positional.push(a);
    }
  }
  const [command, ...rest] = positional;
  return {
    ...(command !== undefined && { command }),
    positional: rest,
    ...(namespace !== undefined && { namespace }),
    allNamespaces,
    ...(output && { output }),
    ...(object !== undefined && { object }),
    ...(kubeconfig !== undefined && { kubeconfig }),
    ...(context !== undefined && { context }),
    help,
    ...(windowSeconds !== undefined && { windowSeconds }),
    ...(metricsUrl !== undefined && { metricsUrl }),
    ...(insecure && { insecure }),
    ...(controllerNamespace !== undefined && { controllerNamespace }),
  };
}
