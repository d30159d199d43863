/**
 * Attachment results kept across builds: a route whose compiled object,
 * parent and parent Gateway's context are the same as last build attaches as it did, without
 * recomputing its conditions; its status result is then the same object, so the status memo
 * (status/compute.ts) stops at the first reference. Pure from the caller's view: a hit needs
 * every input of `attach` to be the same object (or equal value) as when it was made.
 */
import { sameData } from "../same-data";

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
