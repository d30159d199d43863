/** Command-line flags of the local kubelet (pure). */
export interface KubeletArgs {
  readonly kubeconfig: string;
  /** Credential for the parts a kubelet identity may not do: binding pods, LoadBalancer status. */
  readonly controllersKubeconfig: string;
  readonly peers: string;
  /** OCI image layout of the images the node holds (the proxy image). */
  readonly images?: string;
  /** Where their layers are unpacked, one directory per manifest digest. */
  readonly imageCache?: string;
  readonly state: string;
  readonly nodeName: string;
  readonly port: number;
  readonly tlsCert?: string;
  readonly tlsKey?: string;
  readonly clientCA?: string;
}

const usage =
  "usage: main.ts --kubeconfig FILE --peers DIR --state DIR [--controllers-kubeconfig FILE] " +
  "[--images OCI-LAYOUT-DIR [--image-cache DIR]] " +
  "[--node-name NAME] [--port N] [--tls-cert FILE --tls-key FILE] [--client-ca FILE]";

export function parseArgs(argv: readonly string[]): KubeletArgs {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith("--")) throw new Error(`unexpected argument "${a}"; ${usage}`);
    const eq = a.indexOf("=");
    if (eq > 0) flags.set(a.slice(2, eq), a.slice(eq + 1));
    else {
      const v = argv[i + 1];
      if (v === undefined || v.startsWith("--"))
        throw new Error(`flag ${a} needs a value; ${usage}`);
      flags.set(a.slice(2), v);
      i++;
    }
  }
  const known = new Set([
    "kubeconfig",
    "controllers-kubeconfig",
    "peers",
    "images",
    "image-cache",
    "state",
    "node-name",
    "port",
    "tls-cert",
    "tls-key",
    "client-ca",
  ]);
  for (const k of flags.keys()) if (!known.has(k)) throw new Error(`unknown flag --${k}; ${usage}`);
  const need = (k: string): string => {
    const v = flags.get(k);
    if (!v) throw new Error(`--${k} is required; ${usage}`);
    return v;
  };
  const kubeconfig = need("kubeconfig");
  const port = Number(flags.get("port") ?? "10250");
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`bad --port`);
  return {
    kubeconfig,
    controllersKubeconfig: flags.get("controllers-kubeconfig") ?? kubeconfig,
    peers: need("peers"),
    images: flags.get("images"),
    imageCache: flags.get("image-cache"),
    state: need("state"),
    nodeName: flags.get("node-name") ?? "kengine-local",
    port,
    tlsCert: flags.get("tls-cert"),
    tlsKey: flags.get("tls-key"),
    clientCA: flags.get("client-ca"),
  };
}
