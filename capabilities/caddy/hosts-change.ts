/**
 * How a route table's `hosts` record was made from the previous render's (route-table.ts
 * `routeTableDelta`): the record it came from and the keys whose list may differ (added,
 * removed or another list). What is derived per record — the backend ids it names
 * (render-memo.ts), its exact hosts (table-digests.ts) — is then derived from the
 * previous record's by those keys instead of by every key. Held weakly by the new record, and
 * the record it came from weakly by the note: a note holding its `from` would keep every record
 * ever rendered alive, each through its successor's note (a chain growing by one record per
 * build).
 */
export interface HostsChange {
  readonly from: object;
  readonly keys: readonly string[];
}

const changes = new WeakMap<
  object,
  { readonly from: WeakRef<object>; readonly keys: readonly string[] }
>();

/** Notes that `hosts` is `from` changed at most at `keys`. */
export function noteHostsChange(hosts: object, change: HostsChange): void {
  changes.set(hosts, { from: new WeakRef(change.from), keys: change.keys });
}

/** How `hosts` was made from `from`, when it was so (else undefined). */
export function hostsChangeFrom(hosts: object, from: object): HostsChange | undefined {
  const c = changes.get(hosts);
  return c && c.from.deref() === from ? { from, keys: c.keys } : undefined;
}

const keyOrders = new WeakMap<object, readonly string[]>();

/** An array index as a property key (`Object.keys` lists those first, whatever their order). */
const isIndexKey = (k: string): boolean => /^(?:0|[1-9][0-9]*)$/.test(k) && Number(k) < 2 ** 32 - 1;

/**
 * Notes `keys` as `hosts`' own keys in the order it was filled (which is `Object.keys`' order
 * unless a key is an array index: then nothing is noted). Made once per record.
 */
export function noteHostsKeys(hosts: object, keys: readonly string[], checked = false): void {
  if (checked || !keys.some(isIndexKey)) keyOrders.set(hosts, keys);
}

/** Whether a key added to a noted record keeps the fill order `Object.keys`' order. */
export const plainKey = (k: string): boolean => !isIndexKey(k);

/** `Object.keys(hosts)`, from the note when there is one (a large record's keys are slow to list). */
export const hostsKeys = (hosts: object): readonly string[] =>
  keyOrders.get(hosts) ?? Object.keys(hosts);

/** `hosts`' keys if noted (else undefined). */
export const notedKeys = (hosts: object): readonly string[] | undefined => keyOrders.get(hosts);
