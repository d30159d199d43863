/** Snapshot maps in key order, patched from an earlier version's order (the snapshot's lineage). */
import { earlierVersions } from "../../snapshot";

/**
 * A snapshot map's objects in key order (`namespace/name`, the map's keys: keyOf), made once
 * per map: from an earlier version's order and the keys changed since (the snapshot's lineage:
 * one changed route costs a binary search and an array copy, not a sort of every key), or by
 * sorting the map's keys.
 */
interface Sorted {
  readonly keys: readonly string[];
  readonly objects: readonly unknown[];
}
const sortedMaps = new WeakMap<ReadonlyMap<string, unknown>, Sorted>();
export function sortedByKey(map: ReadonlyMap<string, unknown>): readonly unknown[] {
  let sorted = sortedMaps.get(map);
  if (!sorted) {
    for (const [earlier, changed] of earlierVersions(map)) {
      const before = sortedMaps.get(earlier);
      if (before) {
        sorted = patchedOrder(before, map, changed);
        break;
      }
    }
    if (!sorted) {
      const keys = [...map.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      sorted = { keys, objects: keys.map(k => map.get(k)) };
    }
    sortedMaps.set(map, sorted);
  }
  return sorted.objects;
}

/** `before`'s order with the `changed` keys replaced, removed or inserted as `map` holds them. */
function patchedOrder(
  before: Sorted,
  map: ReadonlyMap<string, unknown>,
  changed: ReadonlySet<string>,
): Sorted {
  const keys = before.keys.slice();
  const objects = before.objects.slice();
  for (const key of changed) {
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keys[mid]! < key) lo = mid + 1;
      else hi = mid;
    }
    const present = keys[lo] === key;
    const o = map.get(key);
    if (o === undefined) {
      if (present) {
        keys.splice(lo, 1);
        objects.splice(lo, 1);
      }
    } else if (present) objects[lo] = o;
    else {
      keys.splice(lo, 0, key);
      objects.splice(lo, 0, o);
    }
  }
  return { keys, objects };
}
