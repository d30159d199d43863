import fc from "fast-check";
import type { GatewayIR } from "../ir";
import { capabilitiesOf } from "../flavor/proxy-flavor";
import { celPlaceholder, celString, hexBelow, toCaddyConfig } from "./config";

describe("hexBelow (weighted backend choice from the request UUID)", () => {
  it("matches exactly the three-hex-digit prefixes below n, for every n", () => {
    const prefixes = Array.from({ length: 4096 }, (_, v) => v.toString(16).padStart(3, "0"));
    for (let n = 1; n < 4096; n++) {
      // Go's RE2 and JavaScript agree on this subset (anchors, classes, counted repeats).
      const re = new RegExp(hexBelow(n));
      const matched = prefixes.filter(p => re.test(`${p}e4f1-0000-4000-8000-000000000000`));
      expect(matched.length).toBe(n);
      expect(matched[matched.length - 1]).toBe((n - 1).toString(16).padStart(3, "0"));
    }
  });
});

describe("celString / celPlaceholder (user strings in CEL expressions)", () => {
  it("property: the literal holds no brace and decodes to the string itself", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), s => {
        const lit = celString(s);
        expect(lit).not.toMatch(/[{}]/);
        // JSON string escapes are CEL string escapes (\u007b included): one decoder for both.
        expect(JSON.parse(lit)).toBe(s);
      }),
    );
  });

  it("calls the flavour's placeholder function with the name as a literal", () => {
    const name = "http.request.uri.query.a!#$%&'*+-.^_`|~";
    expect(celPlaceholder(capabilitiesOf("Bundled"), name)).toBe(
      `ph(req, ${JSON.stringify(name)})`,
    );
    expect(celPlaceholder(capabilitiesOf("Kengine"), name)).toBe(
      `caddyPlaceholder(request, ${JSON.stringify(name)})`,
    );
  });

  it("property: regular-expression query matches reach the expression only as literals", () => {
    const token = fc.stringMatching(/^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,12}$/);
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.record({ name: token, value: fc.string({ minLength: 1 }) }), {
          minLength: 1,
          maxLength: 3,
          selector: p => p.name,
        }),
        fc.constantFrom("Bundled", "Kengine") as fc.Arbitrary<"Bundled" | "Kengine">,
        (params, flavor) => {
          const ir: GatewayIR = gatewayWithQueries(params, flavor);
          type Route = { match?: { expression?: string }[] };
          const set = toCaddyConfig(ir).apps.http!.servers["http-80"] as {
            routes: { handle: { routes?: Route[]; hosts?: Record<string, Route[]> }[] }[];
          };
          // Bundled: the listener's list in the route table; Kengine: in its subroute.
          const h = set.routes[0].handle[0];
          const expr = (h.hosts?.["*"] ?? h.routes!)[0].match![0].expression!;
          expect(expr).not.toMatch(/[{}]/);
          const fn = flavor === "Bundled" ? "ph(req, " : "caddyPlaceholder(request, ";
          const parts = expr.split(" && ");
          expect(parts).toHaveLength(params.length);
          parts.forEach((p, i) => {
            const m = /^(.*?)("(?:[^"\\]|\\.)*")\)\.matches\(("(?:[^"\\]|\\.)*")\)$/.exec(p);
            expect(m?.[1]).toBe(fn);
            expect(JSON.parse(m![2])).toBe(`http.request.uri.query.${params[i].name}`);
            expect(JSON.parse(m![3])).toBe(`^(?:${params[i].value})$`);
          });
        },
      ),
    );
  });
});

/** One HTTP listener with one route whose match holds only regular-expression query matches. */
function gatewayWithQueries(
  params: readonly { name: string; value: string }[],
  flavor: "Bundled" | "Kengine",
): GatewayIR {
  return {
    namespace: "default",
    name: "gw",
    gatewayClassName: "kengine",
    flavor,
    httpServers: [
      {
        protocol: "HTTP",
        port: 80,
        listeners: [
          {
            id: "default/gw/http",
            certificateIds: [],
            routes: [
              {
                route: { kind: "HTTPRoute", namespace: "default", name: "r", rule: 0, match: 0 },
                match: {
                  path: { type: "PathPrefix", value: "/" },
                  headers: [],
                  queryParams: params.map(p => ({ type: "RegularExpression" as const, ...p })),
                },
                action: { type: "respond", status: 200, body: "" },
              },
            ],
          },
        ],
      },
    ],
    l4Servers: [],
    certificates: [],
  };
}

describe("misdirected HTTPS requests (the client's server name in CEL)", () => {
  it.each(["Bundled", "Kengine"] as const)("%s: no vars_regexp, the flavour's function", flavor => {
    const listener = (hostname: string) => ({
      id: `default/gw/${hostname}`,
      hostname,
      certificateIds: ["default/cert"],
      routes: [],
    });
    const ir: GatewayIR = {
      ...gatewayWithQueries([], flavor),
      httpServers: [
        {
          protocol: "HTTPS",
          port: 443,
          listeners: [listener("a.example.com"), listener("*.example.com")],
        },
      ],
    };
    const json = JSON.stringify(toCaddyConfig(ir).apps.http);
    expect(json).not.toContain("vars_regexp");
    expect(json).not.toContain("{http.request.tls.server_name}");
    const fn = flavor === "Bundled" ? "ph(req, " : "caddyPlaceholder(request, ";
    expect(json).toContain(
      JSON.stringify(`!${fn}"http.request.tls.server_name").matches(`).slice(1, -1),
    );
  });
});

describe("egress_guard", () => {
  const guarded = (flavor: "Bundled" | "Kengine", withInvalid: boolean): GatewayIR => {
    const base = gatewayWithQueries([], flavor);
    const l = base.httpServers[0]!.listeners[0]!;
    return {
      ...base,
      httpServers: [
        {
          ...base.httpServers[0]!,
          listeners: [
            {
              ...l,
              routes: [
                {
                  ...l.routes[0]!,
                  action: {
                    type: "forward",
                    backends: [
                      {
                        type: "service",
                        id: "XBackend t/x",
                        weight: 1,
                        endpoints: [{ address: "api.example.com", port: 443 }],
                        protocol: "http",
                        egressGuard: { deny: ["10.0.0.0/8"] },
                      },
                      ...(withInvalid
                        ? [{ type: "invalid" as const, id: "t/gone", weight: 1 }]
                        : []),
                    ],
                  },
                },
              ],
            },
          ],
        },
      ],
    };
  };
  const proxies = (
    ir: GatewayIR,
  ): { transport?: Record<string, unknown>; upstreams: unknown[] }[] => {
    const found: { transport?: Record<string, unknown>; upstreams: unknown[] }[] = [];
    JSON.stringify(toCaddyConfig(ir).apps.http, (_k, v: unknown) => {
      if (v && typeof v === "object" && (v as { handler?: string }).handler === "reverse_proxy")
        found.push(v as never);
      return v;
    });
    return found;
  };

  it("a name is dialled by kengine_http with the guard, in a reverse_proxy of its own", () => {
    for (const withInvalid of [false, true]) {
      const rp = proxies(guarded("Bundled", withInvalid));
      const named = rp.filter(p => JSON.stringify(p.upstreams).includes("api.example.com"));
      expect(named).toHaveLength(1);
      expect(named[0]!.upstreams).toEqual([{ dial: "api.example.com:443" }]);
      expect(named[0]!.transport).toEqual({
        protocol: "kengine_http",
        egress_guard: { deny: ["10.0.0.0/8"] },
      });
      // The invalid share is answered by a static 500, never by the guarded reverse_proxy.
      expect(rp.every(p => !JSON.stringify(p.upstreams).includes("10500"))).toBe(true);
    }
  });

  it("a flavour without the guard never dials a name (500 instead)", () => {
    const json = JSON.stringify(toCaddyConfig(guarded("Kengine", false)).apps.http);
    expect(json).not.toContain("api.example.com");
    expect(json).not.toContain("egress_guard");
  });
});
