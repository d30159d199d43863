/**
 * Status-only updates held back from the snapshot until it is read. Applying one
 * event copies its kind's map (0.5 ms at 3,000 routes), so a storm of status echoes (the 2,000
 * route status writes of a bulk create coming back as watch events) held the watch stream for
 * a second, and a real change queued behind it. Held updates are applied together, in order,
 * before the snapshot is read or any other event is applied: the snapshot anyone reads is the
 * one applying every event one by one gives.
 */
import { onlyStatusChanged } from "../translate/incremental";
import { KubeObject, Snapshot, SnapshotEvent, applyAll, isSynced, keyOf } from "../snapshot";

/**
 * At most this many updates are held: status writes of objects no build reads (another
 * controller's routes) notify nothing, so nothing else would bound them.
 */
export const MAX_HELD = 1024;

export class HeldEchoes {
  #held: SnapshotEvent[] = [];

  /**
   * Holds `event` if it is an update of an object `snapshot` has that changes nothing but its
   * status (and the snapshot is synced); returns the object it replaces, or undefined when the
   * event was not held (apply it, after `flush`; so it is when MAX_HELD are held).
   */
  hold(snapshot: Snapshot, event: SnapshotEvent): KubeObject | undefined {
    if (event.type !== "upsert" || !isSynced(snapshot) || this.#held.length >= MAX_HELD)
      return undefined;
    const before = snapshot.objects[event.kind].get(keyOf(event.object));
    if (before === undefined || !onlyStatusChanged(before, event.object)) return undefined;
    this.#held.push(event);
    return before;
  }

  /** `snapshot` with the held updates applied (the same object when none are held). */
  flush(snapshot: Snapshot): Snapshot {
    if (this.#held.length === 0) return snapshot;
    const next = applyAll(snapshot, this.#held).snapshot;
    this.#held = [];
    return next;
  }

  get size(): number {
    return this.#held.length;
  }
}
