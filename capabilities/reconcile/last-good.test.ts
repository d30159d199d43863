import { GatewayRef, lastGoodSecret } from "../workload";
import fc from "fast-check";
import type { KubeClient } from "../kube/client";
import { KubeError } from "../kube/client";
import type { SealedConfig } from "../caddy";

import type { KubeObject } from "../snapshot";
import {
  AcceptedConfig,
  LastGoodTrack,
  MAX_SECRET_DATA_BYTES,
  decideLastGood,
  lastGoodCurrent,
  storedLastGood,
  withoutLastGoodData,
} from "./last-good";
import { LAST_GOOD_FIELD_MANAGER, LastGoodWriter } from "./last-good-writer";

const policy = { intervalMs: 1000, maxBytes: 100 };
const hex = fc.stringMatching(/^[0-9a-f]{4}$/);
const stored = fc.record({ hash: hex, key: fc.constantFrom("k1", "k2"), stored: fc.boolean() });
const track: fc.Arbitrary<LastGoodTrack> = fc.record(
  { stored, writtenAt: fc.integer({ min: 0, max: 10_000 }) },
  { requiredKeys: [] },
);
const accepted: fc.Arbitrary<AcceptedConfig> = fc.record({
  hash: hex,
  key: fc.constantFrom("k1", "k2"),
  bytes: fc.integer({ min: 1, max: 200 }),
});

describe("decideLastGood", () => {
  it("writes only what the Secret lacks, at most once per interval, and stores nothing beyond the limit", () => {
    fc.assert(
      fc.property(track, accepted, fc.integer({ min: 0, max: 20_000 }), (t, a, now) => {
        const d = decideLastGood(t, a, now, policy);
        const fits = a.bytes <= policy.maxBytes;
        const same =
          t.stored?.hash === a.hash && t.stored.key === a.key && t.stored.stored === fits;
        if (same) return d.action === "none";
        const early = t.writtenAt !== undefined && now < t.writtenAt + policy.intervalMs;
        if (early)
          return (
            d.action === "wait" && d.until === t.writtenAt! + policy.intervalMs && d.until > now
          );
        return d.action === "write" && d.store === fits;
      }),
      { numRuns: 2000 },
    );
  });

  it("rewrites when the proxy build (key) changes, even for the same hash", () => {
    expect(
      decideLastGood(
        { stored: { hash: "aa", key: "k1", stored: true } },
        { hash: "aa", key: "k2", bytes: 10 },
        0,
        policy,
      ),
    ).toEqual({ action: "write", store: true });
  });

  it("uses the API server's Secret limit by default", () => {
    const a = { hash: "aa", key: "k", bytes: MAX_SECRET_DATA_BYTES };
    expect(decideLastGood({}, a, 0)).toEqual({ action: "write", store: true });
    expect(decideLastGood({}, { ...a, bytes: a.bytes + 1 }, 0)).toEqual({
      action: "write",
      store: false,
    });
  });
});

const gw: GatewayRef = { namespace: "ns", name: "web", uid: "u1", listeners: [] };
const sealed = (hash: string, size = 10): SealedConfig => ({
  hash,
  bytes: Buffer.from(`{"k":"${"x".repeat(Math.max(0, size - 8))}"}`),
});

describe("lastGoodCurrent", () => {
  it("holds when the Secret was written for the desired hash, stored or too large", () => {
    expect(lastGoodCurrent("h1", { hash: "h1", key: "k", stored: true })).toBe(true);
    expect(lastGoodCurrent("h1", { hash: "h1", key: "k", stored: false })).toBe(true);
    expect(lastGoodCurrent("h2", { hash: "h1", key: "k", stored: true })).toBe(false);
    expect(lastGoodCurrent("h1", undefined)).toBe(false);
    expect(lastGoodCurrent(undefined, undefined)).toBe(false);
  });
});

describe("lastGoodSecret / storedLastGood", () => {
  it("holds the config under its key, owned by the Gateway; says what it holds", () => {
    const config = sealed("h1");
    const m = lastGoodSecret(gw, { key: "config-abc.json", hash: "h1", config: config.bytes });
    expect(m).toMatchObject({
      kind: "Secret",
      type: "Opaque",
      metadata: {
        name: "web-kengine-last-good",
        namespace: "ns",
        labels: { "app.kubernetes.io/managed-by": "kengine-gateway" },
        ownerReferences: [{ kind: "Gateway", name: "web", uid: "u1", controller: true }],
      },
    });
    const data = m.data as Record<string, string>;
    expect(Object.keys(data)).toEqual(["config-abc.json"]);
    expect(Buffer.from(data["config-abc.json"]!, "base64").equals(config.bytes)).toBe(true);
    expect(storedLastGood(m as unknown as KubeObject)).toEqual({
      hash: "h1",
      key: "config-abc.json",
      stored: true,
    });
    const empty = lastGoodSecret(gw, { key: "config-abc.json", hash: "h2" });
    expect(empty.data).toEqual({});
    expect(storedLastGood(empty as unknown as KubeObject)).toEqual({
      hash: "h2",
      key: "config-abc.json",
      stored: false,
    });
    expect(storedLastGood(undefined)).toBeUndefined();
    // the controller keeps the annotations, not the config (nor its private keys)
    const kept = withoutLastGoodData("Secret", m as unknown as KubeObject);
    expect(kept).not.toHaveProperty("data");
    expect(storedLastGood(kept)).toEqual(storedLastGood(m as unknown as KubeObject));
    const other = { ...m, metadata: { ...m.metadata, labels: {} } } as unknown as KubeObject;
    expect(withoutLastGoodData("Secret", other)).toBe(other);
    expect(storedLastGood({ metadata: { name: "x" } } as KubeObject)).toBeUndefined();
  });
});

/** A fake API server for the writer's orchestration: records applies, fails on demand. */
function fakeKube() {
  const applied: { path: string; body: ReturnType<typeof lastGoodSecret> }[] = [];
  let fail = 0;
  const kube: KubeClient = {
    request: <T>(method: string, path: string, body?: unknown): Promise<T> => {
      expect(method).toBe("PATCH");
      if (fail > 0) {
        fail--;
        return Promise.reject(
          new KubeError(500, '{"reason":"InternalError","message":"x"}', "PATCH"),
        );
      }
      applied.push({ path, body: body as ReturnType<typeof lastGoodSecret> });
      return Promise.resolve(undefined as T);
    },
  };
  return { kube, applied, failNext: (n: number) => (fail = n) };
}

const silent = { info: () => {}, warn: () => {} };
const storedHash = (b: ReturnType<typeof lastGoodSecret>) =>
  b.metadata.annotations?.["gateway.kengine.io/config-hash"];

describe("LastGoodWriter", () => {
  it("writes the first accepted config at once and the newest of a burst after the interval", async () => {
    const api = fakeKube();
    const w = new LastGoodWriter({
      kube: api.kube,
      isLeader: () => true,
      log: silent,
      policy: { intervalMs: 100, maxBytes: 1000 },
    });
    w.observe([{ ref: gw, stored: undefined }]);
    for (const h of ["h1", "h2", "h3", "h4", "h5"]) w.accepted("ns/web", "k", sealed(h));
    await w.idle();
    await until(() => api.applied.length >= 2);
    await w.idle();
    expect(api.applied.map(a => storedHash(a.body))).toEqual(["h1", "h5"]);
    expect(api.applied[0]!.path).toBe(
      `/api/v1/namespaces/ns/secrets/web-kengine-last-good?fieldManager=${LAST_GOOD_FIELD_MANAGER}&force=true`,
    );
    // the same config again: nothing to write
    w.accepted("ns/web", "k", sealed("h5"));
    await w.idle();
    expect(api.applied).toHaveLength(2);
    w.close();
  });

  it("does not rewrite what the Secret already holds (a restarted controller adopting proxies)", async () => {
    const api = fakeKube();
    const w = new LastGoodWriter({ kube: api.kube, isLeader: () => true, log: silent });
    w.observe([{ ref: gw, stored: { hash: "h1", key: "k", stored: true } }]);
    w.accepted("ns/web", "k", sealed("h1"));
    w.accepted("ns/other", "k", sealed("h2")); // not a managed Gateway of the last build
    await w.idle();
    expect(api.applied).toHaveLength(0);
    w.close();
  });

  it("writes again when the snapshot shows the Secret gone", async () => {
    const api = fakeKube();
    const w = new LastGoodWriter({
      kube: api.kube,
      isLeader: () => true,
      log: silent,
      policy: { intervalMs: 0, maxBytes: 1000 },
    });
    w.observe([{ ref: gw, stored: undefined }]);
    w.accepted("ns/web", "k", sealed("h1"));
    await w.idle();
    // the watch brings our write back, then the Secret's deletion
    w.observe([{ ref: gw, stored: { hash: "h1", key: "k", stored: true } }]);
    w.accepted("ns/web", "k", sealed("h1"));
    await w.idle();
    expect(api.applied).toHaveLength(1);
    w.observe([{ ref: gw, stored: undefined }]);
    w.accepted("ns/web", "k", sealed("h1"));
    await w.idle();
    expect(api.applied.map(a => storedHash(a.body))).toEqual(["h1", "h1"]);
    w.close();
  });

  it("writes nothing unless leader", async () => {
    const api = fakeKube();
    const w = new LastGoodWriter({ kube: api.kube, isLeader: () => false, log: silent });
    w.observe([{ ref: gw, stored: undefined }]);
    w.accepted("ns/web", "k", sealed("h1"));
    await w.idle();
    expect(api.applied).toHaveLength(0);
    w.close();
  });

  it("beyond the limit: writes the Secret empty and reports it", async () => {
    const api = fakeKube();
    const reported: number[] = [];
    const w = new LastGoodWriter({
      kube: api.kube,
      isLeader: () => true,
      log: silent,
      policy: { intervalMs: 10, maxBytes: 50 },
      onTooLarge: (_gw, bytes) => reported.push(bytes),
    });
    w.observe([{ ref: gw, stored: { hash: "h0", key: "k", stored: true } }]);
    w.accepted("ns/web", "k", sealed("big", 51));
    await w.idle();
    expect(api.applied).toHaveLength(1);
    expect(api.applied[0]!.body.data).toEqual({});
    expect(api.applied[0]!.body.metadata.annotations).toMatchObject({
      "gateway.kengine.io/config-hash": "big",
      "gateway.kengine.io/config-stored": "false",
    });
    expect(reported).toEqual([51]);
    w.close();
  });

  it("retries a failed write after the interval, with the newest config", async () => {
    const api = fakeKube();
    const warnings: Record<string, unknown>[] = [];
    const w = new LastGoodWriter({
      kube: api.kube,
      isLeader: () => true,
      log: { info: () => {}, warn: (_m, meta) => warnings.push(meta ?? {}) },
      policy: { intervalMs: 20, maxBytes: 1000 },
    });
    w.observe([{ ref: gw, stored: undefined }]);
    api.failNext(1);
    w.accepted("ns/web", "k", sealed("h1"));
    await until(() => api.applied.length >= 1);
    await w.idle();
    expect(api.applied.map(a => storedHash(a.body))).toEqual(["h1"]);
    // the warning names the API server's reason, never the bytes sent
    expect(warnings[0]).toEqual({ gateway: "ns/web", status: 500, reason: "InternalError" });
    w.close();
  });
});

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise(r => setTimeout(r, 10));
  expect(cond()).toBe(true);
}
