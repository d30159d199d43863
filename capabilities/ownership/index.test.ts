import { CONTROLLER_NAME, OwnershipLookups, cached, isOurRoute, withDeadline } from "./index";

const lookups = (
  classes: Record<string, string>,
  gateways: Record<string, string>,
  listenerSets: Record<string, { namespace: string; name: string }> = {},
): OwnershipLookups => ({
  gatewayClassController: async name => classes[name],
  gatewayClassOf: async gw => gateways[`${gw.namespace}/${gw.name}`],
  listenerSetParent: async ls => listenerSets[`${ls.namespace}/${ls.name}`],
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
