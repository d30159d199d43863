/**
 * How a route table's `hosts` record was made from the previous render's (route-table.ts
 * `routeTableDelta`): the record it came from and the keys whose list may differ (added,
 * removed or another list). What is derived per record — the backend ids it names
 * (render-memo.ts), its exact hosts (proxies/route-tables.ts) — is then derived from the
 * previous record's by those keys instead of by every key. Held weakly by the new record. Pure.
 */
export interface HostsChange {
  readonly from: object;
  readonly keys: readonly string[];
}

const changes = new WeakMap<object, HostsChange>();

/** Notes that `hosts` is `from` changed at most at `keys`. */
export function noteHostsChange(hosts: object, change: HostsChange): void {
  changes.set(hosts, change);
}

/** How `hosts` was made from `from`, when it was so (else undefined). */
export function hostsChangeFrom(hosts: object, from: object): HostsChange | undefined {
  const c = changes.get(hosts);
  return c?.from === from ? c : undefined;
}
