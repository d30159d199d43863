/**
 * Secrets and ConfigMaps through the ingest path as the reconciler runs it (metadata from the
 * watch, whole objects read only when referenced): the translation of what it keeps equals the
 * translation of the whole objects, for every golden input in any order; a referenced object is
 * never seen without its data between two versions; nothing is remembered of deleted objects.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { parseSnapshotYAML } from "../../hack/translate";
import {
  Kind,
  KubeObject,
  Snapshot,
  applyAll,
  keyOf,
  metadataOnly,
  asMetadataOnly,
  snapshotOf,
} from "../snapshot";
import { translate } from "../translate";
import { Ingest } from "./ingest";
import { DataKind, ReferencedData, isDataKind, wantedData } from "./referenced-data";

/** A fake API server: whole objects by "Kind/namespace/name", resourceVersions and uids it assigns. */
class Cluster {
  readonly objects = new Map<string, KubeObject>();
  #rv = 100;
  gets = 0;
  put(o: KubeObject): KubeObject {
    const id = `${o.kind}/${keyOf(o)}`;
    const uid = this.objects.get(id)?.metadata.uid ?? `uid-${this.#rv}`;
    const stored = {
      ...o,
      metadata: { ...o.metadata, resourceVersion: String(++this.#rv), uid },
    } as KubeObject;
    this.objects.set(id, stored);
    return stored;
  }
  remove(kind: Kind, key: string): KubeObject {
    const o = this.objects.get(`${kind}/${key}`)!;
    this.objects.delete(`${kind}/${key}`);
    return { ...o, metadata: { ...o.metadata, resourceVersion: String(++this.#rv) } } as KubeObject;
  }
}

/** The reconciler's ingest path (reconciler.ts `ingest`), on a synced snapshot. */
function pipeline(
  cluster: Cluster,
  opts: { gate?: () => Promise<void>; now?: () => number; timers?: (() => void)[] } = {},
) {
  let snapshot: Snapshot = snapshotOf([]);
  const ingest = new Ingest();
  const feed = (kind: Kind, type: "upsert" | "delete", object: KubeObject): void => {
    const i = ingest.event(kind, type, object, new Set());
    if (!i) return;
    const e = data.admitEvent(i.event, snapshot);
    if (!e) return;
    snapshot = applyAll(snapshot, [e]).snapshot;
    const strip = data.sync(snapshot);
    if (strip.length) snapshot = applyAll(snapshot, strip).snapshot;
  };
  const data: ReferencedData = new ReferencedData({
    get: async (kind: DataKind, namespace: string, name: string) => {
      await opts.gate?.();
      cluster.gets++;
      const o = cluster.objects.get(`${kind}/${namespace}/${name}`);
      if (!o) throw Object.assign(new Error("not found"), { status: 404 });
      return o;
    },
    deliver: (kind, object) => feed(kind, "upsert", object),
    snapshot: () => snapshot,
    onSettled: () => {},
    sleep: () => Promise.resolve(),
    random: () => 0.5,
    backoff: { initialMs: 1, maxMs: 1, factor: 1, jitter: 0 },
    setTimer: fn => opts.timers?.push(fn),
    now: opts.now,
    waitMs: 1000,
  });
  return {
    /** A watch event: data kinds as metadata only, as the watch asks for. */
    watch(kind: Kind, type: "upsert" | "delete", o: KubeObject): void {
      feed(kind, type, isDataKind(kind) ? asMetadataOnly(o) : o);
    },
    get snapshot() {
      return snapshot;
    },
    ingest,
    data,
  };
}

const dir = join(__dirname, "..", "..", "tests", "golden");
const goldens = readdirSync(dir)
  .filter(f => f.endsWith(".in.yaml"))
  .map(f => ({
    name: f.slice(0, -".in.yaml".length),
    objects: parseSnapshotYAML(readFileSync(join(dir, f), "utf8")).filter(
      o => o.kind !== "ProxyRefusal",
    ),
  }))
  .filter(g => g.objects.some(o => o.kind === "Secret" || o.kind === "ConfigMap"));

/** The translation without what differs between two equal inputs (nothing but order). */
const translated = (s: Snapshot) => translate(s);

/** Objects as the fake API server stores them (resourceVersions, uids), comparable to a snapshot. */
const stored = (cluster: Cluster) => [...cluster.objects.values()];

describe("referenced data", () => {
  it("has golden inputs with Secrets or ConfigMaps", () => {
    expect(goldens.length).toBeGreaterThan(5);
  });

  it.each(goldens.map(g => [g.name, g.objects] as const))(
    "%s: the translation of what ingest keeps equals that of the whole objects, in any order",
    async (_name, objects) => {
      await fc.assert(
        fc.asyncProperty(
          fc.shuffledSubarray([...objects], { minLength: objects.length }),
          async order => {
            const cluster = new Cluster();
            const p = pipeline(cluster);
            for (const o of order) p.watch(o.kind as Kind, "upsert", cluster.put(o));
            await p.data.idle();
            expect(translated(p.snapshot)).toEqual(translated(snapshotOf(stored(cluster))));
            // Kept whole: only what is wanted; every other one is its metadata.
            const wanted = wantedData(p.snapshot);
            for (const kind of ["Secret", "ConfigMap"] as const)
              for (const [key, o] of p.snapshot.objects[kind])
                expect(metadataOnly(o)).toBe(
                  !(kind === "Secret" ? wanted.secrets : wanted.configMaps).has(key),
                );
            // Nothing references them any more: every one goes back to its metadata.
            for (const o of order)
              if (!isDataKind(o.kind as Kind))
                p.watch(o.kind as Kind, "delete", cluster.remove(o.kind as Kind, keyOf(o)));
            for (const kind of ["Secret", "ConfigMap"] as const)
              for (const o of p.snapshot.objects[kind].values()) expect(metadataOnly(o)).toBe(true);
          },
        ),
        { numRuns: 5 },
      );
    },
  );

  const GW = "gateway.networking.k8s.io/v1";
  const gatewayClass = {
    apiVersion: GW,
    kind: "GatewayClass",
    metadata: { name: "kengine" },
    spec: { controllerName: "kengine.io/gateway-controller" },
  } as KubeObject;
  const gateway = (secret: string) =>
    ({
      apiVersion: GW,
      kind: "Gateway",
      metadata: { name: "gw", namespace: "shop" },
      spec: {
        gatewayClassName: "kengine",
        listeners: [
          {
            name: "https",
            protocol: "HTTPS",
            port: 443,
            tls: { certificateRefs: [{ name: secret }] },
          },
        ],
      },
    }) as KubeObject;
  const secret = (name: string, value: string) =>
    ({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, namespace: "shop" },
      data: { "tls.crt": value, "tls.key": value },
    }) as KubeObject;

  it("reads a Secret when a listener starts referencing it, and drops the data of the one it left", async () => {
    const cluster = new Cluster();
    const p = pipeline(cluster);
    p.watch("GatewayClass", "upsert", cluster.put(gatewayClass));
    p.watch("Secret", "upsert", cluster.put(secret("a", "QQ==")));
    p.watch("Secret", "upsert", cluster.put(secret("b", "Qg==")));
    expect(cluster.gets).toBe(0);
    p.watch("Gateway", "upsert", cluster.put(gateway("a")));
    await p.data.idle();
    expect(p.snapshot.objects.Secret.get("shop/a")?.data).toEqual({
      "tls.crt": "QQ==",
      "tls.key": "QQ==",
    });
    expect(metadataOnly(p.snapshot.objects.Secret.get("shop/b")!)).toBe(true);
    p.watch("Gateway", "upsert", cluster.put(gateway("b")));
    await p.data.idle();
    expect(p.snapshot.objects.Secret.get("shop/b")?.data).toEqual({
      "tls.crt": "Qg==",
      "tls.key": "Qg==",
    });
    expect(metadataOnly(p.snapshot.objects.Secret.get("shop/a")!)).toBe(true);
    expect(cluster.gets).toBe(2);
  });

  it("keeps the whole older version of a referenced Secret while its newer one is read", async () => {
    const cluster = new Cluster();
    let release: () => void = () => {};
    let blocked = false;
    const p = pipeline(cluster, {
      gate: () => (blocked ? new Promise<void>(r => (release = r)) : Promise.resolve()),
    });
    p.watch("GatewayClass", "upsert", cluster.put(gatewayClass));
    p.watch("Gateway", "upsert", cluster.put(gateway("a")));
    p.watch("Secret", "upsert", cluster.put(secret("a", "MQ==")));
    await p.data.idle();
    const first = p.snapshot.objects.Secret.get("shop/a")!;
    expect(first.data?.["tls.crt"]).toBe("MQ==");
    blocked = true;
    const second = cluster.put(secret("a", "Mg=="));
    p.watch("Secret", "upsert", second);
    // the read is in flight: the snapshot still holds the first version, whole
    await Promise.resolve();
    expect(p.snapshot.objects.Secret.get("shop/a")).toBe(first);
    expect(p.data.reading).toBe(1);
    release();
    await p.data.idle();
    expect(p.snapshot.objects.Secret.get("shop/a")?.data?.["tls.crt"]).toBe("Mg==");
    expect(p.snapshot.objects.Secret.get("shop/a")?.metadata.resourceVersion).toBe(
      second.metadata.resourceVersion,
    );
  });

  it("holds builds while a referenced object is read, for one bound at most however long reads go on", async () => {
    const cluster = new Cluster();
    let now = 0;
    const timers: (() => void)[] = [];
    const releases: (() => void)[] = [];
    const p = pipeline(cluster, {
      gate: () => new Promise<void>(r => releases.push(r)),
      now: () => now,
      timers,
    });
    const tick = () => new Promise(r => setImmediate(r));
    const names = ["s0", "s1", "s2", "s3", "s4", "s5"];
    p.watch("GatewayClass", "upsert", cluster.put(gatewayClass));
    const gw = gateway("s0") as unknown as { spec: { listeners: { tls: object }[] } };
    gw.spec.listeners[0]!.tls = { certificateRefs: names.map(name => ({ name })) };
    p.watch("Gateway", "upsert", cluster.put(gw as unknown as KubeObject));
    expect(p.data.holdsBuilds()).toBe(false);
    p.watch("Secret", "upsert", cluster.put(secret("s0", "MA==")));
    expect(p.data.holdsBuilds()).toBe(true);
    // the bound's timer asks for a build when it passes
    expect(timers).toHaveLength(1);
    now = 999;
    expect(p.data.holdsBuilds()).toBe(true);
    now = 1000;
    expect(p.data.holdsBuilds()).toBe(false);
    // reads keep coming without a pause (each begins before the last ends): not held again
    for (const name of names.slice(1)) {
      p.watch("Secret", "upsert", cluster.put(secret(name, "MQ==")));
      await tick();
      releases.shift()!();
      await tick();
      expect(p.data.reading).toBeGreaterThan(0);
      now += 100;
      expect(p.data.holdsBuilds()).toBe(false);
    }
    await tick();
    for (const r of releases.splice(0)) r();
    await p.data.idle();
    // a read after a pause holds builds again
    expect(p.data.holdsBuilds()).toBe(false);
    p.watch("Secret", "upsert", cluster.put(secret("s0", "Mg==")));
    expect(p.data.holdsBuilds()).toBe(true);
    await tick();
    for (const r of releases.splice(0)) r();
    await p.data.idle();
    expect(p.snapshot.objects.Secret.get("shop/s0")?.data?.["tls.crt"]).toBe("Mg==");
  });

  it("never brings back a Secret deleted while it was being read", async () => {
    const cluster = new Cluster();
    let release: () => void = () => {};
    const p = pipeline(cluster, { gate: () => new Promise<void>(r => (release = r)) });
    p.watch("GatewayClass", "upsert", cluster.put(gatewayClass));
    p.watch("Gateway", "upsert", cluster.put(gateway("a")));
    const created = cluster.put(secret("a", "MQ=="));
    p.watch("Secret", "upsert", created);
    expect(p.data.reading).toBe(1);
    // deleted in the cluster after the GET was answered, before the answer arrived
    await Promise.resolve();
    p.watch("Secret", "delete", {
      ...created,
      metadata: { ...created.metadata, resourceVersion: "999" },
    });
    release();
    await p.data.idle();
    expect(p.snapshot.objects.Secret.has("shop/a")).toBe(false);
  });

  it("wants each of our Gateways' management Secret and the admin Secrets its parameters name", () => {
    const params = {
      apiVersion: "gateway.kengine.io/v1alpha1",
      kind: "KengineParameters",
      metadata: { name: "byo", namespace: "shop" },
      spec: {
        mode: "External",
        external: { clientCertificateSecretName: "admin-client", caSecretName: "admin-ca" },
      },
    } as KubeObject;
    const gw = {
      ...gateway("cert"),
      spec: {
        ...(gateway("cert") as unknown as { spec: object }).spec,
        infrastructure: {
          parametersRef: { group: "gateway.kengine.io", kind: "KengineParameters", name: "byo" },
        },
      },
    } as KubeObject;
    const w = wantedData(snapshotOf([gatewayClass, gw, params]));
    expect([...w.secrets].sort()).toEqual(
      ["shop/admin-ca", "shop/admin-client", "shop/cert", "shop/gw-kengine-admin"].sort(),
    );
    // Another controller's Gateway: nothing.
    const other = { ...gatewayClass, spec: { controllerName: "example.com/other" } } as KubeObject;
    expect([...wantedData(snapshotOf([other, gw, params])).secrets]).toEqual([]);
  });

  it("wants another namespace's Secret only while a ReferenceGrant allows it, and only for ListenerSets attached to our Gateways", () => {
    const crossRef = {
      ...gateway("x"),
      spec: {
        gatewayClassName: "kengine",
        listeners: [
          {
            name: "https",
            protocol: "HTTPS",
            port: 443,
            tls: { certificateRefs: [{ name: "platform-cert", namespace: "platform" }] },
          },
        ],
      },
    } as KubeObject;
    const grant = {
      apiVersion: "gateway.networking.k8s.io/v1beta1",
      kind: "ReferenceGrant",
      metadata: { name: "g", namespace: "platform" },
      spec: {
        from: [{ group: "gateway.networking.k8s.io", kind: "Gateway", namespace: "shop" }],
        to: [{ group: "", kind: "Secret" }],
      },
    } as KubeObject;
    const listenerSet = (parent: string) =>
      ({
        apiVersion: "gateway.networking.x-k8s.io/v1alpha1",
        kind: "ListenerSet",
        metadata: { name: "ls", namespace: "tenant" },
        spec: {
          parentRef: { name: parent, namespace: "shop" },
          listeners: [
            {
              name: "t",
              protocol: "HTTPS",
              port: 443,
              tls: { certificateRefs: [{ name: "tenant-cert" }] },
            },
          ],
        },
      }) as KubeObject;
    const secrets = (objects: KubeObject[]) =>
      [...wantedData(snapshotOf([gatewayClass, ...objects])).secrets].filter(
        k => !k.endsWith("-kengine-admin"),
      );
    expect(secrets([crossRef])).toEqual([]);
    expect(secrets([crossRef, grant])).toEqual(["platform/platform-cert"]);
    expect(secrets([crossRef, listenerSet("gw")]).sort()).toEqual(["tenant/tenant-cert"]);
    expect(secrets([crossRef, listenerSet("not-ours")])).toEqual([]);
  });

  it("forgets deleted objects: thousands of create/delete cycles leave every internal map as it was", async () => {
    const cluster = new Cluster();
    const p = pipeline(cluster);
    p.watch("GatewayClass", "upsert", cluster.put(gatewayClass));
    p.watch("Gateway", "upsert", cluster.put(gateway("cert")));
    await p.data.idle();
    const before = {
      remembered: p.ingest.remembered,
      reading: p.data.reading,
      secrets: p.snapshot.objects.Secret.size,
      configMaps: p.snapshot.objects.ConfigMap.size,
    };
    for (let i = 0; i < 3000; i++) {
      const cm = cluster.put({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: `tenant-${i}`, namespace: "tenant" },
        data: { big: "x".repeat(64) },
      } as KubeObject);
      p.watch("ConfigMap", "upsert", cm);
      // the referenced certificate comes and goes too (read, then forgotten)
      p.watch("Secret", "upsert", cluster.put(secret("cert", "QQ==")));
      await p.data.idle();
      p.watch("ConfigMap", "delete", cluster.remove("ConfigMap", keyOf(cm)));
      p.watch("Secret", "delete", cluster.remove("Secret", "shop/cert"));
    }
    expect({
      remembered: p.ingest.remembered,
      reading: p.data.reading,
      secrets: p.snapshot.objects.Secret.size,
      configMaps: p.snapshot.objects.ConfigMap.size,
    }).toEqual(before);
    expect(cluster.gets).toBe(3000);
  });
});
