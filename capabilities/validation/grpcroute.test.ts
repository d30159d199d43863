import { grpcRouteProblems } from "./grpcroute";

describe("grpcRouteProblems", () => {
  it("collects service and method regexes, header problems, filters and sessionPersistence", () => {
    const problems = grpcRouteProblems({
      spec: {
        rules: [
          {
            matches: [
              { method: { type: "RegularExpression", service: "foo\\.(?=Bar)", method: "Get.*" } },
            ],
          },
          {
            matches: [
              {
                method: { type: "Exact", service: "a.B", method: "C" },
                headers: [{ name: "x", value: "\u0001" }],
              },
            ],
            filters: [{ type: "RequestMirror" }, { type: "URLRewrite" }],
            sessionPersistence: { type: "Header", header: { name: "x_session" } },
          },
        ],
      },
    });
    expect(problems.map(p => p.path)).toEqual([
      "spec.rules[0].matches[0].method.service",
      "spec.rules[1].matches[0].headers[0].value",
      "spec.rules[1].filters[0].type",
      "spec.rules[1].filters[1].type",
      "spec.rules[1].sessionPersistence.header.name",
    ]);
    expect(problems[2].message).toBe(
      "RequestMirror is not supported by the proxy (supported on a GRPCRoute rule: RequestHeaderModifier, ResponseHeaderModifier)",
    );
  });
  it("accepts a plain GRPCRoute", () => {
    expect(
      grpcRouteProblems({
        spec: {
          rules: [
            {
              matches: [{ method: { service: "a.B", method: "C" } }],
              filters: [
                {
                  type: "RequestHeaderModifier",
                  requestHeaderModifier: { set: [{ name: "x", value: "y" }] },
                },
              ],
            },
          ],
        },
      }),
    ).toEqual([]);
  });
});
