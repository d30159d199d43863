/**
 * Placeholders: whatever text a tenant stores in a field that reaches
 * the Caddy config, the rendered config expands no placeholder but the controller's own. A
 * tenant's `{env.*}` or `{file.*}` in a header value, a span name or a response body would read
 * the proxy's environment or files into a response. The check reads every string of the config
 * the way Caddy's replacer does (a `{` not preceded by `\` opens a placeholder up to the next
 * unescaped `}`), except the fields Caddy compiles without expanding (path and header regular
 * expressions, CEL expressions, PEM material). tests/integration/placeholders-caddy.test.ts
 * loads such configs into real Caddy.
 */
import fc from "fast-check";
import { KubeObject } from "../snapshot";
import { renderGolden } from "../../hack/translate";
import { ATTRIBUTE_PLACEHOLDERS } from "../validation/telemetry";
import { escapePlaceholders, unescapePlaceholders } from "./placeholders";

const RUNS = Number(process.env.KG_PROPERTY_RUNS ?? 150);

/** The placeholders the controller itself writes (caddy/config.ts, telemetry). */
const OURS = new Set([
  "http.request.host",
  "http.request.hostport",
  "http.request.uri",
  "http.request.uri.query",
  "http.request.uuid",
  "http.request.header.Origin",
  "http.request.header.Access-Control-Request-Method",
  "http.request.header.Access-Control-Request-Headers",
  "http.regexp.kengine_path.1",
  "http.regexp.kengine_path.2",
  ...Object.values(ATTRIBUTE_PLACEHOLDERS).map(p => p.slice(1, -1)),
]);

/** Keys whose strings Caddy does not expand (compiled as written, or key material). */
const LITERAL_KEYS = new Set(["expression", "certificate", "key", "trusted_ca_certs"]);

/** The placeholder names Caddy's replacer would look up in `s`. */
export function placeholdersIn(s: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < s.length; i++) {
    if (s[i] !== "{" || (i > 0 && s[i - 1] === "\\")) continue;
    let end = -1;
    for (let j = i + 1; j < s.length; j++)
      if (s[j] === "}" && s[j - 1] !== "\\") {
        end = j;
        break;
      }
    if (end < 0) break;
    out.push(s.slice(i + 1, end));
    i = end;
  }
  return out;
}

/** Every placeholder in `v` that is not ours, with where it is. */
function foreign(v: unknown, at = "", parent = ""): string[] {
  if (typeof v === "string")
    return placeholdersIn(v)
      .filter(p => !OURS.has(p))
      .map(p => `${at}: {${p}}`);
  if (Array.isArray(v)) return v.flatMap((x, i) => foreign(x, `${at}/${i}`, parent));
  if (typeof v !== "object" || v === null) return [];
  return Object.entries(v).flatMap(([k, x]) => {
    // A regular-expression matcher's pattern is compiled, never expanded (the TLS matcher
    // sni_regexp excepted: Caddy expands its pattern).
    if (k === "pattern" && parent !== "sni_regexp") return [];
    if (LITERAL_KEYS.has(k) || k === "load_pem") return [];
    // Map keys Caddy expands: header names, query names.
    const keyHits = ["set", "add", "query", "header"].includes(parent)
      ? placeholdersIn(k)
          .filter(p => !OURS.has(p))
          .map(p => `${at}/${k} (key): {${p}}`)
      : [];
    return [...keyHits, ...foreign(x, `${at}/${k}`, k)];
  });
}

describe("placeholdersIn (Caddy's replacer rule)", () => {
  it("finds unescaped placeholders only", () => {
    expect(placeholdersIn("a{env.HOME}b{x}")).toEqual(["env.HOME", "x"]);
    expect(placeholdersIn("\\{env.HOME\\}")).toEqual([]);
    expect(placeholdersIn("{unclosed")).toEqual([]);
    // A tenant's own backslash before a brace: escaping gives each brace its own.
    expect(placeholdersIn(escapePlaceholders("\\{env.HOME}"))).toEqual([]);
    expect(placeholdersIn(escapePlaceholders("}{file./etc/passwd}{"))).toEqual([]);
  });
  it("escapes reversibly (route-table keys are the unescaped hostnames)", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom("{", "}", "\\", "a") }), s => {
        expect(unescapePlaceholders(escapePlaceholders(s))).toBe(s);
        expect(placeholdersIn(escapePlaceholders(s))).toEqual([]);
      }),
    );
  });
});

/** Text a tenant might store, aimed at Caddy's replacer. */
const hostile = fc
  .array(
    fc.constantFrom(
      "{",
      "}",
      "\\",
      "env.HOME",
      "file./etc/passwd",
      "http.request.host",
      "{http.request.header.Cookie}",
      "a",
      "x-y",
      ".",
      "/",
      " ",
    ),
    { minLength: 1, maxLength: 8 },
  )
  .map(parts => parts.join(""));

const GW = "gateway.networking.k8s.io/v1";
const base = (listenerHostname: string): KubeObject[] =>
  [
    {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "default", labels: { "kubernetes.io/metadata.name": "default" } },
    },
    {
      apiVersion: GW,
      kind: "GatewayClass",
      metadata: { name: "kengine", generation: 1 },
      spec: { controllerName: "kengine.io/gateway-controller" },
    },
    {
      apiVersion: GW,
      kind: "Gateway",
      metadata: { name: "gw", namespace: "default", generation: 1 },
      spec: {
        gatewayClassName: "kengine",
        listeners: [
          { name: "http", port: 80, protocol: "HTTP" },
          { name: "named", port: 8080, protocol: "HTTP", hostname: listenerHostname },
        ],
      },
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "echo", namespace: "default" },
      spec: { ports: [{ name: "http", port: 8080, targetPort: 3000 }] },
    },
    {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: "echo-1",
        namespace: "default",
        labels: { "kubernetes.io/service-name": "echo" },
      },
      addressType: "IPv4",
      ports: [{ name: "http", port: 3000, protocol: "TCP" }],
      endpoints: [{ addresses: ["127.0.0.21"], conditions: { ready: true } }],
    },
  ] as unknown as KubeObject[];

const route = (t: readonly string[]): KubeObject =>
  ({
    apiVersion: GW,
    kind: "HTTPRoute",
    metadata: {
      name: "r",
      namespace: "default",
      generation: 1,
      creationTimestamp: "2026-01-01T00:00:00Z",
    },
    spec: {
      parentRefs: [{ name: "gw" }],
      hostnames: [t[0]],
      rules: [
        {
          matches: [
            {
              path: { type: "PathPrefix", value: `/${t[1]}` },
              headers: [{ name: "X-A", value: t[2] }],
              queryParams: [{ name: t[3], value: t[4] }],
            },
          ],
          filters: [
            {
              type: "RequestHeaderModifier",
              requestHeaderModifier: {
                set: [{ name: t[5], value: t[6] }],
                add: [{ name: "X-B", value: t[7] }],
                remove: [t[8]],
              },
            },
            {
              type: "ResponseHeaderModifier",
              responseHeaderModifier: { set: [{ name: "X-C", value: t[9] }] },
            },
            {
              type: "CORS",
              cors: {
                allowOrigins: ["https://www.foo.com"],
                allowMethods: [t[10]],
                allowHeaders: [t[11]],
                exposeHeaders: [t[12]],
              },
            },
            { type: "URLRewrite", urlRewrite: { hostname: t[13] } },
          ],
          backendRefs: [{ name: "echo", port: 8080 }],
        },
        {
          matches: [{ path: { type: "Exact", value: `/r/${t[14]}` } }],
          filters: [
            {
              type: "RequestRedirect",
              requestRedirect: {
                hostname: t[15],
                path: { type: "ReplaceFullPath", replaceFullPath: `/${t[16]}` },
              },
            },
          ],
        },
      ],
    },
  }) as unknown as KubeObject;

const telemetry = (t: readonly string[]): KubeObject[] =>
  [
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "collector", namespace: "default" },
      spec: { ports: [{ name: "otlp", port: 4318, targetPort: 4318 }] },
    },
    {
      apiVersion: "gateway.networking.x-k8s.io/v1alpha1",
      kind: "XTelemetryPolicy",
      metadata: {
        name: "t",
        namespace: "default",
        generation: 1,
        creationTimestamp: "2026-01-01T00:00:00Z",
      },
      spec: {
        targetRefs: [{ group: "gateway.networking.k8s.io", kind: "Gateway", name: "gw" }],
        tracing: {
          mode: "Enabled",
          spanName: t[17],
          attributes: [{ name: "a", sourceType: "Literal", literalValue: t[18] }],
          provider: { backendRef: { name: "collector", port: 4318 } },
        },
      },
    },
  ] as unknown as KubeObject[];

const flavourParameters = (flavor: string): KubeObject[] =>
  flavor === "Bundled"
    ? []
    : ([
        {
          apiVersion: "gateway.kengine.io/v1alpha1",
          kind: "KengineParameters",
          metadata: { name: "p", namespace: "default" },
          spec: { proxy: { flavor } },
        },
      ] as unknown as KubeObject[]);

describe("tenant text in fields Caddy expands", () => {
  it("renders no placeholder but the controller's own, whatever the text", () => {
    fc.assert(
      fc.property(
        fc.array(hostile, { minLength: 20, maxLength: 20 }),
        fc.constantFrom("Bundled", "Caddy", "Kengine"),
        (t, flavor) => {
          const objects = [
            ...base(t[19]!).map(o =>
              o.kind === "Gateway" && flavor !== "Bundled"
                ? ({
                    ...o,
                    spec: {
                      ...(o as unknown as { spec: object }).spec,
                      infrastructure: {
                        parametersRef: {
                          group: "gateway.kengine.io",
                          kind: "KengineParameters",
                          name: "p",
                        },
                      },
                    },
                  } as unknown as KubeObject)
                : o,
            ),
            ...flavourParameters(flavor),
            route(t),
            ...telemetry(t),
          ];
          const config = JSON.parse(renderGolden(objects).caddy) as unknown;
          expect(foreign(config)).toEqual([]);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("keeps a plain tenant text in place (the property is not vacuous)", () => {
    const t = Array.from({ length: 20 }, (_, i) => `v${i}`);
    t[6] = "{env.HOME}";
    t[17] = "{file./etc/passwd}";
    const config = renderGolden([...base("named.example.com"), route(t), ...telemetry(t)]).caddy;
    expect(config).toContain("\\\\{env.HOME\\\\}");
    expect(config).toContain("\\\\{file./etc/passwd\\\\}");
    expect(foreign(JSON.parse(config))).toEqual([]);
    // Unescaped, the same text would be found.
    expect(foreign({ set: { "X-A": ["{env.HOME}"] } })).toEqual(["/set/X-A/0: {env.HOME}"]);
  });
});
