/**
 * Ingest stage: what a watch event or a list does before it reaches the snapshot. Events older
 * than one already seen for the object are dropped (resourceVersion); objects are stripped of
 * what we never read; and the stage says whether an event can change the translation (a
 * status-only update cannot) and whether it is about an object we made. Pure but for the
 * resourceVersions it remembers.
 */
import { isOurProxyObject } from "../ownership/proxies";
import { Kind, KubeObject, Snapshot, SnapshotEvent } from "../snapshot";
import { stripForIngest } from "../snapshot/strip";
import { withoutLastGoodData } from "./last-good";

const rvOf = (o: KubeObject): bigint | undefined => {
  const rv = o.metadata.resourceVersion;
  return rv && /^\d+$/.test(rv) ? BigInt(rv) : undefined;
};

const idOf = (kind: Kind, o: KubeObject) =>
  `${kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/** The object as the snapshot keeps it: without what we never read. */
export const ingestable = (kind: Kind, o: KubeObject): KubeObject =>
  withoutLastGoodData(kind, stripForIngest(o));

/** The object without what translate() never reads: status and bookkeeping metadata. */
function specOf(o: KubeObject): string {
  const { status: _status, metadata, ...rest } = o as KubeObject & { status?: unknown };
  const {
    resourceVersion: _rv,
    managedFields: _mf,
    ...meta
  } = metadata as KubeObject["metadata"] & {
    resourceVersion?: string;
    managedFields?: unknown;
  };
  return JSON.stringify({ ...rest, metadata: meta });
}

/** Whether applying `event` can change the translation of `snapshot` (status-only updates cannot). */
export function changesTranslation(snapshot: Snapshot, event: SnapshotEvent): boolean {
  if (event.type !== "upsert") return true;
  const o = event.object;
  const before = snapshot.objects[event.kind].get(
    o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name,
  ) as KubeObject | undefined;
  return before === undefined || specOf(before) !== specOf(o);
}

/** One ingested event: the snapshot event, and whether the object is one of ours. */
export interface Ingested {
  readonly event: SnapshotEvent & { type: "upsert" | "delete" };
  /** Made by us (a managed proxy's object) or a Secret the last plans read. */
  readonly ours: boolean;
}

export class Ingest {
  /** The newest resourceVersion seen of each object. */
  readonly #seen = new Map<string, bigint>();

  /**
   * A watch event as the snapshot takes it, or undefined when it is older than one already
   * seen of the object (a late event after a relist). `planSecrets`: "namespace/name" of the
   * Secrets the last plans read besides the snapshot's references.
   */
  event(
    kind: Kind,
    type: "upsert" | "delete",
    object: KubeObject,
    planSecrets: ReadonlySet<string>,
  ): Ingested | undefined {
    const id = idOf(kind, object);
    const rv = rvOf(object);
    const last = this.#seen.get(id);
    if (rv !== undefined && last !== undefined && rv < last) return undefined;
    if (rv !== undefined) this.#seen.set(id, rv);
    const key = `${object.metadata.namespace ?? ""}/${object.metadata.name}`;
    return {
      event: { type, kind, object: ingestable(kind, object) },
      ours: isOurProxyObject(object) || (kind === "Secret" && planSecrets.has(key)),
    };
  }

  /** A list's items as the snapshot takes them; their resourceVersions are remembered. */
  listed(kind: Kind, items: readonly KubeObject[]): KubeObject[] {
    const out = items.map(o => ingestable(kind, o));
    for (const o of out) {
      const rv = rvOf(o);
      if (rv !== undefined) this.#seen.set(idOf(kind, o), rv);
    }
    return out;
  }
}
