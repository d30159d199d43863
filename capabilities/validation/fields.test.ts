import {
  checkHeaderName,
  checkHeaderValue,
  checkMatchedHeaderName,
  checkRemovedHeaderName,
  checkURLPath,
} from "./fields";

describe("checkHeaderName", () => {
  it.each(["X-Test", "x", "a!#$%&'*+-.^_`|~9", "Set-Cookie"])("accepts the token %j", n =>
    expect(checkHeaderName("p", n)).toEqual([]),
  );
  it.each([
    ["X Test", '" "'],
    ["X:Test", '":"'],
    ["X\nTest", '"\\n"'],
    ["{http.request.host}", '"{"'],
    ["Ünicode", '"Ü"'],
    ["a\u0000", '"\\u0000"'],
  ])("refuses %j naming the character", (n, ch) => {
    const [p] = checkHeaderName("spec.x.name", n);
    expect(p.path).toBe("spec.x.name");
    expect(p.message).toBe(
      `is not a valid header name (character ${ch}): only letters, digits and !#$%&'*+-.^_\`|~ are accepted`,
    );
  });
  it("refuses an empty or missing name", () => {
    expect(checkHeaderName("p", "")[0].message).toBe("must be a non-empty header name");
    expect(checkHeaderName("p", undefined)[0].message).toBe("must be a non-empty header name");
  });
});

describe("checkMatchedHeaderName", () => {
  it("refuses underscores and dots, which the proxy drops from requests", () => {
    expect(checkMatchedHeaderName("m", "x_y")[0].message).toMatch(/^contains "_" or "."/);
    expect(checkMatchedHeaderName("m", "x.y")[0].path).toBe("m");
    expect(checkMatchedHeaderName("m", "X-Y")).toEqual([]);
    expect(checkMatchedHeaderName("m", "X Y")[0].message).toMatch(/^is not a valid header name/);
  });
});

describe("checkRemovedHeaderName", () => {
  it("refuses Caddy's wildcard", () => {
    for (const n of ["*", "X-*", "*-Id"])
      expect(checkRemovedHeaderName("r", n)[0].message).toMatch(/wildcard/);
    expect(checkRemovedHeaderName("r", "X-Id")).toEqual([]);
  });
});

describe("checkHeaderValue", () => {
  it.each([
    "plain",
    "with space",
    "tab\there",
    "{http.request.host}",
    "a\\{b}",
    "é ü 😀",
    "  trimmed  ",
    "\u0080\u00ff",
  ])("accepts %j", v => expect(checkHeaderValue("p", v, "modifier")).toEqual([]));
  it.each([
    ["a\r\nX-Injected: 1", "CR"],
    ["a\nb", "LF"],
    ["a\u0000b", "NUL"],
    ["a\u0001", "U+0001"],
    ["a\u001f", "U+001F"],
    ["a\u007f", "DEL"],
  ])("refuses %j (%s) with a message per use", (v, what) => {
    expect(checkHeaderValue("s.v", v, "modifier")).toEqual([
      {
        path: "s.v",
        value: v,
        message: `contains the control character ${what}, which the proxy cannot send in a header: use visible characters, spaces and tabs only`,
      },
    ]);
    expect(checkHeaderValue("s.v", v, "match")[0].message).toBe(
      `contains the control character ${what}, which no HTTP request can carry, so the match could never be true: use visible characters, spaces and tabs only`,
    );
  });
  it("cuts a long value", () => {
    const [p] = checkHeaderValue("p", "a".repeat(5000) + "\n", "modifier");
    expect(p.value).toBe(`${"a".repeat(64)}… (5001 characters)`);
  });
});

describe("checkURLPath", () => {
  it.each(["/", "/a/b", "/%20x", "/a:b@c;d=e", ""])("accepts %j", v =>
    expect(checkURLPath("p", v)).toEqual([]),
  );
  it("refuses a relative path", () =>
    expect(checkURLPath("p", "a/b")[0].message).toBe('must start with "/" to form a URL path'));
  it.each(["/a b", "/a?b", "/a#b", "/{x}", "/a\nb", "/%zz", "/é"])("refuses %j", v =>
    expect(checkURLPath("p", v)[0].message).toMatch(/^cannot form a URL path/),
  );
});
