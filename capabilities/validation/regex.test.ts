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
    ["(a{500}){3}", /nested repetition counts multiply above 1000/],
    ["[z-a]", /invalid character class range "z-a"/],
    ["[a-\\d]", /escape \\d is not supported/],
    ["[[:foo:]]", /unknown POSIX class/],
    ["[\\b]", /escape \\b is not supported/],
    ["\\x{110000}", /above \\x\{10FFFF\}/],
    ["\\p{Foo}", /unknown Unicode class "Foo"/],
    ["\\p{Letter}", /unknown Unicode class "Letter"/],
    ["\\Qabc", /\\Q without a closing \\E/],
    ["(?i-)", /unsupported group syntax/],
    ["(?'n'a)", /named group/],
    ["a{3,2}", /maximum below minimum/],
    [`(?:${"a".repeat(3356)}){1000}`, /too large/],
    ["(".repeat(999) + "a" + ")".repeat(999), /nests too deeply/],
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
    "a??",
    "a(?i)*",
    "(?)",
    "\\0\\07\\012",
    "(?:a{2}){500}",
    "[\\d-z]",
    "[[:x]",
    `(?:${"a".repeat(3355)}){1000}`,
    "(".repeat(998) + "a" + ")".repeat(998),
  ];
  it.each(good)("accepts %s", re => {
    expect(checkRegex("p", re)).toEqual([]);
  });
});

describe("hostile input", () => {
  it("judges a 1 MB expression (refused by length, whatever its content)", () => {
    const huge = "(a|b)*".repeat(1 << 18).slice(0, 1 << 20);
    const problems = checkRegex("spec.rules[0].matches[0].path.value", huge);
    expect(problems).toHaveLength(1);
    expect(problems[0].message).toBe("is 1048576 characters long; at most 4096 are accepted");
    expect(problems[0].value.length).toBeLessThan(100);
  });
  it("judges pathological expressions under the length limit", () => {
    expect(checkRegex("p", "(".repeat(4096))[0].message).toMatch(/unbalanced/);
    expect(checkRegex("p", "(".repeat(2000) + ")".repeat(2000))[0].message).toMatch(
      /nests too deeply/,
    );
    expect(checkRegex("p", "[[:".repeat(1365))[0].message).toMatch(/unterminated character class/);
    expect(checkRegex("p", "\\p{".repeat(1024))[0].message).toMatch(/unterminated Unicode class/);
    expect(checkRegex("p", "(?P<".repeat(1024))[0].message).toMatch(/unterminated group name/);
    expect(checkRegex("p", "a{1000}".repeat(585))).toEqual([]);
  });
});
