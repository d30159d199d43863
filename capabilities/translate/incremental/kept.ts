/**
 * Values kept across builds, keyed by the objects they were made for (module-level WeakMaps,
 * forgotten with their keys): a route's attachment to a parent while its compiled object,
 * parent and parent Gateway's context are the same (its status result is then the same object,
 * so the status memo in status/compute.ts stops at the first reference); equal inputs kept as
 * the same object; a listener's entry group per attachment. A hit needs every input to be the
 * same object (or equal value) as when it was made, so callers see the same values as without.
 */
import { sameData } from "../../same-data";
import type { Gateway } from "../../snapshot";
import type { Attachment } from "../context";
import type { RankedGroup } from "./listener-routes";

interface Kept<T> {
  readonly reads: readonly unknown[];
  readonly value: T;
}

const kept = new WeakMap<object, Map<number, Kept<unknown>>>();

/** The value made from `reads` for (`owner`, `index`), from last time when `reads` are the same. */
export function keptOrMade<T>(
  owner: object,
  index: number,
  reads: readonly unknown[],
  make: () => T,
): T {
  let byIndex = kept.get(owner);
  const hit = byIndex?.get(index);
  if (hit && hit.reads.length === reads.length && hit.reads.every((r, i) => r === reads[i]))
    return hit.value as T;
  const value = make();
  if (!byIndex) kept.set(owner, (byIndex = new Map()));
  byIndex.set(index, { reads, value });
  return value;
}

const stable = new WeakMap<object, unknown>();

/**
 * `value`, or the value last given for `owner` when equal data: equal inputs keep their
 * identity from build to build, so caches keyed by them hit.
 */
export function stableData<T>(owner: object, value: T): T {
  const before = stable.get(owner);
  if (before !== undefined && sameData(before, value)) return before as T;
  stable.set(owner, value);
  return value;
}

/** Per Gateway object, the owner of its EgressPolicy's stable identity. */
const egressOwners = new WeakMap<Gateway, object>();

/** stableData for a Gateway's EgressPolicy (egress.ts). */
export function stableEgress<T>(gateway: Gateway, value: T): T {
  let owner = egressOwners.get(gateway);
  if (!owner) egressOwners.set(gateway, (owner = {}));
  return stableData(owner, value);
}

/** Each attachment's entry group with the listener key it was made for (an attachment object
 * is replayed from build to build: routes.ts). */
const groupOfAttachment = new WeakMap<
  Attachment,
  { readonly listenerKey: string; readonly group: RankedGroup }
>();

/** The entry group made for `attachment` on a listener with `listenerKey`, kept while the same. */
export function keptGroup(
  attachment: Attachment,
  listenerKey: string,
  make: () => RankedGroup,
): RankedGroup {
  const kept = groupOfAttachment.get(attachment);
  if (kept !== undefined && kept.listenerKey === listenerKey) return kept.group;
  const group = make();
  groupOfAttachment.set(attachment, { listenerKey, group });
  return group;
}
