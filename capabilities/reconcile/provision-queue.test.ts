import { KubeManifest } from "../workload";
import { Snapshot, emptySnapshot, snapshotOf } from "../snapshot";
import { ManualClock } from "./testing/manual-clock";
import { ProvisionPlan, ProvisionQueue } from "./provision-queue";

/** A fake API server: records requests; a path can be held (until released) or made to fail. */
function fakeKube() {
  const requests: string[] = [];
  const held = new Map<string, (() => void)[]>();
  const hold = new Set<string>();
  const fail = new Map<string, number>();
  const objects = new Map<string, { metadata: { labels?: Record<string, string>; uid: string } }>();
  const kube = {
    request: async <T>(method: string, path: string): Promise<T> => {
      const bare = path.split("?")[0]!;
      requests.push(`${method} ${bare}`);
      const match = [...hold].find(h => bare.includes(h));
      if (match) await new Promise<void>(r => held.set(match, [...(held.get(match) ?? []), r]));
      const code = [...fail].find(([f]) => bare.includes(f))?.[1];
      if (code) throw Object.assign(new Error(`HTTP ${code}`), { status: code });
      if (method === "GET") {
        const o = objects.get(bare);
        if (!o) throw Object.assign(new Error("HTTP 404"), { status: 404 });
        return o as T;
      }
      return {} as T;
    },
  };
  const release = (h: string) => {
    hold.delete(h);
    for (const r of held.get(h) ?? []) r();
    held.delete(h);
  };
  return { kube, requests, hold, release, fail, objects };
}

const deployment = (gw: string, replicas = 1): KubeManifest =>
  ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { namespace: "apps", name: `${gw}-proxy` },
    spec: { replicas },
  }) as unknown as KubeManifest;

const plan = (gw: string, replicas = 1, extra: Partial<ProvisionPlan> = {}): ProvisionPlan => ({
  key: `apps/${gw}`,
  manifests: [deployment(gw, replicas)],
  stale: [],
  ...extra,
});

function setup(
  o: {
    leader?: () => boolean;
    concurrency?: number;
    limit?: number;
    snapshot?: () => Snapshot;
  } = {},
) {
  const k = fakeKube();
  const clock = new ManualClock();
  const logs: string[] = [];
  let spaces = 0;
  const q = new ProvisionQueue({
    kube: k.kube,
    log: {
      info: m => logs.push(`info ${m}`),
      warn: (m, meta) => logs.push(`warn ${m} ${String(meta?.["gateway"] ?? "")}`),
      error: (m, meta) => logs.push(`error ${m} ${String(meta?.["object"] ?? "")}`),
      debug: () => {},
    },
    snapshot: o.snapshot ?? (() => emptySnapshot()),
    isLeader: o.leader ?? (() => true),
    concurrency: o.concurrency,
    limit: o.limit,
    slowMs: 5000,
    onSpace: () => spaces++,
    clock,
  });
  return { ...k, q, clock, logs, spaces: () => spaces };
}

const tick = () => new Promise(r => setImmediate(r));
const patches = (requests: readonly string[]) => requests.filter(r => r.startsWith("PATCH"));

describe("ProvisionQueue", () => {
  it("hands over at once: offer never waits for the API server", () => {
    const s = setup();
    s.hold.add("gw-proxy");
    expect(s.q.offer(plan("gw"))).toBe("queued");
    expect(s.q.running).toEqual(["apps/gw"]);
  });

  it("one Gateway's slow API calls hold back neither the other Gateways nor its own latest plan", async () => {
    const s = setup();
    s.hold.add("slow-proxy");
    s.q.offer(plan("slow", 1));
    s.q.offer(plan("fast"));
    await tick();
    expect(patches(s.requests)).toEqual([
      "PATCH /apis/apps/v1/namespaces/apps/deployments/slow-proxy",
      "PATCH /apis/apps/v1/namespaces/apps/deployments/fast-proxy",
    ]);
    // two newer plans while the slow one runs: only the latest is applied after it
    expect(s.q.offer(plan("slow", 2))).toBe("queued");
    expect(s.q.offer(plan("slow", 3))).toBe("coalesced");
    s.release("slow-proxy");
    await s.q.idle();
    expect(patches(s.requests)).toHaveLength(3);
  });

  it("says when a Gateway's provisioning is slow, on the clock, and not before", async () => {
    const s = setup();
    s.hold.add("gw-proxy");
    s.q.offer(plan("gw"));
    s.clock.advance(4999);
    expect(s.logs.filter(l => l.startsWith("warn"))).toEqual([]);
    s.clock.advance(1);
    expect(s.logs.filter(l => l.startsWith("warn"))).toEqual([
      "warn provisioning is slow for a Gateway: its pushes do not wait for it apps/gw",
    ]);
    s.release("gw-proxy");
    await s.q.idle();
    expect(s.clock.pending()).toEqual([]);
  });

  it("applies what changed only, again after reapplyAll, and after a failed apply", async () => {
    const s = setup();
    s.q.offer(plan("gw"));
    await s.q.idle();
    s.q.offer(plan("gw"));
    await s.q.idle();
    expect(patches(s.requests)).toHaveLength(1);
    s.q.offer(plan("gw", 2));
    await s.q.idle();
    expect(patches(s.requests)).toHaveLength(2);
    s.q.reapplyAll();
    s.q.offer(plan("gw", 2));
    await s.q.idle();
    expect(patches(s.requests)).toHaveLength(3);
    s.fail.set("gw-proxy", 500);
    s.q.offer(plan("gw", 3));
    await s.q.idle();
    expect(s.logs).toContain("error cannot apply apps/gw-proxy");
    s.fail.clear();
    s.q.offer(plan("gw", 3));
    await s.q.idle();
    expect(patches(s.requests)).toHaveLength(5);
  });

  it("a follower provisions nothing", async () => {
    const s = setup({ leader: () => false });
    s.q.offer(plan("gw"));
    await s.q.idle();
    expect(s.requests).toEqual([]);
  });

  it("removes stale objects once, and only ours when asked to check", async () => {
    const s = setup();
    const stale = (name: string, onlyIfOurs: boolean) => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      namespace: "apps",
      name,
      onlyIfOurs,
    });
    s.objects.set("/api/v1/namespaces/apps/configmaps/mine", {
      metadata: { labels: { "app.kubernetes.io/managed-by": "kengine-gateway" }, uid: "u1" },
    });
    s.objects.set("/api/v1/namespaces/apps/configmaps/users", { metadata: { uid: "u2" } });
    const p = plan("gw", 1, {
      stale: [stale("mine", true), stale("users", true), stale("old", false)],
    });
    s.q.offer(p);
    await s.q.idle();
    s.q.offer(p);
    await s.q.idle();
    expect(s.requests.filter(r => r.startsWith("DELETE"))).toEqual([
      "DELETE /api/v1/namespaces/apps/configmaps/mine",
      "DELETE /api/v1/namespaces/apps/configmaps/old",
    ]);
  });

  it("replaces a proxies' Service once per address and leader term", async () => {
    const s = setup();
    const p = plan("gw", 1, {
      replaceService: { namespace: "apps", name: "gw-proxy", uid: "u", address: "10.0.0.9" },
    });
    s.q.offer(p);
    await s.q.idle();
    s.q.offer(p);
    await s.q.idle();
    const deletes = () => s.requests.filter(r => r.startsWith("DELETE")).length;
    expect(deletes()).toBe(1);
    s.q.newTerm();
    s.q.offer(p);
    await s.q.idle();
    expect(deletes()).toBe(2);
  });

  it("refuses new Gateways when full and asks for them again once there is room", async () => {
    const s = setup({ concurrency: 1, limit: 1 });
    s.hold.add("a-proxy");
    s.q.offer(plan("a"));
    expect(s.q.offer(plan("b"))).toBe("queued");
    expect(s.q.offer(plan("c"))).toBe("full");
    s.release("a-proxy");
    await tick();
    expect(s.spaces()).toBe(1);
    expect(s.q.offer(plan("c"))).not.toBe("full");
    await s.q.idle();
    expect(patches(s.requests).map(r => r.split("/").pop())).toEqual([
      "a-proxy",
      "b-proxy",
      "c-proxy",
    ]);
  });

  it("applies nothing in a namespace being deleted, and logs no error there", async () => {
    const ns = (deleting: boolean) => ({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: {
        name: "apps",
        ...(deleting && { deletionTimestamp: "2026-11-24T17:00:00Z" }),
      },
    });
    let snapshot = snapshotOf([ns(true)]);
    const s = setup({ snapshot: () => snapshot });
    s.q.offer(plan("a"));
    await s.q.idle();
    expect(patches(s.requests)).toEqual([]);
    // The deletion began before the watch said so: the API server's refusal is not our error,
    // any other refusal is.
    snapshot = snapshotOf([ns(false)]);
    const request = s.kube.request;
    s.kube.request = async () => {
      throw new Error('HTTP 403: {"causes":[{"reason":"NamespaceTerminating"}]}');
    };
    s.q.offer(plan("a", 2));
    await s.q.idle();
    expect(s.logs.filter(l => l.startsWith("error"))).toEqual([]);
    s.kube.request = request;
    s.fail.set("a-proxy", 403);
    s.q.offer(plan("a", 3));
    await s.q.idle();
    expect(patches(s.requests)).toHaveLength(1);
    expect(s.logs.filter(l => l.startsWith("error"))).toEqual(["error cannot apply apps/a-proxy"]);
  });
});
