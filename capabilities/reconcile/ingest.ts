/**
 * Ingest stage: what a watch event or a list does before it reaches the snapshot. Events older
 * than one already seen for the object are dropped (resourceVersion); objects are stripped of
 * what we never read; and the stage says whether an event can change the translation (a
 * status-only update cannot) and whether it is about an object we made. Pure but for the
 * resourceVersions it remembers: one per object that exists (a delete forgets it, a list
 * replaces its kind's), so create/delete churn leaves nothing behind.
 */
import { isOurProxyObject } from "../ownership/proxies";
import { Kind, KubeObject, Snapshot, SnapshotEvent } from "../snapshot";
import { stripForIngest } from "../snapshot/strip";
import { withoutLastGoodData } from "./last-good";
import type { V1Ingress, V1IngressClass } from "@kubernetes/client-node";
import { classOf } from "../ingress/classes";
import { authService } from "../validation/nginx-auth";
import { NGINX_PREFIX } from "../validation/nginx-annotations";

const ourIngress = (s: Snapshot, o: KubeObject | undefined): boolean =>
  o !== undefined &&
  classOf(
    o as unknown as V1Ingress,
    [...s.objects.IngressClass.values()] as unknown as V1IngressClass[],
  ) !== undefined;

/** `namespace/name` of the Services the Ingresses of our classes name, per Ingress map. */
const ingressServicesMemo = new WeakMap<object, WeakMap<object, ReadonlySet<string>>>();

function ingressServices(s: Snapshot): ReadonlySet<string> {
  let byClasses = ingressServicesMemo.get(s.objects.Ingress);
  if (!byClasses) ingressServicesMemo.set(s.objects.Ingress, (byClasses = new WeakMap()));
  let found = byClasses.get(s.objects.IngressClass);
  if (found) return found;
  const services = new Set<string>();
  for (const o of s.objects.Ingress.values()) {
    if (!ourIngress(s, o)) continue;
    const spec = (o as unknown as V1Ingress).spec;
    const add = (name: unknown) => {
      if (typeof name === "string") services.add(`${o.metadata.namespace}/${name}`);
    };
    add(spec?.defaultBackend?.service?.name);
    for (const rule of Array.isArray(spec?.rules) ? spec.rules : [])
      for (const p of Array.isArray(rule?.http?.paths) ? rule.http.paths : [])
        add(p?.backend?.service?.name);
    // The authorization Service of an ingress-nginx auth-url (validation/nginx-auth.ts).
    const url = o.metadata.annotations?.[`${NGINX_PREFIX}auth-url`];
    const auth =
      typeof url === "string" ? authService(url.trim(), o.metadata.namespace ?? "") : undefined;
    if (auth && !("reason" in auth)) services.add(`${auth.namespace}/${auth.name}`);
  }
  byClasses.set(s.objects.IngressClass, (found = services));
  return found;
}

/**
 * Whether a Service or EndpointSlice event is about a backend of an Ingress of ours. The
 * snapshot's own relevance (snapshot.ts) knows only the Services routes name; an Ingress's
 * backends are named by the HTTPRoutes converted from it, which exist only inside a build, so
 * without this an endpoint change of such a Service (pods scaled, restarted) started no build.
 */
export function ingressBackendChange(snapshot: Snapshot, event: SnapshotEvent): boolean {
  if (event.type === "synced") return false;
  const o = event.object;
  const name =
    event.kind === "Service"
      ? o.metadata.name
      : event.kind === "EndpointSlice"
        ? o.metadata.labels?.["kubernetes.io/service-name"]
        : undefined;
  if (name === undefined || snapshot.objects.Ingress.size === 0) return false;
  return ingressServices(snapshot).has(`${o.metadata.namespace ?? ""}/${name}`);
}

const rvOf = (o: KubeObject): bigint | undefined => {
  const rv = o.metadata.resourceVersion;
  return rv && /^\d+$/.test(rv) ? BigInt(rv) : undefined;
};

const idOf = (o: KubeObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

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
  if (event.type === "synced") return true;
  const o = event.object;
  const before = snapshot.objects[event.kind].get(
    o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name,
  ) as KubeObject | undefined;
  // An Ingress of another controller, before and after, is never converted (ingress/classes.ts).
  if (event.kind === "Ingress" && !ourIngress(snapshot, before) && !ourIngress(snapshot, o))
    return false;
  if (event.type !== "upsert") return true;
  return before === undefined || specOf(before) !== specOf(o);
}

/** One ingested event: the snapshot event, and whether the object is one of ours. */
export interface Ingested {
  readonly event: SnapshotEvent & { type: "upsert" | "delete" };
  /** Made by us (a managed proxy's object) or a Secret the last plans read. */
  readonly ours: boolean;
}

export class Ingest {
  /** The newest resourceVersion seen of each object that exists, by kind. */
  readonly #seen = new Map<Kind, Map<string, bigint>>();

  #of(kind: Kind): Map<string, bigint> {
    let m = this.#seen.get(kind);
    if (!m) this.#seen.set(kind, (m = new Map()));
    return m;
  }

  /** Objects whose resourceVersion is remembered (tests: churn leaves nothing behind). */
  get remembered(): number {
    let n = 0;
    for (const m of this.#seen.values()) n += m.size;
    return n;
  }

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
    const key = idOf(object);
    const seen = this.#of(kind);
    const rv = rvOf(object);
    const last = seen.get(key);
    if (rv !== undefined && last !== undefined && rv < last) return undefined;
    // A deleted object is forgotten: a late event about it can only come from a read that began
    // before the delete, and the reads check the snapshot still holds the object (referenced-data.ts).
    if (type === "delete") seen.delete(key);
    else if (rv !== undefined) seen.set(key, rv);
    return {
      event: { type, kind, object: ingestable(kind, object) },
      ours: isOurProxyObject(object) || (kind === "Secret" && planSecrets.has(key)),
    };
  }

  /**
   * A list's items as the snapshot takes them; their resourceVersions replace the kind's (an
   * object the list no longer has is forgotten with it).
   */
  listed(kind: Kind, items: readonly KubeObject[]): KubeObject[] {
    const out = items.map(o => ingestable(kind, o));
    const seen = new Map<string, bigint>();
    for (const o of out) {
      const rv = rvOf(o);
      if (rv !== undefined) seen.set(idOf(o), rv);
    }
    this.#seen.set(kind, seen);
    return out;
  }
}
