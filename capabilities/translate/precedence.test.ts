import { HTTPMatchIR } from "../ir";
import { RankedMatch, comparePrecedence } from "./precedence";

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
  it("orders Exact, RegularExpression, then PathPrefix, longer first", () => {
    expect(
      order([
        m("p-short", { path: { type: "PathPrefix", value: "/a" } }),
        m("re", { path: { type: "RegularExpression", value: "/a.*" } }),
        m("p-long", { path: { type: "PathPrefix", value: "/a/b" } }),
        m("exact", { path: { type: "Exact", value: "/a" } }),
      ]),
    ).toEqual(["exact/0/0", "re/0/0", "p-long/0/0", "p-short/0/0"]);
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
