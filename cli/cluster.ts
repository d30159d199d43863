/**
 * What the plugin reads from the cluster, with the user's kubeconfig: every kind the controller
 * watches (the same list paths, so the local translation sees what the controller sees), the
 * KengineProxy objects and the Gateways' last-good Secrets. A kind the user may not list is
 * left empty and named in `unreadable`; the commands say what that may change.
 */
import { KubeConfig } from "@kubernetes/client-node";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { RequestOptions } from "node:https";
import { KubeClient, KubeError, kubeClient, statusOf } from "../capabilities/kube/client";
import { LIST_PATHS } from "../capabilities/snapshot/kinds";
import type { Kind, KubeObject } from "../capabilities/snapshot";
import {
  KENGINE_PROXIES_PATH,
  liveProxies,
  type ClusterView,
  type KengineProxy,
  type PodLike,
} from "./model";

interface List<T> {
  readonly items?: T[];
}

/** Lists every watched kind and our proxies' records; kinds the user cannot read stay empty. */
export async function readCluster(
  client: KubeClient = kubeClient(loadKubeConfig()),
): Promise<ClusterView> {
  const unreadable: string[] = [];
  const list = async <T extends KubeObject>(kind: string, path: string): Promise<T[]> => {
    try {
      const l = await client.request<List<T>>("GET", path);
      return (l.items ?? []).map(o => ({ ...o, kind }));
    } catch (e) {
      const status = statusOf(e);
      if (status === 404) return []; // the kind is not served (its CRD is not installed)
      if (status === 401 || status === 403) {
        unreadable.push(kind);
        return [];
      }
      throw e;
    }
  };
  const kinds = Object.entries(LIST_PATHS) as [Kind, string][];
  const [lists, proxies] = await Promise.all([
    Promise.all(kinds.map(([kind, path]) => list(kind, path))),
    list<KengineProxy>("KengineProxy", KENGINE_PROXIES_PATH),
  ]);
  // Only proxies whose pod still runs (liveProxies); unreadable pods: every record, said so.
  const namespaces = [...new Set(proxies.map(p => p.metadata.namespace ?? ""))];
  const unreadableBefore = unreadable.length;
  const pods = (
    await Promise.all(
      namespaces.map(ns => list<PodLike & KubeObject>("Pod", `/api/v1/namespaces/${ns}/pods`)),
    )
  ).flat();
  const podsReadable = !unreadable.slice(unreadableBefore).includes("Pod");
  return {
    objects: lists.flat(),
    proxies: podsReadable ? liveProxies(proxies, pods) : proxies,
    unreadable: [...new Set(unreadable)].sort(),
  };
}

export function loadKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}

/** The namespace of the kubeconfig's current context (kubectl's default for `-n`). */
export function currentNamespace(kc: KubeConfig): string {
  return kc.getContextObject(kc.getCurrentContext())?.namespace ?? "default";
}

/** The pod holding the controller's leader Lease (`holderIdentity` is the pod name in a cluster). */
export async function leaderIdentity(
  client: KubeClient,
  namespace: string,
  lease = "kengine-gateway-leader",
): Promise<string | undefined> {
  const l = await client.request<{ spec?: { holderIdentity?: string } }>(
    "GET",
    `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases/${encodeURIComponent(lease)}`,
  );
  return l.spec?.holderIdentity || undefined;
}

/** The path of a pod's HTTPS endpoint through the API server's pods proxy. */
export const podProxyPath = (namespace: string, pod: string, port: number, path: string): string =>
  `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/https:${encodeURIComponent(pod)}:${port}/proxy${path}`;

/** GET of a text resource: through the API server (a path) with the kubeconfig's credentials, or a URL. */
export async function getText(
  target:
    | { readonly kc: KubeConfig; readonly path: string }
    | { readonly url: string; readonly insecure: boolean },
): Promise<string> {
  let opts: RequestOptions;
  if ("url" in target) {
    const u = new URL(target.url);
    opts = {
      hostname: u.hostname.replace(/^\[|\]$/g, ""),
      port: u.port || (u.protocol === "https:" ? 443 : 80),
      path: `${u.pathname}${u.search}`,
      rejectUnauthorized: !target.insecure,
    };
    if (u.protocol === "http:") return send(httpRequest, opts, target.url);
  } else {
    const base = new URL(target.kc.getCurrentCluster()?.server ?? "");
    opts = {
      hostname: base.hostname.replace(/^\[|\]$/g, ""),
      port: base.port || 443,
      path: target.path,
    };
    await target.kc.applyToHTTPSOptions(opts);
  }
  return send(httpsRequest, opts, "url" in target ? target.url : target.path);
}

function send(
  request: typeof httpsRequest | typeof httpRequest,
  opts: RequestOptions,
  what: string,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        ...opts,
        method: "GET",
        headers: { ...opts.headers, Accept: "text/plain" },
        timeout: 15_000,
      },
      res => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve(text);
          else reject(new KubeError(status, text, `GET ${what}`));
        });
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`GET ${what}: timed out`)));
    req.on("error", reject);
    req.end();
  });
}
