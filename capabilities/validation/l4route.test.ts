import { MAX_L4_WEIGHT_RATIO, l4RouteProblems } from "./l4route";

const route = (...rules: { weight?: number }[][]) => ({
  spec: { rules: rules.map(refs => ({ backendRefs: refs })) },
});

describe("l4RouteProblems", () => {
  it("accepts one backend, equal weights and ratios up to the limit", () => {
    expect(l4RouteProblems(route([{ weight: 1_000_000 }]))).toEqual([]);
    expect(l4RouteProblems(route([{}, {}]))).toEqual([]);
    expect(l4RouteProblems(route([{ weight: 1 }, { weight: MAX_L4_WEIGHT_RATIO }]))).toEqual([]);
    // 3000:30 reduces to 100:1.
    expect(l4RouteProblems(route([{ weight: 3000 }, { weight: 30 }]))).toEqual([]);
  });

  it("ignores zero weights (no traffic) and leaves missing backends to status", () => {
    expect(l4RouteProblems(route([{ weight: 0 }, { weight: 999_999 }]))).toEqual([]);
    expect(l4RouteProblems({ spec: { rules: [{}, { backendRefs: [] }] } })).toEqual([]);
  });

  it("refuses a weight the layer-4 balancer cannot honour, across rules, with the exact message", () => {
    expect(l4RouteProblems(route([{ weight: 2 }], [{ weight: 202 }, { weight: 4 }]))).toEqual([
      {
        path: "spec.rules[1].backendRefs[0].weight",
        value: "202",
        message:
          "the proxy's layer-4 balancing runs weights up to 100 once divided by the route's common divisor (2); this one is 101: choose smaller weights or a simpler ratio",
      },
    ]);
  });

  it("refuses every weight above the limit, even at a ratio close to 1", () => {
    expect(l4RouteProblems(route([{ weight: 101 }, { weight: 102 }])).map(p => p.path)).toEqual([
      "spec.rules[0].backendRefs[0].weight",
      "spec.rules[0].backendRefs[1].weight",
    ]);
  });

  it("survives malformed input", () => {
    for (const bad of [
      null,
      {},
      { spec: null },
      { spec: { rules: "x" } },
      { spec: { rules: [null, 1, { backendRefs: [null, "x", { weight: "7" }] }] } },
    ])
      expect(l4RouteProblems(bad as never)).toEqual([]);
  });
});
