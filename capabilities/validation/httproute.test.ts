import { httpRouteProblems } from "./httproute";

describe("httpRouteProblems", () => {
  it("collects every empty regular expression with its field path", () => {
    const problems = httpRouteProblems({
      spec: {
        rules: [
          { matches: [{ path: { type: "PathPrefix", value: "/" } }] },
          {
            matches: [
              { path: { type: "RegularExpression", value: "" } },
              { headers: [{ type: "Exact", name: "a", value: "" }, { type: "RegularExpression", name: "b", value: "" }] },
              { queryParams: [{ type: "RegularExpression", name: "q", value: "" }] },
            ],
          },
        ],
      },
    });
    expect(problems.map(p => p.path)).toEqual([
      "spec.rules[1].matches[0].path.value",
      "spec.rules[1].matches[1].headers[1].value",
      "spec.rules[1].matches[2].queryParams[0].value",
    ]);
  });

  it("accepts a route without regular expressions or without rules", () => {
    expect(httpRouteProblems({ spec: { rules: [{ matches: [{ path: { type: "Exact", value: "/x" } }] }] } })).toEqual([]);
    expect(httpRouteProblems({})).toEqual([]);
  });
});
