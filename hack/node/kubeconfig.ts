/** Reads the parts of a kubeconfig services.ts needs: server URL, CA and client certificate. */
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import { parse } from "yaml";

export interface Credentials {
  readonly server: string;
  readonly ca: Buffer;
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly user: string;
}

interface KubeconfigDoc {
  readonly "current-context"?: string;
  readonly contexts?: readonly { name: string; context: { cluster: string; user: string } }[];
  readonly clusters?: readonly {
    name: string;
    cluster: { server: string; "certificate-authority"?: string };
  }[];
  readonly users?: readonly {
    name: string;
    user: { "client-certificate"?: string; "client-key"?: string };
  }[];
}

/** Resolves the current context of a kubeconfig that names files (as hack/cluster.sh writes). */
export function loadKubeconfig(file: string): Credentials {
  const doc = parse(readFileSync(file, "utf8")) as KubeconfigDoc;
  const ctx = doc.contexts?.find(c => c.name === doc["current-context"])?.context;
  if (!ctx) throw new Error(`${file}: no current context`);
  const cluster = doc.clusters?.find(c => c.name === ctx.cluster)?.cluster;
  const user = doc.users?.find(u => u.name === ctx.user)?.user;
  if (!cluster || !user) throw new Error(`${file}: context names a missing cluster or user`);
  const path = (p: string | undefined, what: string): string => {
    if (!p) throw new Error(`${file}: ${what} is not set (only file references are supported)`);
    return isAbsolute(p) ? p : join(dirname(file), p);
  };
  return {
    server: cluster.server,
    ca: readFileSync(path(cluster["certificate-authority"], "certificate-authority")),
    cert: readFileSync(path(user["client-certificate"], "client-certificate")),
    key: readFileSync(path(user["client-key"], "client-key")),
    user: ctx.user,
  };
}
