/**
 * The ingress-nginx annotations in conversion (docs/ingress.md, "ingress-nginx annotations"):
 * read only when the class opts in, each mapping onto HTTPRoute filters and timeouts, refused
 * values leaving the Ingress out, and every route made still passing HTTPRoute validation.
 */
import type { V1Ingress } from "@kubernetes/client-node";
import { SERVER_HEADER_FILTER, Target, convertIngress } from "./convert";
import { HTTPRouteLike, httpRouteProblems } from "../validation/httproute";
import { durationMs } from "../validation/session";
import { sessionNeeds } from "../translate/session";

const P = "nginx.ingress.kubernetes.io/";
const target: Target = { gateway: { namespace: "infra", name: "shared" }, nginxAnnotations: true };
const lookup = () => undefined;
const ingress = (annotations: Record<string, string>, tls = false): V1Ingress => ({
  metadata: { name: "shop", namespace: "apps", uid: "u-1", annotations },
  spec: {
    ...(tls ? { tls: [{ hosts: ["shop.example.com"], secretName: "cert" }] } : {}),
    rules: [
      {
        host: "shop.example.com",
        http: {
          paths: [
            {
              path: "/api",
              pathType: "Prefix",
              backend: { service: { name: "web", port: { number: 80 } } },
            },
          ],
        },
      },
    ],
  },
});
const convert = (annotations: Record<string, string>, tls = false, t = target) => {
  const out = convertIngress(ingress(annotations, tls), t, lookup);
  for (const r of out.httpRoutes) expect(httpRouteProblems(r as HTTPRouteLike)).toEqual([]);
  return out;
};
const rulesOf = (annotations: Record<string, string>) => {
  const out = convert(annotations);
  expect(out.problems).toEqual([]);
  expect(out.httpRoutes).toHaveLength(1);
  return out.httpRoutes[0]!.spec.rules;
};

describe("ingress-nginx annotations in conversion", () => {
  it("are not read unless the class opts in", () => {
    const annotations = { [`${P}rewrite-target`]: "/", [`${P}server-snippet`]: "x" };
    const out = convert(annotations, true, { ...target, nginxAnnotations: false });
    expect(out.problems).toEqual([]);
    for (const r of out.httpRoutes)
      for (const x of r.spec.rules) expect(x.filters).toEqual([SERVER_HEADER_FILTER]);
    // Without the opt-in a tls host is served on the Gateway and the ListenerSet alike.
    expect(out.httpRoutes).toHaveLength(1);
    expect(out.httpRoutes[0]!.spec.parentRefs.map(p => p.kind)).toEqual(["Gateway", "ListenerSet"]);
  });

  it("ssl-redirect (the default): tls hosts answer a 308 to https on the Gateway's listeners", () => {
    const out = convert({}, true, { ...target, httpsPort: 8443 });
    expect(out.problems).toEqual([]);
    const [served, redirect] = out.httpRoutes;
    expect(served!.spec.parentRefs.map(p => p.kind)).toEqual(["ListenerSet"]);
    expect(served!.spec.rules[0]!.backendRefs).toHaveLength(1);
    expect(redirect!.spec.parentRefs.map(p => p.kind)).toEqual(["Gateway"]);
    expect(redirect!.spec.hostnames).toEqual(["shop.example.com"]);
    expect(redirect!.spec.rules).toEqual([
      {
        matches: [{ path: { type: "PathPrefix", value: "/api" } }],
        filters: [
          SERVER_HEADER_FILTER,
          {
            type: "RequestRedirect",
            requestRedirect: { scheme: "https", port: 8443, statusCode: 308 },
          },
        ],
        backendRefs: [],
      },
    ]);
    expect(redirect!.metadata.name).not.toBe(served!.metadata.name);
  });

  it('ssl-redirect "false" serves tls hosts on HTTP too; force-ssl-redirect redirects', () => {
    const off = convert({ [`${P}ssl-redirect`]: "false" }, true);
    expect(off.httpRoutes).toHaveLength(1);
    expect(off.httpRoutes[0]!.spec.parentRefs).toHaveLength(2);
    const forced = convert(
      { [`${P}ssl-redirect`]: "false", [`${P}force-ssl-redirect`]: "true" },
      true,
    );
    expect(forced.httpRoutes).toHaveLength(2);
    // A host without tls is not redirected: nothing serves it on https.
    expect(convert({ [`${P}force-ssl-redirect`]: "true" }).httpRoutes).toHaveLength(1);
  });

  it("permanent-redirect: every path answers the redirect (301 or the code given)", () => {
    expect(rulesOf({ [`${P}permanent-redirect`]: "https://new.example.org:8443/shop" })).toEqual([
      {
        matches: [{ path: { type: "PathPrefix", value: "/api" } }],
        filters: [
          SERVER_HEADER_FILTER,
          {
            type: "RequestRedirect",
            requestRedirect: {
              scheme: "https",
              hostname: "new.example.org",
              port: 8443,
              path: { type: "ReplaceFullPath", replaceFullPath: "/shop" },
              statusCode: 301,
            },
          },
        ],
        backendRefs: [],
      },
    ]);
    const [rule] = rulesOf({
      [`${P}permanent-redirect`]: "http://new.example.org",
      [`${P}permanent-redirect-code`]: "308",
    });
    expect(rule!.filters).toEqual([
      SERVER_HEADER_FILTER,
      {
        type: "RequestRedirect",
        requestRedirect: {
          scheme: "http",
          hostname: "new.example.org",
          path: { type: "ReplaceFullPath", replaceFullPath: "/" },
          statusCode: 308,
        },
      },
    ]);
  });

  it("temporal-redirect: 302 (or its code), and it wins over permanent-redirect", () => {
    const [rule] = rulesOf({
      [`${P}permanent-redirect`]: "https://a.example.org/",
      [`${P}temporal-redirect`]: "/maintenance",
    });
    expect(rule!.filters).toEqual([
      SERVER_HEADER_FILTER,
      {
        type: "RequestRedirect",
        requestRedirect: {
          path: { type: "ReplaceFullPath", replaceFullPath: "/maintenance" },
          statusCode: 302,
        },
      },
    ]);
    const [coded] = rulesOf({
      [`${P}temporal-redirect`]: "/m",
      [`${P}temporal-redirect-code`]: "307",
    });
    expect(coded!.filters[1]).toMatchObject({ requestRedirect: { statusCode: 307 } });
  });

  it("app-root: an Exact / rule per host redirecting (302) to the root, before the paths", () => {
    const rules = rulesOf({ [`${P}app-root`]: "/app" });
    expect(rules).toHaveLength(2);
    expect(rules[0]).toEqual({
      matches: [{ path: { type: "Exact", value: "/" } }],
      filters: [
        SERVER_HEADER_FILTER,
        {
          type: "RequestRedirect",
          requestRedirect: {
            path: { type: "ReplaceFullPath", replaceFullPath: "/app" },
            statusCode: 302,
          },
        },
      ],
      backendRefs: [],
    });
    expect(rules[1]!.matches[0]!.path).toEqual({ type: "PathPrefix", value: "/api" });
  });

  it("rewrite-target and upstream-vhost: one URLRewrite; proxy-read-timeout: backendRequest", () => {
    const [rule] = rulesOf({
      [`${P}rewrite-target`]: "/v2",
      [`${P}upstream-vhost`]: "Internal.example.svc",
      [`${P}proxy-read-timeout`]: "120",
    });
    expect(rule).toEqual({
      matches: [{ path: { type: "PathPrefix", value: "/api" } }],
      filters: [
        SERVER_HEADER_FILTER,
        {
          type: "URLRewrite",
          urlRewrite: {
            hostname: "internal.example.svc",
            path: { type: "ReplaceFullPath", replaceFullPath: "/v2" },
          },
        },
      ],
      backendRefs: [{ group: "", kind: "Service", name: "web", port: 80 }],
      timeouts: { backendRequest: "120s" },
    });
  });

  it("refused annotations and values the proxy cannot run leave the Ingress out, with paths", () => {
    const out = convert({
      [`${P}configuration-snippet`]: "more_set_headers x;",
      [`${P}rewrite-target`]: "/$2",
      [`${P}permanent-redirect`]: "https://a.example.org/?q=1",
      [`${P}permanent-redirect-code`]: "200",
      [`${P}upstream-vhost`]: "$host",
      [`${P}proxy-read-timeout`]: "60s",
      [`${P}ssl-redirect`]: "yes",
      [`${P}app-root`]: "app",
    });
    expect(out.httpRoutes).toEqual([]);
    expect(out.problems.map(p => p.path).sort()).toEqual(
      [
        "app-root",
        "configuration-snippet",
        "permanent-redirect",
        "permanent-redirect-code",
        "proxy-read-timeout",
        "rewrite-target",
        "ssl-redirect",
        "upstream-vhost",
      ].map(n => `metadata.annotations[${JSON.stringify(P + n)}]`),
    );
    expect(out.problems.find(p => p.path.includes("snippet"))!.message).toMatch(
      /refused: the proxy runs no nginx configuration/,
    );
  });

  it("a canary without a header, cookie or weight is not served, and says so on itself", () => {
    const out = convert({ [`${P}canary`]: "true", [`${P}canary-weight-total`]: "10" });
    expect(out.httpRoutes).toEqual([]);
    expect(out.problems).toEqual([
      expect.objectContaining({
        path: `metadata.annotations[${JSON.stringify(`${P}canary`)}]`,
        message: expect.stringMatching(/canary-weight selects no request: it is not served/),
      }),
    ]);
    expect(convert({ [`${P}canary`]: "false" }).httpRoutes).toHaveLength(1);
  });

  it("a canary by header and cookie: one match per selector, each more specific than the path", () => {
    const [rule] = rulesOf({
      [`${P}canary`]: "true",
      [`${P}canary-by-header`]: "X-Canary",
      [`${P}canary-by-cookie`]: "beta",
      [`${P}canary-weight`]: "50",
    });
    expect(rule!.matches).toEqual([
      {
        path: { type: "PathPrefix", value: "/api" },
        headers: [{ type: "Exact", name: "X-Canary", value: "always" }],
      },
      {
        path: { type: "PathPrefix", value: "/api" },
        headers: [
          {
            type: "RegularExpression",
            name: "Cookie",
            value: String.raw`(?:.*;)?\s*beta=always\s*(?:;.*)?`,
          },
        ],
      },
    ]);
    const cookie = new RegExp(`^(?:${rule!.matches[1]!.headers![0]!.value})$`);
    expect(cookie.test("a=1; beta=always")).toBe(true);
    expect(cookie.test("beta=always")).toBe(true);
    expect(cookie.test("xbeta=always")).toBe(false);
    expect(cookie.test("beta=never; a=always")).toBe(false);
    const [byValue] = rulesOf({
      [`${P}canary`]: "true",
      [`${P}canary-by-header`]: "X-Canary",
      [`${P}canary-by-header-value`]: "v2",
      [`${P}canary-by-header-pattern`]: "ignored",
    });
    expect(byValue!.matches[0]!.headers).toEqual([
      { type: "Exact", name: "X-Canary", value: "v2" },
    ]);
    const [byPattern] = rulesOf({
      [`${P}canary`]: "true",
      [`${P}canary-by-header`]: "X-Canary",
      [`${P}canary-by-header-pattern`]: "v[0-9]+",
    });
    expect(byPattern!.matches[0]!.headers).toEqual([
      { type: "RegularExpression", name: "X-Canary", value: "v[0-9]+" },
    ]);
    for (const bad of <Record<string, string>[]>[
      { [`${P}canary-by-header`]: "Host" },
      { [`${P}canary-by-header`]: "bad header" },
      { [`${P}canary-by-header`]: "X", [`${P}canary-by-header-pattern`]: "(?<=x)" },
      { [`${P}canary-by-cookie`]: "a;b" },
    ]) {
      const out = convert({ [`${P}canary`]: "true", ...bad });
      expect(out.httpRoutes).toEqual([]);
      expect(out.problems.length).toBeGreaterThan(0);
    }
  });

  it("enable-cors: a CORS filter with ingress-nginx's defaults, and the values given", () => {
    const [rule] = rulesOf({ [`${P}enable-cors`]: "true" });
    expect(rule!.filters).toEqual([
      SERVER_HEADER_FILTER,
      {
        type: "CORS",
        cors: {
          allowOrigins: ["*"],
          allowMethods: ["GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"],
          allowHeaders: [
            "DNT",
            "Keep-Alive",
            "User-Agent",
            "X-Requested-With",
            "If-Modified-Since",
            "Cache-Control",
            "Content-Type",
            "Authorization",
          ],
          exposeHeaders: [],
          allowCredentials: true,
          maxAge: 1728000,
        },
      },
    ]);
    const [given] = rulesOf({
      [`${P}enable-cors`]: "true",
      [`${P}cors-allow-origin`]: "https://a.example.com, https://*.b.example.com:8443",
      [`${P}cors-allow-methods`]: "get, POST",
      [`${P}cors-allow-headers`]: "X-Token",
      [`${P}cors-expose-headers`]: "X-Trace, X-Id",
      [`${P}cors-allow-credentials`]: "false",
      [`${P}cors-max-age`]: "60",
      [`${P}rewrite-target`]: "/",
    });
    expect(given!.filters[1]).toEqual({
      type: "CORS",
      cors: {
        allowOrigins: ["https://a.example.com", "https://*.b.example.com:8443"],
        allowMethods: ["GET", "POST"],
        allowHeaders: ["X-Token"],
        exposeHeaders: ["X-Trace", "X-Id"],
        allowCredentials: false,
        maxAge: 60,
      },
    });
    expect(given!.filters[2]!.type).toBe("URLRewrite");
    // Without enable-cors the cors-* annotations change nothing.
    const [off] = rulesOf({ [`${P}cors-allow-origin`]: "https://a.example.com" });
    expect(off!.filters).toEqual([SERVER_HEADER_FILTER]);
    for (const bad of <Record<string, string>[]>[
      { [`${P}cors-allow-origin`]: "example.com" },
      { [`${P}cors-allow-origin`]: "*, https://a.example.com" },
      { [`${P}cors-allow-methods`]: "FETCH" },
      { [`${P}cors-allow-headers`]: "X Y" },
      { [`${P}cors-max-age`]: "-1" },
      { [`${P}cors-allow-credentials`]: "maybe" },
    ]) {
      const out = convert({ [`${P}enable-cors`]: "true", ...bad });
      expect(out.httpRoutes).toEqual([]);
      expect(out.problems.length).toBeGreaterThan(0);
    }
  });

  it("affinity: cookie: sessionPersistence on forwarding rules, INGRESSCOOKIE by default", () => {
    const [rule] = rulesOf({ [`${P}affinity`]: "cookie" });
    expect(rule!.sessionPersistence).toEqual({
      type: "Cookie",
      cookie: { name: "INGRESSCOOKIE", lifetimeType: "Session" },
    });
    const [given] = rulesOf({
      [`${P}affinity`]: "cookie",
      [`${P}affinity-mode`]: "persistent",
      [`${P}session-cookie-name`]: "route",
      [`${P}session-cookie-path`]: "/api",
      [`${P}session-cookie-max-age`]: "3600",
    });
    expect(given!.sessionPersistence).toEqual({
      type: "Cookie",
      cookie: { name: "route", path: "/api", lifetimeType: "Permanent" },
      absoluteTimeout: "1h",
    });
    const [expires] = rulesOf({
      [`${P}affinity`]: "cookie",
      [`${P}session-cookie-expires`]: "60",
    });
    expect(expires!.sessionPersistence?.absoluteTimeout).toBe("1m");
    // a day and odd lengths: groups of at most 5 digits, read back to the same seconds
    for (const [v, d] of [
      ["86400", "24h"],
      ["604800", "168h"],
      ["90061", "25h1m1s"],
      ["359996400", "99999h"],
    ]) {
      const [r] = rulesOf({ [`${P}affinity`]: "cookie", [`${P}session-cookie-max-age`]: v! });
      expect(r!.sessionPersistence?.absoluteTimeout).toBe(d);
      expect(durationMs(d!)).toBe(Number(v) * 1000);
    }
    // A redirect answers without a backend: no session there.
    const [redirect] = rulesOf({
      [`${P}affinity`]: "cookie",
      [`${P}session-cookie-samesite`]: "None",
      [`${P}permanent-redirect`]: "https://example.org/",
    });
    expect(redirect!.sessionPersistence).toBeUndefined();
    expect(redirect).not.toHaveProperty("x-kengine-session-same-site");
    for (const bad of <Record<string, string>[]>[
      { [`${P}affinity`]: "ip" },
      { [`${P}session-cookie-name`]: "a b" },
      { [`${P}session-cookie-path`]: "api" },
      { [`${P}session-cookie-max-age`]: "0" },
      { [`${P}session-cookie-samesite`]: "Nothing" },
      { [`${P}session-cookie-samesite`]: "" },
    ]) {
      const out = convert({ [`${P}affinity`]: "cookie", ...bad });
      expect(out.httpRoutes).toEqual([]);
      expect(out.problems.length).toBeGreaterThan(0);
    }
  });

  it("session-cookie-samesite: the rule's SameSite beside its sessionPersistence, Bundled only", () => {
    const field = "x-kengine-session-same-site";
    for (const [v, want] of [
      ["None", "None"],
      ["lax", "Lax"],
      [" Strict ", "Strict"],
    ] as const) {
      const [rule] = rulesOf({ [`${P}affinity`]: "cookie", [`${P}session-cookie-samesite`]: v });
      expect(rule![field]).toBe(want);
      expect(rule!.sessionPersistence?.cookie.name).toBe("INGRESSCOOKIE");
    }
    expect(rulesOf({ [`${P}affinity`]: "cookie" })[0]).not.toHaveProperty(field);
    // Without affinity it is ignored, with a warning at admission.
    expect(rulesOf({ [`${P}session-cookie-samesite`]: "None" })[0]).not.toHaveProperty(field);
    const out = convert({ [`${P}affinity`]: "cookie", [`${P}session-cookie-samesite`]: "Secure" });
    expect(out.httpRoutes).toEqual([]);
    expect(out.problems).toEqual([
      expect.objectContaining({
        path: `metadata.annotations["${P}session-cookie-samesite"]`,
        message: 'must be "None", "Lax" or "Strict"',
      }),
    ]);
    // Stock Caddy's cookie policy cannot set it: only the session module's flavour runs it.
    const session = { mode: "cookie", name: "s", secret: "" } as const;
    expect(sessionNeeds(session)).toEqual([]);
    expect(sessionNeeds({ ...session, sameSite: "Lax" })).toEqual(["sessionModule"]);
  });

  it("proxy-body-size: the rule's body limit in bytes, nginx's units; 0 is none", () => {
    const field = "x-kengine-max-request-body-bytes";
    for (const [v, bytes] of [
      ["1048576", 1048576],
      ["512k", 524288],
      ["8M", 8388608],
      ["1g", 1073741824],
    ] as const)
      expect(rulesOf({ [`${P}proxy-body-size`]: v })[0]![field]).toBe(bytes);
    expect(rulesOf({ [`${P}proxy-body-size`]: "0" })[0]).not.toHaveProperty(field);
    for (const bad of ["8mb", "-1", "1.5m", "99999999999999g"]) {
      const out = convert({ [`${P}proxy-body-size`]: bad });
      expect(out.httpRoutes).toEqual([]);
      expect(out.problems.map(p => p.path)).toEqual([
        `metadata.annotations["${P}proxy-body-size"]`,
      ]);
    }
  });

  it("proxy-connect/send-timeout: the rule's connection timeouts in seconds, an hour at most", () => {
    const field = "x-kengine-proxy-timeouts";
    const [rule] = rulesOf({
      [`${P}proxy-connect-timeout`]: "15",
      [`${P}proxy-send-timeout`]: " 3600s ",
    });
    expect(rule![field]).toEqual({ connect: 15, send: 3600 });
    expect(rulesOf({ [`${P}proxy-send-timeout`]: "1" })[0]![field]).toEqual({ send: 1 });
    expect(rulesOf({})[0]).not.toHaveProperty(field);
    // A redirect answers without a backend: no connection to time.
    const [redirect] = rulesOf({
      [`${P}proxy-connect-timeout`]: "5",
      [`${P}permanent-redirect`]: "https://example.org/",
    });
    expect(redirect).not.toHaveProperty(field);
    for (const name of ["proxy-connect-timeout", "proxy-send-timeout"])
      for (const bad of ["0", "-5", "3601", "1.5", "5m", "fast", "", "15 s", "99999999999"]) {
        const out = convert({ [`${P}${name}`]: bad });
        expect(out.httpRoutes).toEqual([]);
        expect(out.problems.map(p => p.path)).toEqual([`metadata.annotations["${P}${name}"]`]);
        expect(out.problems[0]!.message).toMatch(/whole number of seconds from 1 to 3600/);
      }
  });

  it("use-regex: Prefix paths as RE2 from the path's start, Exact literal", () => {
    const regex = (path: string, pathType = "Prefix", t = target) => {
      const i = ingress({ [`${P}use-regex`]: "true" });
      i.spec!.rules![0]!.http!.paths[0] = {
        path,
        pathType,
        backend: { service: { name: "web", port: { number: 80 } } },
      };
      return convertIngress(i, t, lookup);
    };
    const out = regex("/items/[0-9]+");
    expect(out.problems).toEqual([]);
    expect(out.httpRoutes[0]!.spec.rules[0]!.matches[0]!.path).toEqual({
      type: "RegularExpression",
      value: "/items/[0-9]+.*",
    });
    expect(httpRouteProblems(out.httpRoutes[0] as HTTPRouteLike)).toEqual([]);
    const full = new RegExp(`^(?:${out.httpRoutes[0]!.spec.rules[0]!.matches[0]!.path.value})$`);
    expect(full.test("/items/42/x")).toBe(true);
    expect(full.test("/items/abc")).toBe(false);
    expect(full.test("/v1/items/42")).toBe(false);
    // a top-level alternation keeps every branch a prefix
    expect(regex("/a|/b").httpRoutes[0]!.spec.rules[0]!.matches[0]!.path.value).toBe("(?:/a|/b).*");
    expect(regex("/exact", "Exact").httpRoutes[0]!.spec.rules[0]!.matches[0]!.path).toEqual({
      type: "Exact",
      value: "/exact",
    });
    // what RE2 refuses is refused; so is a regex-looking path when the class does not opt in
    for (const bad of ["/(?=a)", "/a)(", "/a b"])
      expect(regex(bad).problems.map(p => p.path)).toEqual(["spec.rules[0].http.paths[0].path"]);
    const literal = regex("/items/[0-9]+", "Prefix", { ...target, nginxAnnotations: false });
    expect(literal.httpRoutes).toEqual([]);
    expect(literal.problems[0]!.message).toMatch(/looks like a regular expression/);
  });

  it("whitelist/denylist-source-range: canonical CIDRs on every rule, redirects included", () => {
    const field = "x-kengine-source-ranges";
    const [rule] = rulesOf({
      [`${P}whitelist-source-range`]: "10.0.0.0/8, 192.0.2.7, 2001:DB8::/32",
      [`${P}denylist-source-range`]: "10.1.0.0/16",
    });
    expect(rule![field]).toEqual({
      allow: ["10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32"],
      deny: ["10.1.0.0/16"],
    });
    const [redirect] = rulesOf({
      [`${P}whitelist-source-range`]: "10.0.0.0/8",
      [`${P}permanent-redirect`]: "https://example.org/",
    });
    expect(redirect![field]).toEqual({ allow: ["10.0.0.0/8"] });
    for (const bad of [
      "10.0.0.0/33",
      "10.0.0",
      "example.com",
      "{remote_host}",
      "::ffff:1.2.3.4/128",
      "fe80::1%eth0",
      ",",
    ]) {
      const out = convert({ [`${P}whitelist-source-range`]: bad });
      expect(out.httpRoutes).toEqual([]);
      expect(out.problems.length).toBeGreaterThan(0);
    }
  });

  it("server-alias: the named hosts' paths under each alias, the Ingress's own rule first", () => {
    const out = convert({ [`${P}server-alias`]: "www.example.com, Shop.Example.org" });
    expect(out.problems).toEqual([]);
    expect(out.httpRoutes.map(r => r.spec.hostnames)).toEqual([
      ["shop.example.com"],
      ["www.example.com"],
      ["shop.example.org"],
    ]);
    for (const r of out.httpRoutes)
      expect(r.spec.rules[0]!.matches[0]!.path).toEqual({ type: "PathPrefix", value: "/api" });
    for (const bad of ["*.example.com", "a.example.com:80", " , "]) {
      const refused = convert({ [`${P}server-alias`]: bad });
      expect(refused.httpRoutes).toEqual([]);
      expect(refused.problems.length).toBeGreaterThan(0);
    }
  });
});
