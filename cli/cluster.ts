/**
 * What the plugin reads from the cluster, with the user's kubeconfig: every kind the controller
 * watches (the same list paths, so the local translation sees what the controller sees), the
 * KengineProxy objects and the Gateways' last-good Secrets. A kind the user may not list is
 * left empty and named in `unreadable`; the commands say what that may change.
 */
import { KubeConfig } from "@kubernetes/client-node";
import { KubeClient, kubeClient, statusOf } from "../capabilities/kube/client";
import { LIST_PATHS } from "../capabilities/snapshot/kinds";
import type { Kind, KubeObject } from "../capabilities/snapshot";
import { KENGINE_PROXIES_PATH, type ClusterView, type KengineProxy } from "./model";

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
  return { objects: lists.flat(), proxies, unreadable: unreadable.sort() };
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
