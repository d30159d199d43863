import { HTTPMatchIR } from "../ir";
import fc from "fast-check";
import { RankedMatch, comparePrecedence, literalPrefix } from "./precedence";

const m = (
  name: string,
  match: Partial<HTTPMatchIR>,
  created = "2026-01-01T00:00:00Z",
  rule = 0,
  idx = 0,
): RankedMatch => ({
  match: { path: { type: "PathPrefix", value: "/" }, headers: [], queryParams: [], ...match },
  route: { kind: "HTTPRoute", namespace: "default", name, rule, match: idx },
  created,
});
const order = (xs: RankedMatch[]): string[] =>
  [...xs].sort(comparePrecedence).map(x => `${x.route.name}/${x.route.rule}/${x.route.match}`);

describe("comparePrecedence", () => {
  it("puts hostname specificity before path", () => {
    expect(
      order([
        m("any", { path: { type: "Exact", value: "/x" } }),
        m("wild", { hostname: "*.e.com" }),
        m("exact", { hostname: "a.e.com" }),
      ]),
    ).toEqual(["exact/0/0", "wild/0/0", "any/0/0"]);
  });
  it("breaks a tie of intersected hostnames by the route's own hostname, before path and age", () => {
    // Listener abc.example.com: routes for *.example.com, *.com and abc.example.com all serve
    // abc.example.com; the route that named it exactly wins even with a less specific path
    // and a newer creationTimestamp (GatewayRouteHostnameIntersectionPrecedence).
    const at = (name: string, origin: string | undefined, created: string, path = "/") => ({
      ...m(
        name,
        { hostname: "abc.example.com", path: { type: "PathPrefix", value: path } },
        created,
      ),
      origin,
    });
    expect(
      order([
        at("wild", "*.example.com", "2025-01-01T00:00:00Z", "/long/path"),
        at("none", undefined, "2024-01-01T00:00:00Z", "/longer/path/still"),
        at("wider", "*.com", "2024-06-01T00:00:00Z"),
        at("exact", "abc.example.com", "2026-06-01T00:00:00Z"),
      ]),
    ).toEqual(["exact/0/0", "wild/0/0", "wider/0/0", "none/0/0"]);
  });
  it("orders Exact, then PathPrefix and RegularExpression by (literal) prefix length, the prefix first at equal length", () => {
    expect(
      order([
        m("p-short", { path: { type: "PathPrefix", value: "/a" } }),
        m("re", { path: { type: "RegularExpression", value: "/a.*" } }),
        m("re-long", { path: { type: "RegularExpression", value: "/a/b/.*" } }),
        m("p-long", { path: { type: "PathPrefix", value: "/a/b" } }),
        m("exact", { path: { type: "Exact", value: "/a" } }),
      ]),
    ).toEqual(["exact/0/0", "re-long/0/0", "p-long/0/0", "p-short/0/0", "re/0/0"]);
  });
  it("puts a GRPCRoute method match before its catch-all", () => {
    const g = (name: string, path: HTTPMatchIR["path"]) =>
      m(name, { path, method: "POST", grpc: true });
    expect(
      order([
        g("all", { type: "PathPrefix", value: "/" }),
        g("method", { type: "RegularExpression", value: "/[^/]+/Get" }),
        g("service", { type: "PathPrefix", value: "/pkg.Svc" }),
        g("both", { type: "Exact", value: "/pkg.Svc/Get" }),
      ]),
    ).toEqual(["both/0/0", "service/0/0", "method/0/0", "all/0/0"]);
  });
  it("is a total order (antisymmetric, transitive) on mixed entries", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            type: fc.constantFrom("Exact", "PathPrefix", "RegularExpression" as const),
            value: fc.constantFrom(
              "/",
              "/a",
              "/a/b",
              "/a.*",
              "/.*",
              "/a/[0-9]+",
              "(?i)/a",
              "/x|/y",
            ),
            grpc: fc.boolean(),
            name: fc.constantFrom("r1", "r2", "r3"),
          }),
          { minLength: 3, maxLength: 3 },
        ),
        xs => {
          const [a, b, c] = xs.map(x =>
            m(x.name, { path: { type: x.type, value: x.value }, ...(x.grpc && { grpc: true }) }),
          ) as [RankedMatch, RankedMatch, RankedMatch];
          const sign = (n: number) => Math.sign(n);
          // a sum, not toBe(-x): Object.is tells 0 from -0
          expect(sign(comparePrecedence(a, b)) + sign(comparePrecedence(b, a))).toBe(0);
          if (comparePrecedence(a, b) <= 0 && comparePrecedence(b, c) <= 0)
            expect(comparePrecedence(a, c)).toBeLessThanOrEqual(0);
        },
      ),
    );
  });
  it("reads a regular expression's literal prefix conservatively", () => {
    expect(literalPrefix("/api/v[0-9]+/.*")).toBe("/api/v");
    expect(literalPrefix("/.*")).toBe("/");
    expect(literalPrefix("/ab?c")).toBe("/a");
    expect(literalPrefix("/ab+c")).toBe("/ab");
    expect(literalPrefix("/a\\.b/x{2}")).toBe("/a.b/");
    expect(literalPrefix("/a\\d")).toBe("/a");
    expect(literalPrefix("(?i)/admin")).toBe("");
    expect(literalPrefix("/admin|/api")).toBe("");
  });
  it("never lets a newer route's regular expression outrank an older route's prefix", () => {
    // A tenant's `/.*` in another namespace, on the same hostname as the platform's route
    // with prefixes `/` and `/api`: the platform keeps every path its prefixes match, even `/`.
    const platform = (path: string, idx: number) => ({
      ...m(
        "platform",
        { hostname: "shop.example.com", path: { type: "PathPrefix", value: path } },
        "2025-01-01T00:00:00Z",
        0,
        idx,
      ),
    });
    const tenant: RankedMatch = {
      match: {
        hostname: "shop.example.com",
        path: { type: "RegularExpression", value: "/.*" },
        headers: [],
        queryParams: [],
      },
      route: { kind: "HTTPRoute", namespace: "tenant", name: "grab", rule: 0, match: 0 },
      created: "2026-06-01T00:00:00Z",
    };
    expect(order([tenant, platform("/", 0), platform("/api", 1)])).toEqual([
      "platform/0/1",
      "platform/0/0",
      "grab/0/0",
    ]);
  });
  it("then method, header count, query count", () => {
    const h = { type: "Exact" as const, name: "x", value: "1" };
    expect(
      order([
        m("q", { queryParams: [h] }),
        m("h2", { headers: [h, { ...h, name: "y" }] }),
        m("h1", { headers: [h] }),
        m("method", { method: "GET" }),
      ]),
    ).toEqual(["method/0/0", "h2/0/0", "h1/0/0", "q/0/0"]);
  });
  it("then the oldest route, then namespace/name, then rule and match order", () => {
    expect(
      order([
        m("b", {}, "2026-01-01T00:00:00Z"),
        m("a", {}, "2026-01-01T00:00:00Z", 1, 0),
        m("a", {}, "2026-01-01T00:00:00Z", 0, 1),
        m("z-old", {}, "2025-01-01T00:00:00Z"),
      ]),
    ).toEqual(["z-old/0/0", "a/0/1", "a/1/0", "b/0/0"]);
  });
});
