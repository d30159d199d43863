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

describe("RE2 compatibility", () => {
  const bad: [string, RegExp][] = [
    ["/(?=admin)", /look-ahead/],
    ["/(?!admin).*", /look-ahead/],
    ["(?<=a)b", /look-behind/],
    ["(?<!a)b", /look-behind/],
    ["(a)\\1", /backreference/],
    ["(?<n>a)\\k<n>", /backreference/],
    ["a*+", /possessive/],
    ["a++", /possessive/],
    ["(?>a)", /atomic/],
    ["a{1001}", /1000/],
    ["(a", /unbalanced/],
    ["a)", /unbalanced/],
    ["[a-z", /unterminated/],
    ["*a", /missing argument/],
    ["a**", /repeated quantifier/],
    ["\\Z", /not supported/],
    ["a\\", /lone backslash/],
  ];
  it.each(bad)("refuses %s", (re, message) => {
    const problems = checkRegex("p", re);
    expect(problems).toHaveLength(1);
    expect(problems[0].message).toMatch(message);
  });
  const good = [
    "/api/v[0-9]+",
    "^/a(?:b|c)*?$",
    "(?i)foo",
    "(?P<name>x)",
    "(?<name>x)",
    "[[:alpha:]]+",
    "\\pL+\\p{Greek}",
    "a{2,5}b{3,}",
    "\\Qa.b\\E",
    "[]a]",
    "\\x{1F600}",
    "a{,",
  ];
  it.each(good)("accepts %s", re => {
    expect(checkRegex("p", re)).toEqual([]);
  });
});
