import {
  CONTROLLER_NAME,
  OwnershipLookups,
  RouteParents,
  backendIndexKey,
  cached,
  indexRoutesByService,
  isOurBackendTLSPolicy,
  isOurRoute,
  isOurXBackend,
  withDeadline,
} from "./index";

const lookups = (
  classes: Record<string, string>,
  gateways: Record<string, string>,
  listenerSets: Record<string, { namespace: string; name: string }> = {},
  services: Record<string, readonly RouteParents[]> = {},
): OwnershipLookups => ({
  gatewayClassController: async name => classes[name],
  gatewayClassOf: async gw => gateways[`${gw.namespace}/${gw.name}`],
  listenerSetParent: async ls => listenerSets[`${ls.namespace}/${ls.name}`],
  routesUsingService: async b => services[backendIndexKey(b)] ?? [],
});

describe("isOurRoute", () => {
  const l = lookups(
    { ours: CONTROLLER_NAME, theirs: "example.com/other" },
    { "infra/gw": "ours", "apps/local": "ours", "apps/other": "theirs" },
    { "apps/ls": { namespace: "infra", name: "gw" } },
  );

  it("follows a cross-namespace parentRef to a Gateway of our class", async () => {
    expect(await isOurRoute("apps", [{ name: "gw", namespace: "infra" }], l)).toBe(true);
  });
  it("defaults the parent's namespace to the route's", async () => {
    expect(await isOurRoute("apps", [{ name: "local" }], l)).toBe(true);
    expect(await isOurRoute("other", [{ name: "local" }], l)).toBe(false);
  });
  it("ignores Gateways of other controllers and missing Gateways", async () => {
    expect(await isOurRoute("apps", [{ name: "other" }, { name: "missing" }], l)).toBe(false);
  });
  it("is true when any one parent is ours", async () => {
    expect(await isOurRoute("apps", [{ name: "other" }, { name: "local" }], l)).toBe(true);
  });
  it("follows a ListenerSet to its Gateway", async () => {
    expect(await isOurRoute("apps", [{ name: "ls", kind: "ListenerSet" }], l)).toBe(true);
  });
  it("ignores parents of other groups", async () => {
    expect(await isOurRoute("apps", [{ name: "local", group: "example.com" }], l)).toBe(false);
  });
  it("treats a route without parents as not ours", async () => {
    expect(await isOurRoute("apps", undefined, l)).toBe(false);
  });
});

describe("isOurBackendTLSPolicy", () => {
  const routes = indexRoutesByService([
    {
      metadata: { namespace: "apps" },
      spec: {
        parentRefs: [{ name: "gw", namespace: "infra" }],
        rules: [{ backendRefs: [{ name: "shop" }, { name: "db", namespace: "data" }] }],
      },
    },
    {
      metadata: { namespace: "apps" },
      spec: { parentRefs: [{ name: "other" }], rules: [{ backendRefs: [{ name: "theirs" }] }] },
    },
    {
      metadata: { namespace: "apps" },
      spec: {
        parentRefs: [{ name: "local" }],
        rules: [{ backendRefs: [{ name: "bucket", group: "example.com", kind: "Bucket" }] }],
      },
    },
  ]);
  const l = lookups(
    { ours: CONTROLLER_NAME, theirs: "example.com/other" },
    { "infra/gw": "ours", "apps/local": "ours", "apps/other": "theirs" },
    {},
    Object.fromEntries(routes),
  );
  const svc = (name: string) => [{ group: "", kind: "Service", name }];

  it("is ours when a targeted Service is a backend of a route of ours, in any namespace", async () => {
    expect(await isOurBackendTLSPolicy("apps", svc("shop"), l)).toBe(true);
    expect(await isOurBackendTLSPolicy("data", svc("db"), l)).toBe(true);
  });
  it("is not ours for Services only other controllers' routes use, or none", async () => {
    expect(await isOurBackendTLSPolicy("apps", svc("theirs"), l)).toBe(false);
    expect(await isOurBackendTLSPolicy("apps", svc("unused"), l)).toBe(false);
    expect(await isOurBackendTLSPolicy("other", svc("shop"), l)).toBe(false);
  });
  it("looks only at core Service targets and Service backends", async () => {
    expect(
      await isOurBackendTLSPolicy("apps", [{ group: "x", kind: "Service", name: "shop" }], l),
    ).toBe(false);
    expect(await isOurBackendTLSPolicy("apps", svc("bucket"), l)).toBe(false);
    expect(await isOurBackendTLSPolicy("apps", undefined, l)).toBe(false);
  });
  it("is true when any one target is ours", async () => {
    expect(await isOurBackendTLSPolicy("apps", [...svc("theirs"), ...svc("shop")], l)).toBe(true);
  });
});

describe("isOurXBackend", () => {
  const X = "gateway.networking.x-k8s.io";
  const routes = indexRoutesByService([
    {
      metadata: { namespace: "apps" },
      spec: {
        parentRefs: [{ name: "gw", namespace: "infra" }],
        rules: [
          {
            backendRefs: [
              { group: X, kind: "XBackend", name: "ext" },
              { group: X, kind: "XBackend", name: "far", namespace: "data" },
              { name: "ext" },
            ],
          },
        ],
      },
    },
    {
      metadata: { namespace: "apps" },
      spec: {
        parentRefs: [{ name: "other" }],
        rules: [{ backendRefs: [{ group: X, kind: "XBackend", name: "theirs" }] }],
      },
    },
  ]);
  const l = lookups(
    { ours: CONTROLLER_NAME, theirs: "example.com/other" },
    { "infra/gw": "ours", "apps/other": "theirs" },
    {},
    Object.fromEntries(routes),
  );

  it("is ours when a route of ours names it, in its namespace or another", async () => {
    expect(await isOurXBackend("apps", "ext", l)).toBe(true);
    expect(await isOurXBackend("data", "far", l)).toBe(true);
  });
  it("is not ours when only other controllers' routes, or none, name it", async () => {
    expect(await isOurXBackend("apps", "theirs", l)).toBe(false);
    expect(await isOurXBackend("apps", "unused", l)).toBe(false);
    expect(await isOurXBackend("data", "ext", l)).toBe(false);
  });
  it("keeps Services and XBackends of the same name apart", async () => {
    expect(routes.get(backendIndexKey({ namespace: "apps", name: "ext" }))).toHaveLength(1);
    expect(
      routes.get(backendIndexKey({ kind: "XBackend", namespace: "apps", name: "ext" })),
    ).toHaveLength(1);
    expect(
      await isOurBackendTLSPolicy("apps", [{ group: "", kind: "Service", name: "far" }], l),
    ).toBe(false);
  });
});

describe("cached", () => {
  it("reuses an answer within the TTL and asks again after it", async () => {
    let t = 0;
    let calls = 0;
    const f = cached(
      async (k: string) => `${k}${++calls}`,
      100,
      k => k,
      () => t,
    );
    expect(await f("a")).toBe("a1");
    t = 99;
    expect(await f("a")).toBe("a1");
    t = 100;
    expect(await f("a")).toBe("a2");
    expect(calls).toBe(2);
  });
  it("refreshes ahead: past half the TTL a caller gets the current answer and a read starts in the background", async () => {
    let t = 0;
    let calls = 0;
    let release: (() => void) | undefined;
    const f = cached(
      (k: string) => {
        const n = ++calls;
        return n === 1
          ? Promise.resolve(`${k}${n}`)
          : new Promise<string>(r => (release = () => r(`${k}${n}`)));
      },
      100,
      k => k,
      () => t,
    );
    expect(await f("a")).toBe("a1");
    t = 40;
    expect(await f("a")).toBe("a1");
    expect(calls).toBe(1);
    t = 60;
    // The refresh is still running: callers are not held up by it, nor start another one.
    expect(await f("a")).toBe("a1");
    expect(await f("a")).toBe("a1");
    expect(calls).toBe(2);
    release!();
    await new Promise(r => setImmediate(r));
    // The new answer counts from when its read started (t = 60): fresh until 110, then again
    // refreshed ahead, expired at 160.
    t = 100;
    expect(await f("a")).toBe("a2");
    expect(calls).toBe(2);
    t = 160;
    const third = f("a");
    release!();
    expect(await third).toBe("a3");
    expect(calls).toBe(3);
  });

  it("does not remember failures", async () => {
    let calls = 0;
    const f = cached(async () => {
      calls++;
      if (calls === 1) throw new Error("boom");
      return "ok";
    }, 1000);
    await expect(f("k")).rejects.toThrow("boom");
    await new Promise(r => setImmediate(r));
    expect(await f("k")).toBe("ok");
  });
});

describe("cached, stale when slow", () => {
  /** A look-up whose answers the test hands out one by one (or fails). */
  function manual() {
    const pending: { key: string; answer: (v: string | undefined) => void; fail: () => void }[] =
      [];
    const fn = (key: string) =>
      new Promise<string | undefined>((resolve, reject) =>
        pending.push({ key, answer: resolve, fail: () => reject(new Error("timeout")) }),
      );
    return { fn, pending };
  }
  const tick = () => new Promise(r => setImmediate(r));
  /** A cache (TTL 100, stale up to 1,000 after a grace of 5) whose key "gw" answered class-a at 0. */
  async function answeredOnce() {
    const clock = { t: 0 };
    const { fn, pending } = manual();
    const f = cached(
      fn,
      100,
      k => k,
      () => clock.t,
      1000,
      { maxAgeMs: 1000, graceMs: 5 },
    );
    const first = f("gw");
    pending[0]!.answer("class-a");
    expect(await first).toBe("class-a");
    return { clock, pending, f };
  }
  const later = (ms: number) => new Promise(r => setTimeout(r, ms));

  it("an expired key whose read is slow or fails gets the last answer; a fast read's answer wins", async () => {
    const { clock, pending, f } = await answeredOnce();

    clock.t = 200; // expired; the read hangs: the last answer after the grace
    const slow = f("gw");
    await later(20);
    expect(pending).toHaveLength(2);
    expect(await slow).toBe("class-a");
    pending[1]!.answer("class-b"); // it arrives late: it is the new answer
    await tick();
    expect(await f("gw")).toBe("class-b");

    clock.t = 400; // expired again, and the read fails: the last answer (class-b)
    const failing = f("gw");
    pending[2]!.fail();
    expect(await failing).toBe("class-b");

    clock.t = 500; // a read that answers within the grace is what the caller gets
    const fast = f("gw");
    pending[3]!.answer("class-c");
    expect(await fast).toBe("class-c");
  });

  it("every caller waiting on the slow read gets the last answer after the grace, not only the first", async () => {
    const { clock, pending, f } = await answeredOnce();
    clock.t = 200; // expired: one read starts and hangs
    const a = f("gw");
    clock.t = 210; // within the new entry's TTL: the same pending read
    const b = f("gw");
    expect(pending).toHaveLength(2);
    expect(await a).toBe("class-a");
    expect(await b).toBe("class-a"); // CI's bench: later callers waited 3.5 s and were refused
    pending[1]!.answer("class-b");
  });

  it("waits when the last answer is too old, or is one `keep` refuses to serve stale", async () => {
    let t = 0;
    const { fn, pending } = manual();
    const f = cached(
      fn,
      100,
      k => k,
      () => t,
      1000,
      {
        maxAgeMs: 1000,
        graceMs: 5,
        keep: v => v !== undefined,
      },
    );
    const a = f("old");
    pending[0]!.answer("class-a");
    await a;
    t = 1000; // the answer's read started 1,000 ms ago: too old to serve
    let settled = false;
    const tooOld = f("old").then(v => ((settled = true), v));
    await later(20);
    expect(settled).toBe(false);
    pending[1]!.answer("class-z");
    expect(await tooOld).toBe("class-z");

    const missing = f("missing");
    pending[2]!.answer(undefined); // "does not exist": never served stale
    expect(await missing).toBeUndefined();
    t = 1200;
    settled = false;
    const again = f("missing").then(v => ((settled = true), v));
    await later(20);
    expect(settled).toBe(false);
    pending[3]!.answer("class-a");
    expect(await again).toBe("class-a");
  });
});

describe("withDeadline", () => {
  it("gives the value of a look-up that finishes in time", async () => {
    expect(await withDeadline(Promise.resolve("kengine"), 1_000)).toEqual({
      ok: true,
      value: "kengine",
    });
  });

  it("reports a failed look-up instead of rejecting", async () => {
    expect(await withDeadline(Promise.reject(new Error("forbidden")), 1_000)).toEqual({
      ok: false,
      error: "reading the parent failed: forbidden",
    });
  });

  it("reports a look-up that does not finish within the deadline", async () => {
    const never = new Promise<string>(() => undefined);
    expect(await withDeadline(never, 20)).toEqual({
      ok: false,
      error: "the API server did not answer within 20 ms",
    });
  });
});
