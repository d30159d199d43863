import fc from "fast-check";
import { ATTRIBUTE_PLACEHOLDERS, readTelemetryPolicy, telemetryPolicyProblems } from "./telemetry";

const policy = (tracing: Record<string, unknown>) => ({
  spec: {
    targetRefs: [{ group: "gateway.networking.k8s.io", kind: "Gateway", name: "gw" }],
    tracing,
  },
});
const enabled = (more: Record<string, unknown> = {}) =>
  policy({ mode: "Enabled", provider: { backendRef: { name: "collector", port: 4318 } }, ...more });
const paths = (tracing: Record<string, unknown>) =>
  telemetryPolicyProblems(policy(tracing)).map(p => p.path);

/** What Caddy's replacer makes of a value with only escaped braces: `\{` → `{`, `\}` → `}`. */
const unescape = (v: string) => v.replace(/\\([{}])/g, "$1");

describe("readTelemetryPolicy", () => {
  it("a literal attribute comes back unchanged after Caddy's unescaping, with no placeholder left", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), text => {
        const r = readTelemetryPolicy(
          enabled({ attributes: [{ name: "a", sourceType: "Literal", literalValue: text }] }),
          "default",
        );
        expect(r.ok).toBe(true);
        if (!r.ok) return;
        const value = r.value.attributes[0].value;
        expect(unescape(value)).toBe(text);
        // Every brace is escaped: the replacer finds no placeholder to expand.
        expect(/(^|[^\\])[{}]/.test(value)).toBe(false);
      }),
    );
  });

  it("a header attribute names the request header; a semantic-convention key its placeholder", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,20}$/),
        fc.constantFrom(...Object.keys(ATTRIBUTE_PLACEHOLDERS)),
        (header, key) => {
          const r = readTelemetryPolicy(
            enabled({
              attributes: [
                { name: "h", sourceType: "Header", headerName: header },
                { name: "k", sourceType: "Attribute", attributeKey: key },
              ],
            }),
            "default",
          );
          expect(r).toEqual({
            ok: true,
            value: {
              enabled: true,
              attributes: [
                { name: "h", value: `{http.request.header.${header}}` },
                { name: "k", value: ATTRIBUTE_PLACEHOLDERS[key] },
              ],
              collector: { namespace: "default", name: "collector", port: 4318 },
            },
          });
        },
      ),
    );
  });

  it("a sampling rate is refused unless it is 100%, whatever the fraction's terms", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 1, max: 1000 }), (n, d) => {
        const problems = paths({ samplingRate: { numerator: n, denominator: d } });
        expect(problems.includes("spec.tracing.samplingRate")).toBe(n !== d);
        const parent = paths({
          parentBasedSampling: { mode: "Enabled", samplingRate: { numerator: n, denominator: d } },
        });
        expect(parent.includes("spec.tracing.parentBasedSampling.samplingRate")).toBe(n !== d);
      }),
    );
  });

  it("refuses what only the proxy's environment can set, with field and reason", () => {
    const r = readTelemetryPolicy(
      enabled({
        serviceName: "svc",
        parentBasedSampling: { mode: "Disabled" },
        provider: {
          backendRef: { name: "collector" },
          headers: [{ name: "authorization", value: "x" }],
        },
      }),
      "default",
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.map(p => p.path).sort()).toEqual([
      "spec.tracing.parentBasedSampling.mode",
      "spec.tracing.provider.headers",
      "spec.tracing.serviceName",
    ]);
    expect(r.error.find(p => p.path === "spec.tracing.serviceName")?.message).toMatch(
      /OTEL_SERVICE_NAME/,
    );
  });

  it("provider: required when Enabled, refused otherwise, a core Service only", () => {
    expect(paths({ mode: "Enabled" })).toEqual(["spec.tracing.provider"]);
    expect(paths({ mode: "Disabled", provider: { backendRef: { name: "c" } } })).toEqual([
      "spec.tracing.provider",
    ]);
    expect(
      paths({
        mode: "Enabled",
        provider: { backendRef: { group: "x.io", kind: "Thing", name: "c" } },
      }),
    ).toEqual(["spec.tracing.provider.backendRef"]);
  });

  it("unknown attribute keys and duplicate names are refused; no tracing block is off", () => {
    expect(
      paths({
        mode: "Enabled",
        provider: { backendRef: { name: "c" } },
        attributes: [
          { name: "a", sourceType: "Attribute", attributeKey: "http.response.body.size" },
          { name: "a", sourceType: "Literal", literalValue: "x" },
        ],
      }),
    ).toEqual(["spec.tracing.attributes[0].attributeKey", "spec.tracing.attributes[1].name"]);
    expect(readTelemetryPolicy({ spec: { targetRefs: [] } }, "ns")).toEqual({
      ok: true,
      value: { enabled: false, attributes: [] },
    });
  });
});
