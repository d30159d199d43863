/**
 * A Gateway whose update changed only its status (and resourceVersion) is translated as the
 * object it was before: translation never reads a Gateway's status, but every memo of the
 * translator that depends on a Gateway is keyed by its object (a route's attachment, the
 * listeners, the listener's route order), so each status write of ours, coming back as a new
 * object, would make the next build attach and sort every route of that Gateway again.
 *
 * Held by the incremental translator (reconcile/reuse.ts) and given to `translate` as an option:
 * a translation without it (a full build, a test's reference build) starts from the objects as
 * they are.
 */
import { sameData } from "../../same-data";

interface Named {
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly status?: unknown;
}

/** Everything translation may read: the object without its status and resourceVersion. */
const translated = (o: Named): unknown => {
  const { status: _status, ...rest } = o as Named & Record<string, unknown>;
  const { resourceVersion: _rv, ...metadata } = o.metadata as Record<string, unknown>;
  return { ...rest, metadata };
};

/**
 * Whether `after` differs from `before` only in status (and resourceVersion): nothing translation
 * reads changed. The batcher builds such an update without haste (snapshot/batch.ts).
 */
export const onlyStatusChanged = (before: Named, after: Named): boolean =>
  before === after || sameData(translated(before), translated(after));

const keyOf = (o: Named) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/** The Gateways of the last translation, by namespace/name. */
export class StatusEchoes {
  #last = new Map<string, Named>();

  /**
   * Each of `gateways`, or the object of the same name the last call returned when the two
   * differ only in status. Remembers only these (a Gateway gone is forgotten).
   */
  stable<T extends Named>(gateways: readonly T[]): T[] {
    const next = new Map<string, Named>();
    const out = gateways.map(g => {
      const key = keyOf(g);
      const previous = this.#last.get(key) as T | undefined;
      const kept = previous && previous !== g && onlyStatusChanged(previous, g) ? previous : g;
      next.set(key, kept);
      return kept;
    });
    this.#last = next;
    return out;
  }
}
