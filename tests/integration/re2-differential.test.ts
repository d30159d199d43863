/**
 * Differential test of the RE2 rules (capabilities/validation/regex.ts) against real Caddy
 * (docs/architecture.md §4: the admission verdict must equal what the proxy would do). For each expression
 * of the corpus, one config is POSTed to one running Caddy: the route the translator emits for
 * an HTTPRoute with a RegularExpression path match and a RegularExpression header match using
 * it (both embedded as `^(?:X)$`), plus a raw `header_regexp` with the bare expression. Caddy's
 * verdict (200, or 400 naming the regexp) must equal `checkRegex(...)` being empty.
 *
 * Two groups are deliberately excluded from the equality and asserted on our side only:
 * expressions longer than MAX_REGEX_LENGTH (no Gateway API field can hold them) and Unicode
 * class names that only newer Go versions know (Kengine is built with an older Go).
 */
import { request } from "undici";
import { renderCaddyJSON, toCaddyConfig } from "../../capabilities/caddy";
import { CaddyHTTPServer } from "../../capabilities/caddy/types";
import { GatewayIR } from "../../capabilities/ir";
import { MAX_REGEX_LENGTH, checkRegex } from "../../capabilities/validation/regex";
import { Caddy, startCaddy } from "../support/caddy";
import { freePort } from "../support/ports";

/** Expressions whose verdict must equal Caddy's (valid and invalid alike). */
const corpus: string[] = [
  // plain, valid RE2
  "/api/v[0-9]+",
  "^/a(?:b|c)*?$",
  "abc",
  "a|b|c",
  "(a|b)|(c|d)",
  "|",
  "a|",
  "()",
  "(|a)",
  "a{2}",
  "a{2,}",
  "a{2,5}",
  "a{0}",
  "a{0,0}",
  "a{1000}",
  "a{1000,}",
  "a{0,1000}",
  "a{2}?",
  "a*?",
  "a+?",
  "a??",
  "^*",
  "$+",
  "\\b*",
  "a(?i)*",
  "a*(?i)*",
  "a*\\Q\\E*",
  ".*",
  "(?s).",
  "(?i)foo",
  "(?i:foo)bar",
  "(?i-s:a.)",
  "(?U)a+",
  "(?m)^a$",
  "(?imsU)x",
  "(?i-i)x",
  "(?)",
  "(?:)",
  "(?P<name>x)",
  "(?<name>x)",
  "(?P<a_1>x)(?P<b2>y)",
  "(?P<n>a)(?P<n>b)",
  "[[:alpha:]]+",
  "[[:^digit:]]",
  "[[:word:][:xdigit:]]",
  "[]a]",
  "[^]a]",
  "[a-]",
  "[-a]",
  "[\\d-z]",
  "[a\\-z]",
  "[\\]]",
  "[\\[]",
  "[%--]",
  "[[:x]",
  "\\pL+\\p{Greek}",
  "\\p{Lu}\\P{Ll}\\PN",
  "\\p{^Greek}",
  "[\\p{Han}\\p{Latin}]",
  "\\p{Any}",
  "\\p{Zs}",
  "\\d\\D\\s\\S\\w\\W",
  "\\A\\b\\B\\z",
  "\\Qa.b\\E",
  "\\Qa.b\\E+",
  "\\Q\\E",
  "\\x41\\x{1F600}\\x{10FFFF}",
  "\\0\\07\\012\\177",
  "\\a\\f\\t\\n\\r\\v",
  "\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\",
  "\\_\\<\\>\\-\\/\\#\\ \\!",
  "a{,5}",
  "a{01}",
  "a{1,02}",
  "a{",
  "a{1",
  "a{1,",
  "{",
  "}",
  "x{2}y{3,4}",
  "(?:a{2}){500}",
  "(a{10}){100}",
  "((a{2}){2}){250}",
  "(a{0}){1000}",
  "(a*){1000}",
  "é+ü*",
  "😀+",
  "[😀-😂]",
  "\u0000",
  "[\\x{0}-\\x{10FFFF}]",
  "[\\x00-\\x{ff}]",
  "(?i)\\p{Greek}",
  "[\\p{^L}]",
  "[\\P{^L}]",
  "x{1000}y{1000}",
  "(?s:.)*",
  "\\pN{3}",
  "[[:^alpha:][:^space:]]",
  "(?:(?:(?:a)))",
  "((((a))))*",
  "[\\x{D800}]",
  "(?U)(?-U)a",
  "a{2,3}?b",
  "[a-b-c]",
  "[\\s-z]",
  "[a-\\x{10FFFF}]",
  // invalid in RE2 or in the proxy's embedding
  "(?=admin)",
  "/(?!admin).*",
  "(?<=a)b",
  "(?<!a)b",
  "(a)\\1",
  "\\1",
  "\\8",
  "\\9",
  "(?<n>a)\\k<n>",
  "(?P<n>a)(?P=n)",
  "(?P>n)",
  "a*+",
  "a++",
  "a?+",
  "a{2}+",
  "(?>a)",
  "(?#comment)",
  "(?(1)a|b)",
  "(?'n'a)",
  "a{1001}",
  "a{0,1001}",
  "a{1001,}",
  "a{99999999999}",
  "a{3,2}",
  "(a{500}){3}",
  "(?:a{2}){501}",
  "((a{10}){10}){11}",
  "(a",
  "a)",
  "(a))",
  "((a)",
  "a)|(?:b",
  "[a-z",
  "[]",
  "[^]",
  "[z-a]",
  "[a-\\d]",
  "[[:foo:]]",
  "[[:alpha:]",
  "[[:a]b:]]",
  "[\\b]",
  "[\\A]",
  "[\\Q]",
  "*a",
  "+",
  "?",
  "{2}",
  "a|*",
  "(*a)",
  "(?:*)",
  "(?i)*",
  "a**",
  "a*{2}",
  "a{2}{3}",
  "a{2}*",
  "a*??",
  "a???",
  "\\Z",
  "a\\Z",
  "a\\",
  "\\",
  "\\G",
  "\\K",
  "\\R",
  "\\X",
  "\\h",
  "\\e",
  "\\cA",
  "\\C",
  "\\é",
  "\\x",
  "\\x4",
  "\\xZZ",
  "\\x{}",
  "\\x{110000}",
  "\\x{12",
  "\\p{Foo}",
  "\\p{",
  "\\p",
  "\\pX",
  "\\Qabc",
  "a\\Q.*",
  "(?",
  "(?i",
  "(?-)",
  "(?i-)",
  "(?--i)",
  "(?x)a",
  "(?P<>a)",
  "(?P<a-b>x)",
  "(?P<n",
  "(?<n x>a)",
  "(?P<é>x)",
  "a{1}{2}",
  "\\x{FFFFFFFFF}",
  "[\\x{10FFFF}-a]",
  "[a-\\pL]",
  "(?i)(?P<n>",
  // JavaScript and RE2 disagree: escapes, classes and groups one engine knows and the other not
  "\\u0041",
  "[\\u0041-\\u005A]",
  "\\u{41}",
  "\\cJ",
  "\\o{101}",
  "\\N{U+0041}",
  "\\377",
  "\\400",
  "\\08",
  "\\12",
  "\\18",
  "[\\w-.]",
  "[.-\\w]",
  "[\\d-]",
  "[a-z&&[^aeiou]]",
  "[[=a=]]",
  "[[.a.]]",
  "[[:alpha:]-z]",
  "(?y)a",
  "(?u)a",
  "(?|a|b)",
  "(?^i)a",
  "(?i:)",
  "(?i)(?-i:a)",
  "(?s-m:.)",
  "(?<=\\d{3})x",
  "(?<name>a)\\k{name}",
  "\\g{1}",
  "\\g1",
  "a{1,1000}",
  "a{1000,1000}",
  "a{1000,1001}",
  "a{ 2}",
  "a{2 }",
  "a{-1}",
  "x{2}{,3}",
  "a*?+",
  "*?",
  "a{2}{2}",
  "a||b",
  "(?:a|)",
  "\\b{wb}",
  "[^\\x00-\\x{10FFFF}]",
  "[\\x{FFFF}-\\x{10000}]",
  "[\\d\\D]",
  "[a-a]",
  "(?i)Σ+",
  "\\pZ\\p{Zl}\\p{Nd}\\p{Lt}",
  "\\p{Cs}",
  "\\P{Any}",
  "\\z$",
  "^$",
  "(?m)^$",
  "x*y+z?",
  "\\/api\\/v1",
  "\\-",
  "\\:",
  "/users/(?P<id>[0-9]+)/?$",
  "/static/.*\\.(css|js|png)",
  "^/(en|de|fr)(/.*)?$",
];

/** Expressions at Go's size and nesting limits (generated, so the boundaries are exact). */
const nested = (n: number, inner = "a"): string => "(".repeat(n) + inner + ")".repeat(n);
const limits: [string, string][] = [
  ["size just under the limit", `(?:${"a".repeat(3355)}){1000}`],
  ["size just over the limit", `(?:${"a".repeat(3356)}){1000}`],
  ["size over the limit through a class repeat", `(?:${"[ab]".repeat(900)}){1000}`],
  ["998 nested groups", nested(998)],
  ["999 nested groups", nested(999)],
  ["1000 nested groups", nested(1000)],
  ["500 nested stars", "(?:".repeat(500) + "a" + ")*".repeat(500)],
  ["4000 characters", "a".repeat(MAX_REGEX_LENGTH - 96) + "[0-9]+".repeat(16)],
  ["long alternation", Array.from({ length: 400 }, (_, i) => `p${i}`).join("|")],
  ["many classes", "[a-z]".repeat(800)],
];

/** Refused by policy only: Caddy takes them, we do not (see the file comment). */
const policyOnly: [string, string][] = [
  ["longer than the limit", "a".repeat(MAX_REGEX_LENGTH + 1)],
  ["1 MB", "(a|b)*".repeat(1 << 18).slice(0, 1 << 20)],
  ["Unicode long name", "\\p{Letter}"],
  ["Unicode name in another case", "\\p{latin}"],
  ["Unicode ASCII", "\\p{ASCII}"],
  ["Unicode Assigned", "\\p{Assigned}"],
  ["Unicode LC", "\\p{LC}"],
  ["Unicode name in lower case", "\\p{greek}"],
];

let caddy: Caddy | undefined;
let httpPort = 0;

/** The translator's config for a route using `re` as path and header regex, plus a raw header_regexp. */
function configFor(re: string): string {
  const ir: GatewayIR = {
    namespace: "default",
    name: "re2",
    gatewayClassName: "kengine",
    httpServers: [
      {
        port: httpPort,
        protocol: "HTTP",
        listeners: [
          {
            id: "default/re2/http",
            certificateIds: [],
            routes: [
              {
                route: { kind: "HTTPRoute", namespace: "default", name: "re", rule: 0, match: 0 },
                match: {
                  path: { type: "RegularExpression", value: re },
                  headers: [{ type: "RegularExpression", name: "X-Re", value: re }],
                  queryParams: [],
                },
                action: { type: "respond", status: 200, body: "matched" },
              },
            ],
          },
        ],
      },
    ],
    l4Servers: [],
    certificates: [],
  };
  const config = toCaddyConfig(ir, {
    bindHost: "127.0.0.1",
    management: { adminListen: caddy!.adminAddress },
  });
  const server = (config.apps.http as { servers: Record<string, CaddyHTTPServer> }).servers[
    `http-${httpPort}`
  ];
  (server.routes as CaddyHTTPServer["routes"][number][]).unshift({
    match: [{ header_regexp: { "X-Raw": { pattern: re } } }],
    handle: [{ handler: "static_response", status_code: 200 }],
  });
  return renderCaddyJSON(config);
}

/** Whether real Caddy runs `re`: true on 200; false on a refusal that names the regexp. */
async function caddyAccepts(re: string): Promise<boolean> {
  const res = await caddy!.load(configFor(re));
  if (res.status === 200) return true;
  expect(res.text).toMatch(/regexp|regular expression/i); // refused for the expression, not for something else
  return false;
}

beforeAll(async () => {
  caddy = await startCaddy({ name: "re2" });
  httpPort = await freePort();
}, 120_000);

afterAll(() => caddy?.stop());

describe("checkRegex agrees with real Caddy", () => {
  it("has a corpus of valid and invalid expressions without duplicates", () => {
    expect(new Set(corpus).size).toBe(corpus.length);
    expect(corpus.length + limits.length).toBeGreaterThanOrEqual(250);
    const verdicts = corpus.map(re => checkRegex("p", re).length === 0);
    expect(verdicts.filter(v => v).length).toBeGreaterThan(60);
    expect(verdicts.filter(v => !v).length).toBeGreaterThan(60);
  });

  it("on every expression of the corpus", async () => {
    const disagreements: string[] = [];
    for (const re of corpus) {
      const ours = checkRegex("spec.rules[0].matches[0].path.value", re);
      const proxy = await caddyAccepts(re);
      if (proxy !== (ours.length === 0)) {
        disagreements.push(
          `${JSON.stringify(re)}: Caddy ${proxy ? "accepts" : "refuses"}, checkRegex ${ours.length === 0 ? "accepts" : `refuses (${ours[0].message})`}`,
        );
      }
    }
    expect(disagreements).toEqual([]);
  }, 120_000);

  it.each(limits)("at Go's limits: %s", async (_, re) => {
    const ours = checkRegex("p", re);
    expect({
      proxyAccepts: await caddyAccepts(re),
      weAccept: ours.length === 0,
      why: ours[0]?.message,
    }).toEqual({
      proxyAccepts: ours.length === 0,
      weAccept: ours.length === 0,
      why: ours[0]?.message,
    });
  });

  it.each(policyOnly)("refused by policy only: %s", async (_, re) => {
    expect(checkRegex("p", re)).toHaveLength(1);
  });

  it("a route using an accepted expression matches requests (the config is live, not only loaded)", async () => {
    expect(await caddyAccepts("/v[0-9]+/(?P<rest>.*)")).toBe(true);
    const ok = await request(`http://127.0.0.1:${httpPort}/v2/x`, {
      headers: { "x-re": "/v2/y" },
      reset: true,
    });
    expect(ok.statusCode).toBe(200);
    await ok.body.text();
    const no = await request(`http://127.0.0.1:${httpPort}/w2/x`, {
      headers: { "x-re": "/v2/y" },
      reset: true,
    });
    expect(no.statusCode).toBe(404);
    await no.body.text();
  });
});
