/**
 * Secrets and ConfigMaps: data only of those an object of ours references.
 *
 * Both kinds are listed and watched as metadata only (the API server's PartialObjectMetadata:
 * no `data`, a few hundred bytes per object whatever its size), so a namespace full of large
 * ConfigMaps costs the controller their names, not their contents, at every list and watch
 * event. The whole object is read (GET) only of those the translator or the planner reads
 * (`wantedData`): the snapshot holds those whole and every other one as its metadata.
 *
 * - A metadata event of a wanted object whose whole version the snapshot holds is held back
 *   while the newer version is read, so the translator never sees a referenced Secret lose its
 *   data between two versions (a certificate rotation serves the old pair until the new one
 *   arrives, never none).
 * - An object that becomes wanted (a listener starts referencing it) is read at once; builds
 *   wait for reads in flight, up to `waitMs`, so the first translation that sees the reference
 *   sees the data too.
 * - An object no longer wanted is put back to its metadata.
 *
 * The decisions are pure functions of the snapshot (`wantedData`, memoised per snapshot maps in
 * a module-level WeakMap); this class holds only the reads in flight (one entry per object
 * being read, removed when the read ends).
 */
import type { V1Ingress, V1IngressClass } from "@kubernetes/client-node";
import { classOf, servingOf } from "../ingress/classes";
import { ACME_ISSUER_OPTION, acmeSecretName } from "../validation/acme";
import { managementSecretName } from "../workload";
import { isOurClass } from "../ownership";
import { resolveSettings } from "../provision";

import { BackoffPolicy, backoffDelay } from "../proxies/backoff";
import {
  DataPermitted,
  GATEWAY_GROUP,
  Kind,
  KubeObject,
  Snapshot,
  SnapshotEvent,
  asMetadataOnly,
  collectDataReferences,
  dataReferences,
  keyOf,
  metadataOnly,
} from "../snapshot";
import { refPermitted } from "../translate/refs";

export type DataKind = "Secret" | "ConfigMap";
export const DATA_KINDS: readonly DataKind[] = ["Secret", "ConfigMap"];
export const isDataKind = (kind: Kind): kind is DataKind =>
  kind === "Secret" || kind === "ConfigMap";

/** Accept header of a metadata-only list. */
export const METADATA_LIST_ACCEPT =
  "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
/** Accept header of a metadata-only watch (each event's object a PartialObjectMetadata). */
export const METADATA_WATCH_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/** The Accept header of a kind's list (undefined: whole objects). */
export const listAccept = (kind: Kind): string | undefined =>
  isDataKind(kind) ? METADATA_LIST_ACCEPT : undefined;
/** The Accept header of a kind's watch (undefined: whole objects). */
export const watchAccept = (kind: Kind): string | undefined =>
  isDataKind(kind) ? METADATA_WATCH_ACCEPT : undefined;

/** The Secrets and ConfigMaps ("namespace/name") whose data is kept. */
export interface WantedData {
  readonly secrets: ReadonlySet<string>;
  readonly configMaps: ReadonlySet<string>;
}

const wantedCache = new WeakMap<object, WeakMap<object, WeakMap<object, WantedData>>>();

/** The ReferenceGrant rule translation applies (translate/refs.ts). */
const granted =
  (s: Snapshot): DataPermitted =>
  (from, to) =>
    refPermitted(
      s,
      { group: GATEWAY_GROUP, kind: from.kind, namespace: from.namespace },
      { group: "", kind: to.kind, namespace: to.namespace, name: to.name },
    );

/**
 * Every Secret and ConfigMap whose data the controller reads from the snapshot: what the Gateway
 * API objects reference (snapshot.ts dataReferences: certificates, CA bundles, ACME
 * certificates), each of our Gateways' management Secret (plan.ts storedServing), and the
 * bring-your-own admin Secrets its parameters name (external.ts). Cached on the maps it reads.
 */
export function wantedData(s: Snapshot): WantedData {
  const base = wantedByGateways(s);
  const tls = ingressSecrets(s);
  if (tls.size === 0) return base;
  let byTls = withIngressCache.get(base);
  if (!byTls) withIngressCache.set(base, (byTls = new WeakMap()));
  let wanted = byTls.get(tls);
  if (!wanted) byTls.set(tls, (wanted = { ...base, secrets: new Set([...base.secrets, ...tls]) }));
  return wanted;
}

const withIngressCache = new WeakMap<object, WeakMap<object, WantedData>>();
const ingressCache = new WeakMap<object, WeakMap<object, ReadonlySet<string>>>();

/** The `tls` Secrets of the Ingresses of our classes (docs/ingress.md), cached on their maps. */
function ingressSecrets(s: Snapshot): ReadonlySet<string> {
  let byClasses = ingressCache.get(s.objects.Ingress);
  if (!byClasses) ingressCache.set(s.objects.Ingress, (byClasses = new WeakMap()));
  let found = byClasses.get(s.objects.IngressClass);
  if (!found) {
    const classes = [...s.objects.IngressClass.values()] as unknown as V1IngressClass[];
    const names = new Set<string>();
    for (const o of s.objects.Ingress.values()) {
      const ingress = o as unknown as V1Ingress;
      const cls = classOf(ingress, classes);
      if (!cls) continue;
      // Automatic HTTPS (docs/ingress.md): the certificate Secret in the serving Gateway's namespace.
      const serving = servingOf(cls);
      const acme =
        serving.kind === "Gateway" &&
        Boolean(
          ingress.metadata?.annotations?.[ACME_ISSUER_OPTION] ??
            cls.metadata?.annotations?.[ACME_ISSUER_OPTION],
        );
      for (const t of Array.isArray(ingress.spec?.tls) ? ingress.spec.tls : [])
        if (typeof t?.secretName === "string" && t.secretName)
          names.add(`${o.metadata.namespace}/${t.secretName}`);
        else if (acme && serving.kind === "Gateway")
          for (const h of Array.isArray(t?.hosts) ? t.hosts.slice(0, 64) : [])
            if (typeof h === "string" && h) names.add(`${serving.namespace}/${acmeSecretName(h)}`);
    }
    byClasses.set(s.objects.IngressClass, (found = names));
  }
  return found;
}

function wantedByGateways(s: Snapshot): WantedData {
  // dataReferences changes with every map the references are read from but two
  const key = dataReferences(s);
  let byGrants = wantedCache.get(key);
  if (!byGrants) wantedCache.set(key, (byGrants = new WeakMap()));
  let byParams = byGrants.get(s.objects.ReferenceGrant);
  if (!byParams) byGrants.set(s.objects.ReferenceGrant, (byParams = new WeakMap()));
  let wanted = byParams.get(s.objects.KengineParameters);
  if (!wanted) byParams.set(s.objects.KengineParameters, (wanted = buildWanted(s)));
  return wanted;
}

function buildWanted(s: Snapshot): WantedData {
  // A reference to another namespace counts only when a ReferenceGrant allows it: translation
  // reads nothing else, so a tenant cannot have the controller keep other namespaces' data.
  const refs = collectDataReferences(s, granted(s));
  const secrets = new Set(refs.secrets);
  for (const gw of s.objects.Gateway.values()) {
    const gatewayClass = s.objects.GatewayClass.get(gw.spec?.gatewayClassName);
    if (!isOurClass(gatewayClass)) continue;
    const ns = gw.metadata.namespace ?? "";
    secrets.add(`${ns}/${managementSecretName(gw.metadata.name)}`);
    const external = resolveSettings(s, gatewayClass, gw).settings.external;
    for (const name of [external?.clientCertificateSecretName, external?.caSecretName])
      if (name) secrets.add(`${ns}/${name}`);
  }
  return { secrets, configMaps: refs.configMaps };
}

const rvOf = (o: KubeObject | undefined): bigint | undefined => {
  const rv = o?.metadata.resourceVersion;
  return rv && /^\d+$/.test(rv) ? BigInt(rv) : undefined;
};

/** `a` is older than `b` (both numeric resourceVersions). */
const older = (a: KubeObject | undefined, b: KubeObject | undefined): boolean => {
  const ra = rvOf(a);
  const rb = rvOf(b);
  return ra !== undefined && rb !== undefined && ra < rb;
};

export interface ReferencedDataDeps {
  /** Reads one whole object (GET); rejects with an error carrying `status` on HTTP errors. */
  readonly get: (kind: DataKind, namespace: string, name: string) => Promise<KubeObject>;
  /** A whole object read: into the snapshot, through the ingest path. */
  readonly deliver: (kind: DataKind, object: KubeObject) => void;
  /** The snapshot as it is now. */
  readonly snapshot: () => Snapshot;
  /** A read ended, or has run past `waitMs`: builds held for it may run. */
  readonly onSettled: () => void;
  readonly sleep: (ms: number) => Promise<void>;
  readonly random: () => number;
  readonly backoff: BackoffPolicy;
  readonly now?: () => number;
  /** One-shot timer for `waitMs` (default: real, unref'd). */
  readonly setTimer?: (fn: () => void, ms: number) => void;
  /** How long builds wait for a read (default DEFAULT_DATA_WAIT_MS). */
  readonly waitMs?: number;
  /** Reads at once (default 8). */
  readonly concurrency?: number;
  /** Each read's outcome (metrics, logs). */
  readonly onRead?: (
    kind: DataKind,
    key: string,
    outcome: "read" | "missing" | "failed",
    error?: unknown,
  ) => void;
}

/** Builds wait at most this long for a referenced object's data to be read. */
export const DEFAULT_DATA_WAIT_MS = 10_000;

interface Read {
  readonly kind: DataKind;
  readonly namespace: string;
  readonly name: string;
  /** The newest version announced while reading: a read older than it reads again. */
  announced: KubeObject | undefined;
}

const readId = (kind: DataKind, key: string) => `${kind}/${key}`;

const statusOf = (e: unknown): number | undefined => {
  const s = (e as { status?: unknown } | null)?.status;
  return typeof s === "number" ? s : undefined;
};

export class ReferencedData {
  /** Reads in flight or queued, by "Kind/namespace/name". */
  readonly #reads = new Map<string, Read>();
  readonly #done = new Set<() => void>();
  #slots: number;
  readonly #queue: (() => void)[] = [];
  #last: WantedData | undefined;
  #extra: ReadonlySet<string> = new Set();
  #stopped = false;
  /** Since when builds have been held for reads (undefined: no read in flight since). */
  #holdingSince: number | undefined;

  constructor(private readonly deps: ReferencedDataDeps) {
    this.#slots = deps.concurrency ?? 8;
  }

  /** Whether the data of `kind` `key` is kept (`extra`: more Secrets the last plans read). */
  #wanted(s: Snapshot, kind: DataKind, key: string): boolean {
    const w = wantedData(s);
    return kind === "Secret" ? w.secrets.has(key) || this.#extra.has(key) : w.configMaps.has(key);
  }

  /**
   * What the snapshot takes of an upsert of `object`: the object itself when its data is wanted
   * and it is whole; its metadata otherwise. A metadata-only object that is wanted is read
   * (GET); while it is, undefined keeps the whole older version in the snapshot.
   */
  admit(kind: DataKind, object: KubeObject, s: Snapshot): KubeObject | undefined {
    const key = keyOf(object);
    if (!this.#wanted(s, kind, key)) return metadataOnly(object) ? object : asMetadataOnly(object);
    if (!metadataOnly(object)) return object;
    const current = s.objects[kind].get(key) as KubeObject | undefined;
    if (current && !metadataOnly(current)) {
      if (current.metadata.resourceVersion === object.metadata.resourceVersion) return current;
      if (current.metadata.uid === object.metadata.uid) {
        this.#read(kind, object);
        return undefined;
      }
    }
    this.#read(kind, object);
    return object;
  }

  /**
   * The ingested event the snapshot takes: as it is, but a Secret's or ConfigMap's upsert as
   * `admit` says; undefined when there is nothing to apply (held back, or the very version the
   * snapshot holds).
   */
  admitEvent(event: SnapshotEvent, s: Snapshot): SnapshotEvent | undefined {
    if (event.type !== "upsert" || !isDataKind(event.kind)) return event;
    const admitted = this.admit(event.kind, event.object, s);
    if (!admitted || admitted === s.objects[event.kind].get(keyOf(admitted))) return undefined;
    return admitted === event.object ? event : { ...event, object: admitted };
  }

  /** A list's items as the snapshot takes them (an item held back: the version it holds). */
  listed(kind: DataKind, items: readonly KubeObject[], s: Snapshot): KubeObject[] {
    return items.map(o => this.admit(kind, o, s) ?? (s.objects[kind].get(keyOf(o)) as KubeObject));
  }

  /**
   * After the snapshot changed: reads the objects that became wanted and the snapshot holds as
   * metadata, and returns the events that put those no longer wanted back to their metadata.
   * `extra`: Secrets the last plans read besides the snapshot's references.
   */
  sync(s: Snapshot, extra: ReadonlySet<string> = this.#extra): SnapshotEvent[] {
    const w = wantedData(s);
    const before = this.#last;
    const extraBefore = this.#extra;
    if (w === before && sameSet(extra, extraBefore)) return [];
    this.#last = w;
    this.#extra = extra;
    const events: SnapshotEvent[] = [];
    for (const kind of DATA_KINDS) {
      const map = s.objects[kind] as ReadonlyMap<string, KubeObject>;
      const now = kind === "Secret" ? [w.secrets, extra] : [w.configMaps];
      const was = before
        ? kind === "Secret"
          ? [before.secrets, extraBefore]
          : [before.configMaps]
        : [];
      const has = (sets: readonly ReadonlySet<string>[], key: string) =>
        sets.some(set => set.has(key));
      for (const set of now)
        for (const key of set) {
          const o = map.get(key);
          if (o && metadataOnly(o)) this.#read(kind, o);
        }
      for (const set of was)
        for (const key of set) {
          if (has(now, key)) continue;
          const o = map.get(key);
          if (o && !metadataOnly(o))
            events.push({ type: "upsert", kind, object: asMetadataOnly(o) });
        }
    }
    return events;
  }

  /**
   * Whether builds wait: reads are in flight, and have been without a pause for less than
   * `waitMs` (a stream of reads, say a referenced Secret updated without end, holds builds back
   * once, never for longer).
   */
  holdsBuilds(): boolean {
    if (this.#reads.size === 0) {
      this.#holdingSince = undefined;
      return false;
    }
    const now = (this.deps.now ?? Date.now)();
    const wait = this.deps.waitMs ?? DEFAULT_DATA_WAIT_MS;
    if (this.#holdingSince === undefined) {
      this.#holdingSince = now;
      (this.deps.setTimer ?? realTimer)(() => this.deps.onSettled(), wait);
    }
    return now - this.#holdingSince < wait;
  }

  /** Reads in flight or queued. */
  get reading(): number {
    return this.#reads.size;
  }

  /** Resolves when no read is in flight. */
  idle(): Promise<void> {
    if (this.#reads.size === 0) return Promise.resolve();
    return new Promise(resolve => this.#done.add(resolve));
  }

  stop(): void {
    this.#stopped = true;
    for (const start of this.#queue.splice(0)) start();
  }

  #read(kind: DataKind, announced: KubeObject): void {
    const key = keyOf(announced);
    const id = readId(kind, key);
    const running = this.#reads.get(id);
    if (running) {
      if (!running.announced || older(running.announced, announced)) running.announced = announced;
      return;
    }
    if (this.#stopped) return;
    const read: Read = {
      kind,
      namespace: announced.metadata.namespace ?? "",
      name: announced.metadata.name,
      announced,
    };
    this.#reads.set(id, read);
    void this.#run(read).finally(() => {
      this.#reads.delete(id);
      if (this.#reads.size === 0) this.#holdingSince = undefined;
      this.deps.onSettled();
      if (this.#reads.size === 0) for (const done of this.#done) done();
      if (this.#reads.size === 0) this.#done.clear();
    });
  }

  async #slot(): Promise<void> {
    if (this.#slots > 0) {
      this.#slots--;
      return;
    }
    await new Promise<void>(resolve => this.#queue.push(resolve));
  }

  #release(): void {
    const next = this.#queue.shift();
    if (next) next();
    else this.#slots++;
  }

  /** Whether `read` still has something to do: wanted, present, not yet whole and new enough. */
  #needed(read: Read): boolean {
    const s = this.deps.snapshot();
    const key = `${read.namespace}/${read.name}`;
    const current = s.objects[read.kind].get(key) as KubeObject | undefined;
    if (!current || !this.#wanted(s, read.kind, key)) return false;
    return metadataOnly(current) || older(current, read.announced);
  }

  /** Reads until the snapshot holds the newest announced version whole, or no longer wants it. */
  async #run(read: Read): Promise<void> {
    const key = `${read.namespace}/${read.name}`;
    for (let attempt = 1; !this.#stopped; ) {
      await this.#slot();
      let object: KubeObject;
      try {
        if (this.#stopped) return;
        object = await this.deps.get(read.kind, read.namespace, read.name);
      } catch (e) {
        if (statusOf(e) === 404) {
          // Deleted meanwhile: its DELETE event follows.
          this.deps.onRead?.(read.kind, key, "missing");
          return;
        }
        this.deps.onRead?.(read.kind, key, "failed", e);
        await this.deps.sleep(backoffDelay(this.deps.backoff, attempt++, this.deps.random));
        if (!this.#needed(read)) return;
        continue;
      } finally {
        this.#release();
      }
      this.deps.onRead?.(read.kind, key, "read");
      const now = this.deps.snapshot().objects[read.kind].get(key) as KubeObject | undefined;
      // Deleted (or replaced by a newer version) while reading: never brought back.
      if (now && !older(object, now) && now.metadata.uid === object.metadata.uid)
        this.deps.deliver(read.kind, object);
      if (!older(object, read.announced) || !this.#needed(read)) return;
    }
  }
}

const sameSet = (a: ReadonlySet<string>, b: ReadonlySet<string>): boolean =>
  a === b || (a.size === b.size && [...a].every(k => b.has(k)));

const realTimer = (fn: () => void, ms: number): void => {
  setTimeout(fn, ms).unref();
};
