import { apply, emptySnapshot, KubeObject, SnapshotEvent } from "../snapshot";
import { BuildLoop, DirtySet } from "./dirty-set";

const route = (name: string, hostname: string, status?: object): KubeObject =>
  ({
    metadata: { namespace: "apps", name },
    spec: { hostnames: [hostname] },
    ...(status ? { status } : {}),
  }) as unknown as KubeObject;
const upsert = (object: KubeObject): SnapshotEvent => ({
  type: "upsert",
  kind: "HTTPRoute",
  object,
});

describe("DirtySet", () => {
  it("starts dirty, then names what changed since the last take", () => {
    const d = new DirtySet();
    expect(d.take()).toEqual({ translate: true, objects: [], all: true });
    const s = emptySnapshot();
    d.observe(s, upsert(route("a", "a.example")));
    expect(d.take()).toEqual({ translate: true, objects: ["HTTPRoute/apps/a"], all: false });
    expect(d.take()).toEqual({ translate: false, objects: [], all: false });
  });

  it("a status-only update is recorded but does not ask for a translation", () => {
    const d = new DirtySet();
    const s = apply(emptySnapshot(), upsert(route("a", "a.example"))).snapshot;
    d.take();
    d.observe(s, upsert(route("a", "a.example", { parents: [] })));
    expect(d.take()).toEqual({ translate: false, objects: ["HTTPRoute/apps/a"], all: false });
  });

  it("names at most `limit` objects, then says all", () => {
    const d = new DirtySet(2);
    d.take();
    for (const n of ["a", "b", "c"]) d.observe(emptySnapshot(), upsert(route(n, `${n}.example`)));
    expect(d.take()).toEqual({ translate: true, objects: [], all: true });
  });

  it("markAll and a synced event ask for everything", () => {
    const d = new DirtySet();
    d.take();
    d.markAll();
    expect(d.take()).toMatchObject({ translate: true, all: true });
    d.observe(emptySnapshot(), { type: "synced", kind: "HTTPRoute" });
    expect(d.take()).toMatchObject({ translate: true, all: true });
  });
});

describe("BuildLoop", () => {
  const deferred = () => {
    let resolve!: () => void;
    let reject!: (e: Error) => void;
    const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
    return { promise, resolve, reject };
  };

  it("never runs two builds at once; any number of requests meanwhile make one more build", async () => {
    const builds: ReturnType<typeof deferred>[] = [];
    let running = 0;
    let most = 0;
    const loop = new BuildLoop(
      () => {
        running++;
        most = Math.max(most, running);
        const d = deferred();
        builds.push(d);
        return d.promise.finally(() => running--);
      },
      () => {},
    );
    loop.request();
    for (let i = 0; i < 5; i++) loop.request();
    expect(builds).toHaveLength(1);
    builds[0]!.resolve();
    await new Promise(r => setImmediate(r));
    expect(builds).toHaveLength(2);
    builds[1]!.resolve();
    await new Promise(r => setImmediate(r));
    expect(builds).toHaveLength(2);
    expect(most).toBe(1);
    expect(loop.running).toBeUndefined();
  });

  it("a failed build is reported and the next request still builds", async () => {
    const errors: unknown[] = [];
    let n = 0;
    const loop = new BuildLoop(
      () => (++n === 1 ? Promise.reject(new Error("boom")) : Promise.resolve()),
      e => errors.push(e),
    );
    loop.request();
    await loop.running;
    loop.request();
    await loop.running;
    expect(n).toBe(2);
    expect(errors).toHaveLength(1);
  });

  it("stop waits for the running build and starts no more", async () => {
    const d = deferred();
    let n = 0;
    const loop = new BuildLoop(
      () => {
        n++;
        return d.promise;
      },
      () => {},
    );
    loop.request();
    loop.request();
    const stopped = loop.stop();
    d.resolve();
    await stopped;
    loop.request();
    await new Promise(r => setImmediate(r));
    expect(n).toBe(1);
  });
});
