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
      listener and proxies, and if not, why. Exit code 1 when a part is not served.
  kubectl kengine config  [-n NS] GATEWAY|PROXY [--object KIND/NS/NAME] [-o yaml|json]
      A Gateway's Caddy config, each part annotated with the objects it came from: the config its
      proxies last accepted (the controller's last-good Secret), or, when that cannot be read, the
      desired config computed locally (the output says which). --object: only that object's parts
      (Listener/NS/GATEWAY/LISTENER for a Gateway listener).

Flags:
  -n, --namespace NS   namespace (default: the kubeconfig context's)
  -A, --all-namespaces every namespace (status)
  -o, --output FORMAT  json, yaml (config) or the default table
      --kubeconfig F   kubeconfig file (default: $KUBECONFIG or ~/.kube/config)
      --context NAME   kubeconfig context
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
  };
}
