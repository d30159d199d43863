/** A managed Gateway's proxy pods as kubectl sees them (name, uid, Ready, being deleted). */
import { eventually, kubectl, kubectlOk } from "./kube";

export interface ProxyPod {
  readonly name: string;
  readonly uid: string;
  readonly ready: boolean;
  readonly deleting: boolean;
}

export function proxyPods(namespace: string, gateway: string): ProxyPod[] {
  return kubectl([
    "get",
    "pods",
    "-n",
    namespace,
    "-l",
    `gateway.networking.k8s.io/gateway-name=${gateway},app.kubernetes.io/component=proxy`,
    "-o",
    `jsonpath={range .items[*]}{.metadata.name},{.metadata.uid},{.status.conditions[?(@.type=='Ready')].status},{.metadata.deletionTimestamp}{"\\n"}{end}`,
  ])
    .stdout.trim()
    .split("\n")
    .filter(Boolean)
    .map(l => {
      const [name = "", uid = "", ready, deleting] = l.split(",");
      return { name, uid, ready: ready === "True", deleting: Boolean(deleting) };
    });
}

/** A KengineProxy's status as the upgrade tests read it (sorted by name). */
export interface ProxyRow {
  readonly name: string;
  readonly synced: string;
  readonly applied: string;
  readonly lastSync: string;
}

export const kengineProxyRows = (ns: string): ProxyRow[] =>
  kubectl([
    "get",
    "kengineproxies",
    "-n",
    ns,
    "-o",
    'jsonpath={range .items[*]}{.metadata.name},{.status.conditions[0].status},{.status.appliedHash},{.status.lastSyncTime}{"\\n"}{end}',
  ])
    .stdout.trim()
    .split("\n")
    .filter(Boolean)
    .map(l => {
      const [name = "", synced = "", applied = "", lastSync = ""] = l.split(",");
      return { name, synced, applied, lastSync };
    })
    .sort((a, b) => a.name.localeCompare(b.name));

/** POST /load requests each proxy pod's Caddy logged (every config load goes through it). */
export const configLoads = (ns: string, names: readonly string[]): Record<string, number> =>
  Object.fromEntries(
    names.map(n => [n, (kubectlOk(["logs", n, "-n", ns]).match(/"uri":"\/load"/g) ?? []).length]),
  );

/**
 * Waits until a new controller (started at `sinceMs`) has verified all `count` proxies of `ns`:
 * each KengineProxy Synced, still at `hash`, its lastSyncTime moved (adoption moves it).
 */
export const verifiedSince = (
  ns: string,
  count: number,
  hash: string | undefined,
  sinceMs: number,
): Promise<ProxyRow[]> =>
  eventually(
    hash === undefined
      ? "every KengineProxy verified by the new controller, all with one hash"
      : "every KengineProxy verified by the new controller, hash unchanged",
    () => {
      const rows = kengineProxyRows(ns);
      const ok = (r: ProxyRow) =>
        r.synced === "True" &&
        r.applied === (hash ?? rows[0]!.applied) &&
        Date.parse(r.lastSync) >= sinceMs - 1000;
      if (rows.length === count && rows.every(ok)) return rows;
      // shown if it times out
      throw new Error(
        `rows ${JSON.stringify(rows)}, hash before ${hash}, replaced at ${new Date(sinceMs).toISOString()}`,
      );
    },
    120_000,
    500,
  );
