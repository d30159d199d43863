import { formatSummary, summarize } from "./summary";

const step = (name: string, status: string, error_message?: string) => ({
  keyword: "Then ",
  name,
  result: { status, duration: 1_250_000_000, ...(error_message ? { error_message } : {}) },
});

describe("summarize (godog cucumber reports)", () => {
  const report = [
    {
      name: "Path rules",
      elements: [
        { type: "scenario", name: "exact", steps: [step("a", "passed"), step("b", "passed")] },
        {
          type: "scenario",
          name: "prefix",
          steps: [
            step("a", "passed"),
            step("the response status-code must be 200", "failed", "got 404\nmore"),
            step("c", "skipped"),
          ],
        },
        { type: "background", name: "bg", steps: [step("x", "passed")] },
        { type: "scenario", name: "no code", steps: [step("a", "undefined")] },
      ],
    },
  ];

  it("counts a scenario passed only when every step passed, and names the failed step", () => {
    const s = summarize([report]);
    expect(s.scenarios.map(r => [r.scenario, r.outcome])).toEqual([
      ["exact", "passed"],
      ["prefix", "failed"],
      ["no code", "undefined"],
    ]);
    expect(s.scenarios[1].failure).toEqual({
      step: "Then the response status-code must be 200",
      error: "got 404\nmore",
    });
    expect([s.passed, s.failed, s.other]).toEqual([1, 1, 1]);
    // each step took 1.25 s: the scenario's time is its steps' sum
    expect(s.scenarios.map(r => r.seconds)).toEqual([2.5, 3.8, 1.3]);
  });

  it("adds up several reports and prints one line per scenario plus the totals", () => {
    const s = summarize([report, [{ name: "Host rules", elements: [] }]]);
    const text = formatSummary(s);
    expect(text).toContain("FAIL         3.8 s  Path rules: prefix");
    expect(text).toContain("Then the response status-code must be 200: got 404");
    expect(text.split("\n").pop()).toBe("3 scenarios: 1 passed, 1 failed, 1 other");
  });

  it("refuses a report that is not a list of features", () => {
    expect(() => summarize([{ name: "x" }])).toThrow(/JSON array/);
  });
});
