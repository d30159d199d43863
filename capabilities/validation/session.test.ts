import { Collector } from "./budget";
import { SessionSite, readSessionPersistence, sessionPersistenceProblems } from "./session";

const site: SessionSite = { at: "spec.rules[0]", defaultCookieName: "gen", secret: "uid-1" };
const read = (sessionPersistence: unknown, backendRefs?: unknown[]) =>
  readSessionPersistence({ sessionPersistence, backendRefs } as never, site);
const paths = (sp: unknown, backendRefs?: unknown[]): string[] => {
  const r = read(sp, backendRefs);
  return r.ok ? [] : r.problems.map(p => p.path);
};

describe("readSessionPersistence", () => {
  it("no sessionPersistence: nothing to do", () => {
    expect(read(undefined)).toEqual({ ok: true, value: undefined });
  });

  it("a cookie: the name given or the rule's own, path only when not /, the route's secret", () => {
    expect(read({ type: "Cookie", cookie: { name: "s", path: "/" } })).toEqual({
      ok: true,
      value: { mode: "cookie", name: "s", secret: "uid-1" },
    });
    expect(read({})).toEqual({ ok: true, value: { mode: "cookie", name: "gen", secret: "uid-1" } });
    expect(read({ type: "Cookie", cookie: { path: "/app" } })).toMatchObject({
      value: { path: "/app" },
    });
  });

  it("Permanent: Max-Age from absoluteTimeout; Session with absoluteTimeout: tracked in the token", () => {
    expect(
      read({ type: "Cookie", absoluteTimeout: "1h30m", cookie: { lifetimeType: "Permanent" } }),
    ).toMatchObject({ ok: true, value: { maxAgeS: 5400 } });
    const session = read({ type: "Cookie", absoluteTimeout: "90s", cookie: {} });
    expect(session).toMatchObject({ ok: true, value: { timeoutMs: 90_000 } });
    expect(session.ok && session.value?.maxAgeS).toBeUndefined();
  });

  it("a header: its name, with an absolute timeout when given", () => {
    expect(read({ type: "Header", header: { name: "X-Session" }, absoluteTimeout: "5m" })).toEqual({
      ok: true,
      value: { mode: "header", name: "X-Session", timeoutMs: 300_000, secret: "uid-1" },
    });
  });

  it("the v1.6 shape: sessionName names the cookie or header, cookieConfig gives the lifetime", () => {
    expect(read({ type: "Cookie", sessionName: "old" })).toMatchObject({
      ok: true,
      value: { mode: "cookie", name: "old" },
    });
    expect(read({ type: "Header", sessionName: "X-Old" })).toMatchObject({
      ok: true,
      value: { mode: "header", name: "X-Old" },
    });
    expect(
      read({
        sessionName: "p",
        absoluteTimeout: "1m",
        cookieConfig: { lifetimeType: "Permanent" },
      }),
    ).toMatchObject({ ok: true, value: { name: "p", maxAgeS: 60 } });
    // v1.7 fields win.
    expect(read({ sessionName: "old", cookie: { name: "new" } })).toMatchObject({
      value: { name: "new" },
    });
  });

  it("refuses what no proxy runs, naming each field", () => {
    expect(paths({ sessionName: "s", idleTimeout: "1m", type: "Cookie" })).toEqual([
      "spec.rules[0].sessionPersistence.idleTimeout",
    ]);
    expect(paths({ sessionName: "a b" })).toEqual(["spec.rules[0].sessionPersistence.sessionName"]);
    expect(paths({ type: "Cookie", cookie: { lifetimeType: "Permanent" } })).toEqual([
      "spec.rules[0].sessionPersistence.absoluteTimeout",
    ]);
    expect(
      paths({ absoluteTimeout: "500ms", cookie: { lifetimeType: "Permanent", name: "a b" } }),
    ).toEqual([
      "spec.rules[0].sessionPersistence.cookie.name",
      "spec.rules[0].sessionPersistence.absoluteTimeout",
    ]);
    expect(paths({ cookie: { path: "/a;b" } })).toEqual([
      "spec.rules[0].sessionPersistence.cookie.path",
    ]);
    expect(paths({ type: "Header", header: { name: "x_id" } })).toEqual([
      "spec.rules[0].sessionPersistence.header.name",
    ]);
    expect(paths({ type: "Header" })).toEqual(["spec.rules[0].sessionPersistence.header"]);
    expect(paths({ type: "Query" })).toEqual(["spec.rules[0].sessionPersistence.type"]);
    expect(paths({ absoluteTimeout: "0s" })).toEqual([
      "spec.rules[0].sessionPersistence.absoluteTimeout",
    ]);
    expect(paths({}, [{ filters: [{ type: "RequestHeaderModifier" }] }, {}])).toEqual([
      "spec.rules[0].backendRefs[0].filters",
    ]);
  });

  it("admission says what translation would drop", () => {
    for (const sp of [
      { sessionName: "s" },
      { type: "Header" },
      {},
      { type: "Header", header: { name: "X" } },
    ]) {
      const c = new Collector();
      sessionPersistenceProblems(c, "spec.rules[0]", { sessionPersistence: sp });
      expect(c.problems().length === 0).toBe(read(sp).ok);
    }
  });
});
