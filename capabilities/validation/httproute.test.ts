import { MAX_PROBLEMS } from "./budget";
import { httpRouteProblems, httpRouteRuleProblems, problemsPerRule } from "./httproute";

const paths = (ps: { path: string }[]) => ps.map(p => p.path);

describe("httpRouteProblems", () => {
  it("collects every empty regular expression with its field path", () => {
    const problems = httpRouteProblems({
      spec: {
        rules: [
          { matches: [{ path: { type: "PathPrefix", value: "/" } }] },
          {
            matches: [
              { path: { type: "RegularExpression", value: "" } },
              {
                headers: [
                  { type: "Exact", name: "a", value: "" },
                  { type: "RegularExpression", name: "b", value: "" },
                ],
              },
              { queryParams: [{ type: "RegularExpression", name: "q", value: "" }] },
            ],
          },
        ],
      },
    });
    expect(paths(problems)).toEqual([
      "spec.rules[1].matches[0].path.value",
      "spec.rules[1].matches[1].headers[1].value",
      "spec.rules[1].matches[2].queryParams[0].value",
    ]);
  });

  it("accepts a route without regular expressions or without rules", () => {
    expect(
      httpRouteProblems({
        spec: { rules: [{ matches: [{ path: { type: "Exact", value: "/x" } }] }] },
      }),
    ).toEqual([]);
    expect(httpRouteProblems({})).toEqual([]);
  });

  it("accepts what the proxy runs, including braces in header values (the translator escapes them)", () => {
    expect(
      httpRouteProblems({
        spec: {
          rules: [
            {
              matches: [
                {
                  path: { type: "RegularExpression", value: "/v[0-9]+" },
                  headers: [{ name: "X-A", value: "{x}" }],
                },
              ],
              filters: [
                {
                  type: "RequestHeaderModifier",
                  requestHeaderModifier: {
                    set: [{ name: "X-B", value: "{http.request.host}" }],
                    remove: ["X-C"],
                  },
                },
                {
                  type: "URLRewrite",
                  urlRewrite: {
                    hostname: "a.example",
                    path: { type: "ReplaceFullPath", replaceFullPath: "/new" },
                  },
                },
              ],
              backendRefs: [
                {
                  filters: [
                    {
                      type: "ResponseHeaderModifier",
                      responseHeaderModifier: { add: [{ name: "X-D", value: "1" }] },
                    },
                  ],
                },
              ],
            },
          ],
        },
      }),
    ).toEqual([]);
  });

  it("names each header problem in matches and modifiers", () => {
    const problems = httpRouteProblems({
      spec: {
        rules: [
          {
            matches: [
              {
                headers: [
                  { name: "X A", value: "ok" },
                  { name: "X-B", value: "a\nb" },
                ],
              },
            ],
            filters: [
              {
                type: "RequestHeaderModifier",
                requestHeaderModifier: {
                  set: [{ name: "X-S", value: "a\r\nInjected: 1" }],
                  add: [{ name: "X:A", value: "v" }],
                  remove: ["*"],
                },
              },
              {
                type: "ResponseHeaderModifier",
                responseHeaderModifier: { set: [{ name: "X-R", value: "\u0000" }] },
              },
            ],
          },
        ],
      },
    });
    expect(paths(problems)).toEqual([
      "spec.rules[0].matches[0].headers[0].name",
      "spec.rules[0].matches[0].headers[1].value",
      "spec.rules[0].filters[0].requestHeaderModifier.set[0].value",
      "spec.rules[0].filters[0].requestHeaderModifier.add[0].name",
      "spec.rules[0].filters[0].requestHeaderModifier.remove[0]",
      "spec.rules[0].filters[1].responseHeaderModifier.set[0].value",
    ]);
  });

  it("refuses filters the proxy does not implement, naming the supported ones", () => {
    const problems = httpRouteRuleProblems(
      {
        filters: [
          { type: "RequestMirror" },
          { type: "CORS" },
          { type: "ExternalAuth" },
          {
            type: "ExtensionRef",
            extensionRef: { group: "example.com", kind: "Plugin", name: "p" },
          },
        ],
      },
      2,
    );
    // RequestMirror: accepted here; whether a Gateway's proxy runs it is its flavour's matter.
    expect(problems).toEqual([
      expect.objectContaining({ path: "spec.rules[2].filters[2].type", value: "ExternalAuth" }),
      {
        path: "spec.rules[2].filters[3].extensionRef",
        value: "example.com/Plugin p",
        message:
          "the proxy implements no ExtensionRef filters (supported on an HTTPRoute rule: RequestHeaderModifier, ResponseHeaderModifier, RequestRedirect, URLRewrite, CORS, RequestMirror)",
      },
    ]);
  });

  it("checks a mirror's share: percent or fraction, within [0, 1]", () => {
    const mirror = (requestMirror: object) =>
      httpRouteRuleProblems({ filters: [{ type: "RequestMirror", requestMirror }] }, 0);
    expect(mirror({ percent: 50 })).toEqual([]);
    expect(mirror({ fraction: { numerator: 1, denominator: 3 } })).toEqual([]);
    expect(mirror({ fraction: { numerator: 5 } })).toEqual([]);
    expect(mirror({ percent: 5, fraction: { numerator: 1 } })[0]).toMatchObject({
      path: "spec.rules[0].filters[0].requestMirror",
      message: "set percent or fraction, not both",
    });
    expect(mirror({ fraction: { numerator: 3, denominator: 2 } })[0]).toMatchObject({
      path: "spec.rules[0].filters[0].requestMirror.fraction",
      value: "3/2",
    });
  });

  it("accepts header modifiers on each of several backendRefs, refuses other backendRef filters", () => {
    expect(
      httpRouteRuleProblems(
        { backendRefs: [{ filters: [{ type: "RequestHeaderModifier" }] }, {}] },
        0,
      ),
    ).toEqual([]);
    expect(
      httpRouteRuleProblems({ backendRefs: [{ filters: [{ type: "RequestRedirect" }] }] }, 0)[0],
    ).toMatchObject({
      path: "spec.rules[0].backendRefs[0].filters[0].type",
      message:
        "RequestRedirect is not supported by the proxy (supported on a backendRef: RequestHeaderModifier, ResponseHeaderModifier, URLRewrite)",
    });
  });

  it("takes a null URLRewrite path for no path, beside a rule's own rewrite (fast-check found a crash)", () => {
    const rule = {
      filters: [{ type: "URLRewrite", urlRewrite: { path: {} } }],
      backendRefs: [{ filters: [{ type: "URLRewrite", urlRewrite: { path: null } }] }],
    };
    // the rule's path without a type is its own problem; the backendRef's null path is none
    expect(httpRouteRuleProblems(rule as never, 0).map(p => p.path)).toEqual([
      "spec.rules[0].filters[0].urlRewrite.path.type",
    ]);
  });

  it("accepts URLRewrite on a backendRef; refuses it beside the rule's own path rewrite and ReplacePrefixMatch without PathPrefix", () => {
    const rewrite = (path: object) => ({ type: "URLRewrite", urlRewrite: { path } });
    const full = { type: "ReplaceFullPath", replaceFullPath: "/x" };
    const prefix = { type: "ReplacePrefixMatch", replacePrefixMatch: "/x" };
    expect(httpRouteRuleProblems({ backendRefs: [{ filters: [rewrite(prefix)] }] }, 0)).toEqual([]);
    expect(
      httpRouteRuleProblems(
        {
          filters: [{ type: "URLRewrite", urlRewrite: { hostname: "h.test" } }],
          backendRefs: [{ filters: [rewrite(full)] }],
        },
        0,
      ),
    ).toEqual([]);
    expect(
      httpRouteRuleProblems(
        { filters: [rewrite(full)], backendRefs: [{}, { filters: [rewrite(full)] }] },
        2,
      ),
    ).toEqual([
      expect.objectContaining({
        path: "spec.rules[2].backendRefs[1].filters[0].urlRewrite.path",
        message: expect.stringContaining("cannot be combined with the rule's own URLRewrite path"),
      }),
    ]);
    expect(
      httpRouteRuleProblems(
        {
          matches: [{ path: { type: "Exact", value: "/e" } }],
          backendRefs: [{ filters: [rewrite(prefix)] }],
        },
        0,
      ),
    ).toEqual([
      expect.objectContaining({
        path: "spec.rules[0].backendRefs[0].filters[0].urlRewrite.path.type",
        message: "needs PathPrefix matches only (spec.rules[…].matches[0] is Exact)",
      }),
    ]);
  });

  it("splits a route's problems per rule for the translator, sharing one budget", () => {
    const rules = Array.from({ length: 40 }, (_, i) => ({
      matches: [{ path: { type: "RegularExpression", value: i === 0 ? "/ok" : "(?=x)" } }],
    }));
    const per = problemsPerRule(rules, httpRouteRuleProblems);
    expect(per[0]).toEqual([]);
    expect(per[1].map(p => p.path)).toEqual(["spec.rules[1].matches[0].path.value"]);
    expect(per[39]).toEqual([
      expect.objectContaining({
        message: `more than ${MAX_PROBLEMS} problems; the rest were not checked`,
      }),
    ]);
    expect(per.flat().length).toBeGreaterThan(MAX_PROBLEMS);
  });

  it("accepts timeouts, retry and sessionPersistence, refuses an idleTimeout with the reason", () => {
    const rule = {
      timeouts: { request: "10s", backendRequest: "2s" },
      retry: { attempts: 2 },
      sessionPersistence: { type: "Cookie", cookie: { name: "s" } },
    };
    expect(httpRouteRuleProblems(rule, 1)).toEqual([]);
    const problems = httpRouteRuleProblems(
      { ...rule, sessionPersistence: { type: "Cookie", sessionName: "s", idleTimeout: "1m" } },
      1,
    );
    expect(problems.map(p => [p.path, p.value])).toEqual([
      ["spec.rules[1].sessionPersistence.idleTimeout", "1m"],
    ]);
  });

  it("refuses redirect and rewrite paths that cannot form a URL, and prefix replacement without prefix matches", () => {
    const problems = httpRouteProblems({
      spec: {
        rules: [
          {
            filters: [
              {
                type: "RequestRedirect",
                requestRedirect: { path: { type: "ReplaceFullPath", replaceFullPath: "/a b?c" } },
              },
            ],
          },
          {
            matches: [{ path: { type: "Exact", value: "/x" } }],
            filters: [
              {
                type: "URLRewrite",
                urlRewrite: { path: { type: "ReplacePrefixMatch", replacePrefixMatch: "new" } },
              },
            ],
          },
        ],
      },
    });
    expect(paths(problems)).toEqual([
      "spec.rules[0].filters[0].requestRedirect.path.replaceFullPath",
      "spec.rules[1].filters[0].urlRewrite.path.replacePrefixMatch",
      "spec.rules[1].filters[0].urlRewrite.path.type",
    ]);
  });

  it("denies hostile input quickly: a 1 MB regex, 10,000 rules, deep nesting", () => {
    const huge = httpRouteProblems({
      spec: {
        rules: [
          { matches: [{ path: { type: "RegularExpression", value: "(a|b)*".repeat(200_000) } }] },
        ],
      },
    });
    expect(huge).toHaveLength(1);
    expect(huge[0].message).toBe("is 1200000 characters long; at most 4096 are accepted");
    expect(huge[0].value).toMatch(/… \(1200000 characters\)$/);

    const rules = Array.from({ length: 10_000 }, () => ({
      matches: [{ path: { type: "RegularExpression", value: "(?=x)" } }],
    }));
    const many = httpRouteProblems({ spec: { rules } });
    expect(many).toHaveLength(MAX_PROBLEMS + 1);
    expect(many[MAX_PROBLEMS].message).toBe(
      `more than ${MAX_PROBLEMS} problems; the rest were not checked`,
    );

    // Valid but enormous: the character budget stops the walk and refuses.
    const big = Array.from({ length: 10_000 }, () => ({
      matches: [{ path: { type: "RegularExpression", value: "[a-z]".repeat(800) } }],
    }));
    const budget = httpRouteProblems({ spec: { rules: big } });
    expect(budget).toHaveLength(1);
    expect(budget[0].message).toMatch(/^the object is too large to check/);

    // Nesting in fields no rule reads costs nothing; malformed shapes do not throw.
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 10_000; i++) deep = { x: deep };
    expect(
      httpRouteProblems({
        spec: { rules: [{ matches: [deep as never], filters: [deep as never] }] },
      } as never),
    ).toHaveLength(1);
    expect(httpRouteProblems({ spec: { rules: "x" as never } })).toEqual([]);
    expect(
      httpRouteProblems({
        spec: {
          rules: [
            null as never,
            {
              matches: [null as never],
              filters: [
                { type: "RequestHeaderModifier", requestHeaderModifier: { set: "x" as never } },
              ],
            },
          ],
        },
      }),
    ).toEqual([]);
  });
});
