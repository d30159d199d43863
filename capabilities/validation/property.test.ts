/**
 * Property-based test of every validator admission runs (fast-check): 10,000 random objects,
 * valid and malformed, hostile sizes included, as the API server would send them (JSON).
 * For each: the validator does not throw, answers the same twice (no state between
 * requests), stays within its problem budget, and every problem names a field of the object
 * in kubectl's path style (`spec.rules[0].matches[1].path.value`) whose parent exists in the
 * object. Objects built only from values the proxy runs must have no problem at all.
 */
import fc from "fast-check";
import { gatewayProblems } from "./gateway";
import { grpcRouteProblems } from "./grpcroute";
import { httpRouteProblems } from "./httproute";
import { l4RouteProblems } from "./l4route";
import { MAX_PROBLEMS } from "./budget";
import { backendTLSPolicyProblems } from "./backendtlspolicy";
import { gatewayClassProblems } from "./gatewayclass";
import { referenceGrantProblems } from "./referencegrant";
import { denialMessage } from "./message";
import { kengineParametersProblems } from "./parameters";
import { FieldProblem } from "./regex";
import { LOOPBACK_NAMES } from "./egress";
import { xbackendProblems } from "./xbackend";
import { CONTROLLER_NAME, snapshotOf } from "../snapshot";
import { translate } from "../translate";

/* ------------------------------------------------------------------ field paths */

type Segment = { readonly key: string } | { readonly index: number };

/** Splits `spec.rules[0].tls.options["a.b"]` into segments; undefined when not kubectl style. */
function parsePath(path: string): Segment[] | undefined {
  const re = /\.?([A-Za-z][A-Za-z0-9]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/y;
  const out: Segment[] = [];
  let at = 0;
  while (at < path.length) {
    re.lastIndex = at;
    const m = re.exec(path);
    if (!m || (at === 0 && path[0] === ".")) return undefined;
    if (m[1] !== undefined) out.push({ key: m[1] });
    else if (m[2] !== undefined) out.push({ index: Number(m[2]) });
    else out.push({ key: JSON.parse(m[3]) as string });
    at = re.lastIndex;
  }
  return out;
}

function step(v: unknown, s: Segment): { ok: boolean; value?: unknown } {
  if ("index" in s)
    return Array.isArray(v) && s.index < v.length ? { ok: true, value: v[s.index] } : { ok: false };
  if (typeof v === "object" && v !== null && !Array.isArray(v) && Object.hasOwn(v, s.key))
    return { ok: true, value: (v as Record<string, unknown>)[s.key] };
  return { ok: false };
}

/** Why a problem does not name a field of `obj` (its parent must exist), or undefined. */
function pathProblem(obj: unknown, p: FieldProblem): string | undefined {
  if (typeof p.path !== "string" || !p.path.startsWith("spec"))
    return `path ${JSON.stringify(p.path)} is not under spec`;
  const segs = parsePath(p.path);
  if (!segs) return `path ${JSON.stringify(p.path)} is not in kubectl's style`;
  let v: unknown = obj;
  for (const s of segs.slice(0, -1)) {
    const r = step(v, s);
    if (!r.ok) return `path ${p.path}: its parent is not in the object`;
    v = r.value;
  }
  if (typeof p.message !== "string" || p.message.length === 0) return `${p.path}: empty message`;
  return undefined;
}

/** Runs one validator on a JSON copy of `obj` (what admission receives) and checks the properties. */
function holds(validate: (o: never) => FieldProblem[], obj: unknown): void {
  // The generators build JSON values only (what admission receives), so no copy is needed.
  const json = (obj ?? null) as never;
  const first = validate(json);
  const again = validate(json);
  expect(again).toEqual(first);
  expect(first.length).toBeLessThanOrEqual(MAX_PROBLEMS + 1);
  const bad = first.map(p => pathProblem(json, p)).filter(x => x !== undefined);
  expect(bad).toEqual([]);
  if (first.length > 0) {
    const msg = denialMessage("Kind", "ns", "name", first);
    // Each problem's value is cut: the message stays readable whatever was sent.
    expect(msg.length).toBeLessThan(64 + first.length * 700);
  }
}

/* ------------------------------------------------------------------ generators */

/** Malformed leaves: any JSON value, sometimes in place of a well-formed one. */
const junk = fc.oneof(
  { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 10 },
  // Objects that cannot be turned into a string the usual way.
  {
    arbitrary: fc.constantFrom({ toString: 1, valueOf: 1 }, { toString: {} }, [
      { valueOf: 0, toString: 0 },
    ]),
    weight: 1,
  },
);
const or = <T>(a: fc.Arbitrary<T>, weight = 8) =>
  fc.oneof({ arbitrary: a, weight }, { arbitrary: junk as fc.Arbitrary<unknown>, weight: 1 });

/** v1.7 sessionPersistence, the pre-v1.7 shape, and junk in every field. */
const sessionPersistence = fc.oneof(
  fc.record(
    {
      type: or(fc.constantFrom("Cookie", "Header", "Other")),
      absoluteTimeout: or(fc.constantFrom("1h", "500ms", "0s", "x", "")),
      cookie: or(
        fc.record(
          {
            name: or(fc.constantFrom("s", "a b", "")),
            path: or(fc.constantFrom("/", "/app", "x", "/a;b")),
            lifetimeType: or(fc.constantFrom("Session", "Permanent", "Other")),
          },
          { requiredKeys: [] },
        ),
      ),
      header: or(fc.record({ name: or(fc.constantFrom("X-S", "x_y", "a b")) })),
      sessionName: or(fc.string()),
    },
    { requiredKeys: [] },
  ),
  junk,
);

/** Hostile values, built once: a 1 MB expression, huge arrays, deep nesting. */
const MB = "(a|b)*".repeat(1 << 18).slice(0, 1 << 20);
const manyMatches = Array.from({ length: 60_000 }, (_, i) => ({
  headers: [{ name: `X-${i}`, value: "v" }],
}));
const deep = (() => {
  let v: unknown = "x";
  for (let i = 0; i < 1_000; i++) v = { a: v };
  return v;
})();
const hostile = fc.constantFrom<unknown>(MB, manyMatches, deep, "x".repeat(100_000));

/** Regular expressions: RE2-valid, RE2-invalid, JavaScript-only syntax, random text. */
const regexes = fc.oneof(
  fc.constantFrom(
    "/api/v[0-9]+",
    "(?i)foo",
    "(?P<n>a)",
    "(?=x)",
    "(a)\\1",
    "a{1001}",
    "[z-a]",
    "\\p{Greek}",
    "\\p{Letter}",
    "(?<n>x)\\k<n>",
    "a++",
    "",
    "\\",
    "(".repeat(1200) + ")".repeat(1200),
  ),
  fc.string({ maxLength: 40 }),
  fc.stringMatching(/^[()[\]{}*+?|\\^$.a-z0-9:=!<>PpQE-]{0,30}$/),
);
const headerNames = fc.oneof(
  fc.constantFrom("X-Test", "x_y", "x.y", "X Test", "", "X:Y", "Ü", "X-*", "*"),
  fc.string({ maxLength: 20 }),
);
const headerValues = fc.oneof(
  fc.constantFrom("v", "a\r\nb", "\u0000", "{http.request.host}", "tab\tok", ""),
  fc.string({ maxLength: 20 }),
);
const stringMatch = (types: string[]) =>
  fc.record(
    {
      type: or(fc.constantFrom(...types, "Bogus")),
      name: or(headerNames),
      value: or(fc.oneof(regexes, headerValues)),
    },
    { requiredKeys: [] },
  );
const headerFilter = fc.record(
  {
    set: or(
      fc.array(fc.record({ name: or(headerNames), value: or(headerValues) }), { maxLength: 3 }),
    ),
    add: or(
      fc.array(fc.record({ name: or(headerNames), value: or(headerValues) }), { maxLength: 3 }),
    ),
    remove: or(fc.array(or(headerNames), { maxLength: 3 })),
  },
  { requiredKeys: [] },
);
const pathModifier = fc.record(
  {
    type: or(fc.constantFrom("ReplaceFullPath", "ReplacePrefixMatch", "Other")),
    replaceFullPath: or(
      fc.oneof(fc.constantFrom("/x", "x", "/a b", "/%zz", "/{a}"), fc.string({ maxLength: 10 })),
    ),
    replacePrefixMatch: or(
      fc.oneof(fc.constantFrom("/", "/p", "p?"), fc.string({ maxLength: 10 })),
    ),
  },
  { requiredKeys: [] },
);
const filter = fc.record(
  {
    type: or(
      fc.constantFrom(
        "RequestHeaderModifier",
        "ResponseHeaderModifier",
        "RequestRedirect",
        "URLRewrite",
        "RequestMirror",
        "CORS",
        "ExtensionRef",
        "ExternalAuth",
      ),
    ),
    requestHeaderModifier: or(headerFilter),
    responseHeaderModifier: or(headerFilter),
    requestRedirect: or(
      fc.record({ path: or(pathModifier), hostname: or(fc.string()) }, { requiredKeys: [] }),
    ),
    urlRewrite: or(
      fc.record({ path: or(pathModifier), hostname: or(fc.string()) }, { requiredKeys: [] }),
    ),
    extensionRef: or(fc.record({ group: fc.string(), kind: fc.string(), name: fc.string() })),
  },
  { requiredKeys: [] },
);
const backendRef = fc.record(
  {
    name: or(fc.string()),
    port: or(fc.integer()),
    weight: or(fc.integer({ min: 0, max: 1_000_000 })),
    filters: or(fc.array(filter, { maxLength: 2 })),
  },
  { requiredKeys: [] },
);
const httpRule = fc.record(
  {
    matches: or(
      fc.array(
        fc.record(
          {
            path: or(
              fc.record(
                {
                  type: or(fc.constantFrom("Exact", "PathPrefix", "RegularExpression", "Glob")),
                  value: or(regexes),
                },
                { requiredKeys: [] },
              ),
            ),
            headers: or(fc.array(stringMatch(["Exact", "RegularExpression"]), { maxLength: 3 })),
            queryParams: or(
              fc.array(stringMatch(["Exact", "RegularExpression"]), { maxLength: 3 }),
            ),
          },
          { requiredKeys: [] },
        ),
        { maxLength: 3 },
      ),
    ),
    filters: or(fc.array(filter, { maxLength: 3 })),
    backendRefs: or(fc.array(backendRef, { maxLength: 3 })),
    timeouts: or(
      fc.record(
        { request: or(fc.constantFrom("1s", "")), backendRequest: or(fc.constantFrom("1s", "")) },
        { requiredKeys: [] },
      ),
    ),
    retry: or(fc.constant({ attempts: 2 })),
    sessionPersistence: or(sessionPersistence),
  },
  { requiredKeys: [] },
);
/** A spec whose rules (or listeners, …) may be replaced by hostile or malformed values. */
const withRules = <T>(rule: fc.Arbitrary<T>, key = "rules", max = 4) =>
  fc.record({
    spec: fc.oneof(
      { arbitrary: fc.record({ [key]: fc.array(rule, { maxLength: max }) }), weight: 40 },
      { arbitrary: fc.record({ [key]: hostile }), weight: 1 },
      { arbitrary: fc.record({ [key]: junk }), weight: 3 },
      { arbitrary: junk, weight: 2 },
    ),
  });

const httpRoute = withRules(httpRule);
const grpcRoute = withRules(
  fc.record(
    {
      matches: or(
        fc.array(
          fc.record(
            {
              method: or(
                fc.record(
                  {
                    type: or(fc.constantFrom("Exact", "RegularExpression", "Other")),
                    service: or(regexes),
                    method: or(regexes),
                  },
                  { requiredKeys: [] },
                ),
              ),
              headers: or(fc.array(stringMatch(["Exact", "RegularExpression"]), { maxLength: 3 })),
            },
            { requiredKeys: [] },
          ),
          { maxLength: 3 },
        ),
      ),
      filters: or(fc.array(filter, { maxLength: 3 })),
      backendRefs: or(fc.array(backendRef, { maxLength: 3 })),
      sessionPersistence: or(sessionPersistence),
    },
    { requiredKeys: [] },
  ),
);
const gateway = withRules(
  fc.record(
    {
      name: or(fc.string()),
      port: or(fc.oneof(fc.constantFrom(80, 443, 2019, 19443, 19080), fc.integer())),
      protocol: or(fc.constantFrom("HTTP", "HTTPS", "TLS", "TCP", "UDP", "x/y")),
      tls: or(
        fc.record(
          {
            mode: or(fc.constantFrom("Terminate", "Passthrough")),
            options: or(fc.dictionary(fc.string(), fc.string(), { maxKeys: 3 })),
          },
          { requiredKeys: [] },
        ),
      ),
    },
    { requiredKeys: [] },
  ),
  "listeners",
  6,
);
const l4Route = withRules(
  fc.record({ backendRefs: or(fc.array(backendRef, { maxLength: 4 })) }, { requiredKeys: [] }),
);
const quantities = fc.oneof(
  fc.constantFrom("100m", "64Mi", "1", "1e3", "lots", "-1", "1 Gi", ""),
  fc.string({ maxLength: 8 }),
  fc.integer(),
);
const kengineParameters = fc.record({
  spec: fc.oneof(
    {
      arbitrary: fc.record(
        {
          proxy: or(
            fc.record(
              {
                kind: or(fc.constantFrom("Deployment", "DaemonSet", "StatefulSet")),
                replicas: or(fc.integer({ min: -5, max: 2000 })),
                image: or(
                  fc.oneof(
                    fc.constantFrom("caddy", "ghcr.io/x/kengine:1", "Bad Image", ""),
                    fc.string({ maxLength: 30 }),
                  ),
                ),
                command: or(fc.array(or(fc.string({ maxLength: 8 })), { maxLength: 3 })),
                resources: or(
                  fc.record(
                    {
                      requests: or(
                        fc.dictionary(fc.string({ maxLength: 10 }), quantities, { maxKeys: 3 }),
                      ),
                      limits: or(
                        fc.dictionary(fc.string({ maxLength: 10 }), quantities, { maxKeys: 3 }),
                      ),
                    },
                    { requiredKeys: [] },
                  ),
                ),
                nodeSelector: or(
                  fc.dictionary(fc.string({ maxLength: 20 }), or(fc.string({ maxLength: 70 })), {
                    maxKeys: 3,
                  }),
                ),
                tolerations: or(
                  fc.array(
                    or(
                      fc.record(
                        {
                          key: or(fc.string({ maxLength: 10 })),
                          operator: or(fc.constantFrom("Exists", "Equal", "In")),
                          value: or(fc.string({ maxLength: 5 })),
                          effect: or(fc.constantFrom("", "NoSchedule", "NoExecute", "Never")),
                          tolerationSeconds: or(fc.integer()),
                        },
                        { requiredKeys: [] },
                      ),
                    ),
                    { maxLength: 3 },
                  ),
                ),
                affinity: or(fc.dictionary(fc.string({ maxLength: 12 }), junk, { maxKeys: 3 })),
              },
              { requiredKeys: [] },
            ),
          ),
          service: or(
            fc.record(
              {
                type: or(fc.constantFrom("LoadBalancer", "NodePort", "ClusterIP", "ExternalName")),
                annotations: or(
                  fc.dictionary(fc.string({ maxLength: 20 }), or(fc.string()), { maxKeys: 3 }),
                ),
                loadBalancerClass: or(fc.string({ maxLength: 20 })),
                externalTrafficPolicy: or(fc.constantFrom("Cluster", "Local", "Other")),
              },
              { requiredKeys: [] },
            ),
          ),
        },
        { requiredKeys: [] },
      ),
      weight: 20,
    },
    { arbitrary: fc.record({ proxy: fc.record({ nodeSelector: hostile }) }), weight: 1 },
    { arbitrary: junk, weight: 1 },
  ),
});
const backendTLSPolicy = fc.record({
  spec: or(
    fc.record(
      {
        validation: or(
          fc.record(
            {
              hostname: or(fc.oneof(fc.constantFrom("a.b", "10.0.0.1"), fc.string())),
              wellKnownCACertificates: or(fc.constantFrom("System", "", "Other")),
              subjectAltNames: or(
                fc.oneof(
                  fc.array(
                    fc.oneof(
                      junk,
                      fc.record({
                        type: fc.constant("Hostname"),
                        hostname: or(fc.constant("a.b")),
                      }),
                      fc.record({ type: fc.constant("URI"), uri: or(fc.string()) }),
                    ),
                    { maxLength: 3 },
                  ),
                  hostile,
                ),
              ),
            },
            { requiredKeys: [] },
          ),
        ),
        options: or(fc.oneof(fc.dictionary(fc.string(), or(fc.string())), hostile)),
      },
      { requiredKeys: [] },
    ),
  ),
});
/** References as the API allows them, and malformed ones. */
const reference = (fields: readonly string[]) =>
  or(
    fc.record(Object.fromEntries(fields.map(f => [f, or(fc.string({ maxLength: 20 }))])), {
      requiredKeys: [],
    }),
  );
const gatewayClass = fc.record({
  spec: or(
    fc.record(
      {
        controllerName: or(fc.constant("kengine.io/gateway-controller")),
        parametersRef: reference(["group", "kind", "name", "namespace"]),
      },
      { requiredKeys: [] },
    ),
  ),
});
const referenceGrant = fc.record({
  spec: or(
    fc.record(
      {
        from: or(
          fc.oneof(fc.array(reference(["group", "kind", "namespace"]), { maxLength: 4 }), hostile),
        ),
        to: or(fc.oneof(fc.array(reference(["group", "kind", "name"]), { maxLength: 4 }), hostile)),
      },
      { requiredKeys: [] },
    ),
  ),
});

/* ------------------------------------------------------------------ valid by construction */

const token = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9-]{0,15}$/);
const visible = fc.stringMatching(/^[ -~]{0,20}$/);
const urlPath = fc.stringMatching(/^\/[A-Za-z0-9._~!$&'()*+,;=:@/-]{0,20}$/);
const goodRegex = fc.constantFrom(
  "/api/v[0-9]+",
  "(?i)foo",
  "^/a(?:b|c)*?$",
  "\\d{1,3}",
  "[[:alpha:]]+",
  "(?P<n>x)",
);
const validHTTPRoute = fc.record({
  spec: fc.record({
    rules: fc.array(
      fc.record({
        matches: fc.array(
          fc.record({
            path: fc.oneof(
              fc.record({ type: fc.constantFrom("Exact", "PathPrefix"), value: urlPath }),
              fc.record({ type: fc.constant("RegularExpression"), value: goodRegex }),
            ),
            headers: fc.array(fc.record({ name: token, value: visible }), { maxLength: 2 }),
            queryParams: fc.array(
              fc.record({ type: fc.constant("RegularExpression"), name: token, value: goodRegex }),
              { maxLength: 2 },
            ),
          }),
          { maxLength: 3 },
        ),
        filters: fc.array(
          fc.oneof(
            fc.record({
              type: fc.constant("RequestHeaderModifier"),
              requestHeaderModifier: fc.record({
                set: fc.array(fc.record({ name: token, value: visible }), { maxLength: 2 }),
                remove: fc.array(token, { maxLength: 2 }),
              }),
            }),
            fc.record({
              type: fc.constant("RequestRedirect"),
              requestRedirect: fc.record({
                path: fc.record({ type: fc.constant("ReplaceFullPath"), replaceFullPath: urlPath }),
              }),
            }),
          ),
          { maxLength: 1 },
        ),
        backendRefs: fc.array(
          fc.record({ name: token, port: fc.integer({ min: 1, max: 65535 }) }),
          { maxLength: 3 },
        ),
      }),
      { maxLength: 4 },
    ),
  }),
});
const validL4Route = fc.record({
  spec: fc.record({
    rules: fc.array(
      fc.record({
        backendRefs: fc.array(fc.record({ weight: fc.integer({ min: 0, max: 100 }) }), {
          maxLength: 4,
        }),
      }),
      { maxLength: 2 },
    ),
  }),
});

/* ------------------------------------------------------------------ the properties */

const runs: [string, (o: never) => FieldProblem[], fc.Arbitrary<unknown>, number][] = [
  ["HTTPRoute", o => httpRouteProblems(o), httpRoute, 2200],
  ["GRPCRoute", o => grpcRouteProblems(o), grpcRoute, 1500],
  ["Gateway / ListenerSet", o => gatewayProblems(o), gateway, 1000],
  ["TLSRoute / TCPRoute / UDPRoute", o => l4RouteProblems(o), l4Route, 1000],
  ["KengineParameters", o => kengineParametersProblems(o), kengineParameters, 1500],
  ["BackendTLSPolicy", o => backendTLSPolicyProblems(o), backendTLSPolicy, 500],
  ["GatewayClass", o => gatewayClassProblems(o), gatewayClass, 200],
  ["ReferenceGrant", o => referenceGrantProblems(o), referenceGrant, 200],
];

describe("validators on random objects (fast-check)", () => {
  it("cover 10,000 objects in all", () => {
    expect(runs.reduce((n, r) => n + r[3], 0) + 1000 + 500 + 400).toBe(10_000);
  });

  it.each(runs)(
    "%s: no throw, same answer twice, every problem names a field",
    (_, validate, arb, numRuns) => {
      fc.assert(
        fc.property(arb, obj => {
          holds(validate, obj);
        }),
        { numRuns },
      );
    },
    120_000,
  );

  it("HTTPRoutes built from values the proxy runs have no problem", () => {
    fc.assert(
      fc.property(validHTTPRoute, r => {
        expect(httpRouteProblems(r as never)).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it("GatewayClasses and ReferenceGrants of the API's shape are never refused", () => {
    const str = fc.string({ maxLength: 20 });
    fc.assert(
      fc.property(
        fc.record(
          { group: str, kind: str, name: str, namespace: str },
          { requiredKeys: ["group", "kind", "name"] },
        ),
        ref => {
          expect(gatewayClassProblems({ spec: { parametersRef: ref } })).toEqual([]);
        },
      ),
      { numRuns: 200 },
    );
    fc.assert(
      fc.property(
        fc.array(fc.record({ group: str, kind: str, namespace: str }), { maxLength: 16 }),
        fc.array(
          fc.record({ group: str, kind: str, name: str }, { requiredKeys: ["group", "kind"] }),
          {
            maxLength: 16,
          },
        ),
        (from, to) => {
          expect(referenceGrantProblems({ spec: { from, to } })).toEqual([]);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("layer-4 routes with weights up to the limit have no problem", () => {
    fc.assert(
      fc.property(validL4Route, r => {
        expect(l4RouteProblems(r)).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });
});

/* ------------------------------------------------------------------ egress: hostile hostnames */

/** inet_aton (glibc): 1 to 4 parts, decimal, octal (leading 0) or 0x-hex; the last fills the rest. */
function inetAton(name: string): number | undefined {
  const parts = name.split(".");
  if (parts.length > 4) return undefined;
  const values: number[] = [];
  for (const p of parts) {
    let v: number;
    if (/^0x[0-9a-f]*$/i.test(p)) v = p.length === 2 ? 0 : parseInt(p.slice(2), 16);
    else if (/^0[0-7]*$/.test(p)) v = parseInt(p, 8);
    else if (/^[1-9][0-9]*$/.test(p)) v = parseInt(p, 10);
    else return undefined;
    values.push(v);
  }
  const last = values.pop()!;
  if (values.some(v => v > 255) || last >= 2 ** (8 * (4 - values.length))) return undefined;
  return values.reduce((n, v, i) => n + v * 2 ** (8 * (3 - i)), 0) + last;
}

/** A label the XBackend CRD's pattern allows. */
const dnsLabel = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?$/);
/** One number as C spells it: decimal, octal or hexadecimal. */
const cNumber = (max: number): fc.Arbitrary<string> =>
  fc
    .tuple(fc.integer({ min: 0, max }), fc.constantFrom("dec", "oct", "hex"))
    .map(([n, base]) =>
      base === "dec" ? String(n) : base === "oct" ? `0${n.toString(8)}` : `0x${n.toString(16)}`,
    );
/** Every spelling the CRD pattern allows of a name that is loopback or an IPv4 address. */
const hostileName = fc.oneof(
  fc.constantFrom(...LOOPBACK_NAMES),
  fc.array(dnsLabel, { minLength: 1, maxLength: 3 }).map(ls => [...ls, "localhost"].join(".")),
  // 127.0.0.1 and the rest of 127/8 (and 0/8, the unspecified network) in 1 to 4 parts
  fc.constantFrom(127, 0).chain(first =>
    fc.oneof(
      fc.integer({ min: 0, max: 2 ** 24 - 1 }).map(n => String(first * 2 ** 24 + n)),
      fc.integer({ min: 0, max: 2 ** 24 - 1 }).map(n => `0x${(first * 2 ** 24 + n).toString(16)}`),
      fc.tuple(cNumber(first), cNumber(2 ** 24 - 1)).map(p => p.join(".")),
      fc.tuple(cNumber(first), cNumber(255), cNumber(65535)).map(p => p.join(".")),
      fc.tuple(cNumber(first), cNumber(255), cNumber(255), cNumber(255)).map(p => p.join(".")),
    ),
  ),
  // 169.254.169.254 (cloud metadata) and any address in dotted C spellings
  fc.tuple(cNumber(255), cNumber(255), cNumber(255), cNumber(255)).map(p => p.join(".")),
);
/** The same names as a cluster without the CRD's rules may store them: any case, trailing dots. */
const anyCase = (name: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc
    .tuple(name, fc.array(fc.boolean(), { maxLength: 64 }), fc.integer({ min: 0, max: 2 }))
    .map(
      ([n, upper, dots]) =>
        [...n].map((ch, i) => (upper[i] ? ch.toUpperCase() : ch)).join("") + ".".repeat(dots),
    );
/** Ordinary DNS names (a few of which end in a numeric label by chance). */
const dnsName = fc.array(dnsLabel, { minLength: 1, maxLength: 4 }).map(ls => ls.join("."));

/** A class that allows external hostnames (Bundled), a Gateway and a route to XBackend `x`. */
function egressSnapshot(hostname: string) {
  const objects = [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "t" } },
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "GatewayClass",
      metadata: { name: "c" },
      spec: {
        controllerName: CONTROLLER_NAME,
        parametersRef: {
          group: "gateway.kengine.io",
          kind: "KengineParameters",
          name: "p",
          namespace: "t",
        },
      },
    },
    {
      apiVersion: "gateway.kengine.io/v1alpha1",
      kind: "KengineParameters",
      metadata: { name: "p", namespace: "t" },
      spec: { egress: { externalHostnames: "Allowed" } },
    },
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "Gateway",
      metadata: { name: "gw", namespace: "t" },
      spec: { gatewayClassName: "c", listeners: [{ name: "http", port: 80, protocol: "HTTP" }] },
    },
    {
      apiVersion: "gateway.networking.x-k8s.io/v1alpha1",
      kind: "XBackend",
      metadata: { name: "x", namespace: "t" },
      spec: { type: "ExternalHostname", externalHostname: { hostname }, port: { number: 2019 } },
    },
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: { name: "r", namespace: "t" },
      spec: {
        parentRefs: [{ name: "gw" }],
        rules: [
          {
            filters: [
              {
                type: "RequestMirror",
                requestMirror: {
                  backendRef: { group: "gateway.networking.x-k8s.io", kind: "XBackend", name: "x" },
                },
              },
            ],
            backendRefs: [{ group: "gateway.networking.x-k8s.io", kind: "XBackend", name: "x" }],
          },
        ],
      },
    },
  ];
  return snapshotOf(objects as never);
}

/** Whether admission refuses the XBackend; whether translation dials the name (and how). */
function verdicts(hostname: string): { admission: boolean; dialled: boolean; guarded: boolean } {
  const xb = egressSnapshot(hostname).objects.XBackend.get("t/x")!;
  const admission = xbackendProblems(xb).length > 0;
  const result = translate(egressSnapshot(hostname));
  const entries = result.gateways[0]?.httpServers[0]?.listeners[0]?.routes ?? [];
  let dialled = false;
  let guarded = true;
  for (const e of entries) {
    const targets = [
      ...(e.action.type === "forward" ? e.action.backends : []),
      ...(e.mirrors ?? []).map(m => ({ ...m, type: "service" as const })),
    ];
    for (const t of targets)
      if (t.type === "service" && t.endpoints.some(ep => ep.address === hostname)) {
        dialled = true;
        guarded &&= t.egressGuard !== undefined;
      }
  }
  const resolved = result.statuses.routes[0]?.parents[0]?.conditions.find(
    c => c.type === "ResolvedRefs",
  );
  // The route says what translation did.
  expect(resolved?.status).toBe(dialled ? "True" : "False");
  return { admission, dialled, guarded };
}

describe("egress: hostile hostnames (fast-check)", () => {
  it("every loopback or numeric spelling is refused by admission and never dialled", () => {
    fc.assert(
      fc.property(fc.oneof(hostileName, anyCase(hostileName)), h => {
        expect(verdicts(h)).toEqual({ admission: true, dialled: false, guarded: true });
      }),
      { numRuns: 400 },
    );
  });

  it("admission and translation agree on any DNS name; a dialled name is always guarded", () => {
    fc.assert(
      fc.property(fc.oneof(dnsName, anyCase(dnsName)), h => {
        const v = verdicts(h);
        expect(v.dialled).toBe(!v.admission);
        expect(v.guarded).toBe(true);
        // What a C resolver reads as an address is refused.
        if (inetAton(h.toLowerCase().replace(/\.+$/, "")) !== undefined)
          expect(v.admission).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it("the oracle reads the classic spellings of 127.0.0.1", () => {
    for (const h of ["2130706433", "0x7f000001", "127.1", "0177.0.0.1", "0x7f.0.0.1", "127.0.1"])
      expect(inetAton(h)).toBe(0x7f000001);
    expect(inetAton("example.com")).toBeUndefined();
  });
});
