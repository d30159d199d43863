import { checkRegex, truncate } from "./regex";

describe("checkRegex", () => {
  it("reports an empty expression with its field path", () => {
    const problems = checkRegex("spec.rules[0].matches[0].path.value", "");
    expect(problems).toHaveLength(1);
    expect(problems[0].path).toBe("spec.rules[0].matches[0].path.value");
    expect(problems[0].message).toMatch(/must not be empty/);
  });
  it("accepts a plain expression", () => {
    expect(checkRegex("p", "/api/v[0-9]+")).toEqual([]);
  });
});

describe("truncate", () => {
  it("keeps short values and cuts long ones", () => {
    expect(truncate("abc")).toBe("abc");
    expect(truncate("x".repeat(100), 10)).toBe("xxxxxxxxxx… (100 characters)");
  });
});
