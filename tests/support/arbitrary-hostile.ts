/**
 * fast-check arbitraries for one tenant object at a time, built from what the Gateway API CRDs
 * let a tenant store (their patterns and lengths, not a list of friendly values): HTTPRoutes
 * with every match type, filter and string field, GRPCRoutes, ListenerSets with TLS
 * listeners whose Secrets hold good, mismatched or broken key pairs. Each is placed next to a
 * healthy route on a shared Gateway (`sharedGateway`); tests/integration/property-caddy.test.ts
 * loads the result into real Caddy.
 */
import fc from "fast-check";
import { generateKeyPairSync } from "node:crypto";
import { KubeObject } from "../../capabilities/snapshot";
import { createAuthority, generateKeyPair } from "../../capabilities/pki/pki";

const GW = "gateway.networking.k8s.io/v1";

/* ------------------------------------------------------------------ CRD alphabets */

const DIGITS = "0123456789";
const LOWER = "abcdefghijklmnopqrstuvwxyz";
const UPPER = LOWER.toUpperCase();
/** HTTPHeaderName (also query parameter names): RFC 7230 token characters. */
const TOKEN = `!#$%&'*+-.^_\`|~${DIGITS}${LOWER}${UPPER}`;
/** Exact / PathPrefix path values (the CRD's CEL rule): RFC 3986 path characters. */
const PATH = `-/._~!$&'()*+,;=:@${DIGITS}${LOWER}${UPPER}`;

const from = (alphabet: string, min: number, max: number): fc.Arbitrary<string> =>
  fc.string({ unit: fc.constantFrom(...alphabet), minLength: min, maxLength: max });

/** Placeholder-like and escape-like pieces every free-text field is seeded with. */
const TRICKY = [
  "{",
  "}",
  "{http.request.host}",
  "\\{",
  "\\}",
  "\\",
  '"',
  "'",
  "{env.HOME}",
  "{ab}",
  "x{ab}",
  "$",
  "%",
  "%7B",
  " ",
  "\t",
  "é",
  "😀",
  "\u2028",
];

/** Free text (header values, which the CRD leaves unconstrained up to 4096 characters). */
const text = fc
  .array(fc.oneof(fc.constantFrom(...TRICKY), fc.string({ maxLength: 4 })), {
    minLength: 1,
    maxLength: 5,
  })
  .map(parts => parts.join(""));

/** Regular expressions: RE2 pieces (valid or not: admission judges) and tricky text. */
const REGEX_PIECES = [
  "x{ab}",
  "[0-9]{1,3}",
  "\\{",
  "\\}",
  "{http.request.host}",
  "(?i)",
  "\\Q{}\\E",
  ".*",
  "\\d+",
  "a|b",
  "[{}]",
  "(a)",
  "\\.",
  "/",
  '"',
  "\\\\",
  "é",
  "{",
  "}",
  "(?P<n>a)",
  "\\pL",
];
const regex = fc
  .array(fc.constantFrom(...REGEX_PIECES), { minLength: 1, maxLength: 4 })
  .map(p => p.join(""));

const token = from(TOKEN, 1, 12);
const urlPath = from(PATH, 0, 12).map(p => `/${p}`);
const label = from(`${LOWER}${DIGITS}`, 1, 6);
const hostname = fc
  .tuple(fc.boolean(), fc.array(label, { minLength: 1, maxLength: 3 }))
  .map(([wild, labels]) => `${wild ? "*." : ""}${labels.join(".")}.tenant.test`);

/* ------------------------------------------------------------------ HTTPRoute */

const stringMatch = (name: fc.Arbitrary<string>) =>
  fc.oneof(
    fc.record({ type: fc.constant("Exact"), name, value: text }),
    fc.record({ type: fc.constant("RegularExpression"), name, value: regex }),
  );

const httpMatch = fc.record(
  {
    path: fc.oneof(
      fc.record({ type: fc.constant("Exact"), value: urlPath }),
      fc.record({ type: fc.constant("PathPrefix"), value: urlPath }),
      fc.record({ type: fc.constant("RegularExpression"), value: regex.map(r => `/${r}`) }),
    ),
    headers: fc.uniqueArray(stringMatch(token), {
      maxLength: 2,
      selector: h => h.name.toLowerCase(),
    }),
    queryParams: fc.uniqueArray(stringMatch(token), { maxLength: 3, selector: q => q.name }),
    method: fc.constantFrom("GET", "POST", "CONNECT", "TRACE"),
  },
  { requiredKeys: [] },
);

const headerOps = fc.record(
  {
    set: fc.uniqueArray(fc.record({ name: token, value: text }), {
      maxLength: 2,
      selector: h => h.name.toLowerCase(),
    }),
    add: fc.array(fc.record({ name: token, value: text }), { maxLength: 2 }),
    remove: fc.uniqueArray(token, { maxLength: 2 }),
  },
  { requiredKeys: [] },
);

const pathModifier = fc.oneof(
  fc.record({ type: fc.constant("ReplaceFullPath"), replaceFullPath: urlPath }),
  fc.record({ type: fc.constant("ReplacePrefixMatch"), replacePrefixMatch: urlPath }),
);

const httpFilter = fc.oneof(
  headerOps.map(h => ({ type: "RequestHeaderModifier", requestHeaderModifier: h })),
  headerOps.map(h => ({ type: "ResponseHeaderModifier", responseHeaderModifier: h })),
  fc
    .record(
      {
        scheme: fc.constantFrom("http", "https"),
        hostname: hostname.filter(h => !h.startsWith("*")),
        port: fc.integer({ min: 1, max: 65535 }),
        statusCode: fc.constantFrom(301, 302),
        path: pathModifier,
      },
      { requiredKeys: [] },
    )
    .map(r => ({ type: "RequestRedirect", requestRedirect: r })),
  fc
    .record(
      { hostname: hostname.filter(h => !h.startsWith("*")), path: pathModifier },
      { requiredKeys: [] },
    )
    .map(r => ({ type: "URLRewrite", urlRewrite: r })),
  fc
    .record(
      {
        allowOrigins: fc.array(
          fc.oneof(
            fc.constant("*"),
            hostname.map(h => `https://${h}`),
            label.map(l => `http://${l}.test:8080`),
          ),
          { minLength: 1, maxLength: 2 },
        ),
        allowMethods: fc.uniqueArray(fc.constantFrom("GET", "PUT", "*"), { maxLength: 2 }),
        allowHeaders: fc.uniqueArray(token, { maxLength: 2 }),
        exposeHeaders: fc.uniqueArray(token, { maxLength: 2 }),
        maxAge: fc.integer({ min: 1, max: 86400 }),
      },
      { requiredKeys: ["allowOrigins"] },
    )
    .map(c => ({ type: "CORS", cors: c })),
);

const backendRefs = fc.array(
  fc.record(
    {
      name: fc.constantFrom("echo", "missing"),
      port: fc.constant(8080),
      weight: fc.integer({ min: 0, max: 3 }),
      filters: fc.uniqueArray(
        fc.oneof(
          headerOps.map(h => ({ type: "RequestHeaderModifier", requestHeaderModifier: h })),
          headerOps.map(h => ({ type: "ResponseHeaderModifier", responseHeaderModifier: h })),
        ),
        { maxLength: 2, selector: f => f.type },
      ),
    },
    { requiredKeys: ["name", "port"] },
  ),
  { maxLength: 2 },
);

const httpRoute = fc
  .record({
    hostnames: fc.uniqueArray(hostname, { maxLength: 2 }),
    rules: fc.array(
      fc.record({
        matches: fc.array(httpMatch, { maxLength: 2 }),
        filters: fc.uniqueArray(httpFilter, { maxLength: 2, selector: f => f.type }),
        backendRefs,
      }),
      { minLength: 1, maxLength: 2 },
    ),
  })
  .map(
    (spec): KubeObject =>
      ({
        apiVersion: GW,
        kind: "HTTPRoute",
        metadata: tenantMeta("hostile"),
        spec: {
          parentRefs: [{ name: "gw", namespace: "default" }],
          ...(spec.hostnames.length > 0 && { hostnames: spec.hostnames }),
          rules: spec.rules,
        },
      }) as KubeObject,
  );

/* ------------------------------------------------------------------ GRPCRoute */

const grpcService = fc
  .array(from(`${LOWER}_`, 1, 6), { minLength: 1, maxLength: 3 })
  .map(p => p.join("."));
const grpcMethod = fc
  .tuple(from(`${UPPER}_`, 1, 1), from(`${LOWER}${UPPER}_${DIGITS}`, 0, 8))
  .map(([a, b]) => a + b);

const grpcRoute = fc
  .array(
    fc.record({
      matches: fc.array(
        fc.record(
          {
            method: fc.oneof(
              fc.record(
                { type: fc.constant("Exact"), service: grpcService, method: grpcMethod },
                { requiredKeys: ["type"] },
              ),
              fc.record(
                { type: fc.constant("RegularExpression"), service: regex, method: regex },
                { requiredKeys: ["type"] },
              ),
            ),
            headers: fc.uniqueArray(stringMatch(token), {
              maxLength: 2,
              selector: h => h.name.toLowerCase(),
            }),
          },
          { requiredKeys: [] },
        ),
        { maxLength: 2 },
      ),
      filters: fc.uniqueArray(
        headerOps.map(h => ({ type: "RequestHeaderModifier", requestHeaderModifier: h })),
        { maxLength: 1 },
      ),
      backendRefs,
    }),
    { minLength: 1, maxLength: 2 },
  )
  .map(
    (rules): KubeObject =>
      ({
        apiVersion: GW,
        kind: "GRPCRoute",
        metadata: tenantMeta("hostile"),
        spec: { parentRefs: [{ name: "gw", namespace: "default" }], rules },
      }) as KubeObject,
  );

/* ------------------------------------------------------------------ ListenerSet with TLS */

const b64 = (s: string): string => Buffer.from(s).toString("base64");

/** Two real P-256 pairs made once per test file (pure node:crypto). */
const pairs = [0, 1].map(i => {
  const r = createAuthority({
    commonName: `tenant-${i}.tenant.test`,
    keys: generateKeyPair(),
    notBefore: new Date("2026-01-01T00:00:00Z"),
    lifetimeDays: 3650,
  });
  if (!r.ok) throw new Error(r.error);
  return { crt: r.value.certificatePem, key: r.value.privateKey.reveal() };
});
const k1 = generateKeyPairSync("ec", { namedCurve: "secp256k1" })
  .privateKey.export({ format: "pem", type: "pkcs8" })
  .toString();

/** What a tenant's TLS Secret may hold: a good pair, and every way of getting it wrong. */
export const SECRET_CONTENTS: Readonly<Record<string, { crt: string; key: string }>> = {
  good: pairs[0],
  mismatched: { crt: pairs[0].crt, key: pairs[1].key },
  swapped: { crt: pairs[0].key, key: pairs[0].crt },
  "chain-wrong-leaf": { crt: pairs[1].crt + pairs[0].crt, key: pairs[0].key },
  "unsupported-curve": { crt: pairs[0].crt, key: k1 },
  garbage: { crt: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", key: "x" },
};

const listenerSet = fc
  .record({
    secret: fc.constantFrom(...Object.keys(SECRET_CONTENTS)),
    port: fc.constantFrom(8443, 9443),
    hostname: fc.option(hostname, { nil: undefined }),
    http: fc.boolean(),
  })
  .map(tenantListenerSet);

/** A tenant's ListenerSet with an HTTPS listener (and an HTTP one) and its TLS Secret. */
export function tenantListenerSet(o: {
  readonly secret: string;
  readonly port: number;
  readonly hostname?: string;
  readonly http: boolean;
}): KubeObject[] {
  const { secret, port, hostname: h, http } = o;
  return [
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: `tls-${secret}`, namespace: "tenant" },
      type: "kubernetes.io/tls",
      data: {
        "tls.crt": b64(SECRET_CONTENTS[secret].crt),
        "tls.key": b64(SECRET_CONTENTS[secret].key),
      },
    } as KubeObject,
    {
      apiVersion: GW,
      kind: "ListenerSet",
      metadata: tenantMeta("hostile"),
      spec: {
        parentRef: { name: "gw", namespace: "default" },
        listeners: [
          {
            name: "https",
            port,
            protocol: "HTTPS",
            ...(h !== undefined && { hostname: h }),
            tls: { certificateRefs: [{ name: `tls-${secret}` }] },
          },
          ...(http ? [{ name: "http", port: 8080, protocol: "HTTP" }] : []),
        ],
      },
    } as KubeObject,
  ];
}

export function tenantMeta(name: string) {
  return {
    name,
    namespace: "tenant",
    generation: 1,
    creationTimestamp: "2026-01-02T00:00:00Z",
  };
}

/** One hostile tenant object (a ListenerSet comes with its Secret). */
export const arbitraryHostile: fc.Arbitrary<KubeObject[]> = fc.oneof(
  { weight: 3, arbitrary: httpRoute.map(r => [r]) },
  { weight: 1, arbitrary: grpcRoute.map(r => [r]) },
  { weight: 1, arbitrary: listenerSet },
);

/* ------------------------------------------------------------------ the shared Gateway */

/** Path of the healthy route (Exact): it must answer through every config. */
export const HEALTHY_PATH = "/healthy";
export const HEALTHY_HOST = "healthy.example";

/**
 * The platform team's shared Gateway (HTTP on 80 allowing routes and ListenerSets from every
 * namespace, HTTPS on 443 for the healthy host), its echo Service (an endpoint on loopback at
 * `echoPort`) and the healthy route; the hostile objects are added to these.
 */
export function sharedGateway(echoPort: number): KubeObject[] {
  return [
    ns("default"),
    ns("tenant"),
    {
      apiVersion: GW,
      kind: "GatewayClass",
      metadata: { name: "kengine", generation: 1 },
      spec: { controllerName: "kengine.io/gateway-controller" },
    } as KubeObject,
    {
      apiVersion: GW,
      kind: "Gateway",
      metadata: { name: "gw", namespace: "default", generation: 1 },
      spec: {
        gatewayClassName: "kengine",
        allowedListeners: { namespaces: { from: "All" } },
        listeners: [
          {
            name: "http",
            port: 80,
            protocol: "HTTP",
            allowedRoutes: { namespaces: { from: "All" } },
          },
          {
            name: "https",
            port: 443,
            protocol: "HTTPS",
            hostname: HEALTHY_HOST,
            tls: { certificateRefs: [{ name: "healthy-cert" }] },
          },
        ],
      },
    } as KubeObject,
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "healthy-cert", namespace: "default" },
      type: "kubernetes.io/tls",
      data: { "tls.crt": b64(SECRET_CONTENTS.good.crt), "tls.key": b64(SECRET_CONTENTS.good.key) },
    } as KubeObject,
    ...["default", "tenant"].flatMap(n => echo(n, echoPort)),
    {
      apiVersion: GW,
      kind: "HTTPRoute",
      metadata: {
        name: "healthy",
        namespace: "default",
        generation: 1,
        creationTimestamp: "2026-01-01T00:00:00Z",
      },
      spec: {
        parentRefs: [{ name: "gw" }],
        hostnames: [HEALTHY_HOST],
        rules: [
          {
            matches: [{ path: { type: "Exact", value: HEALTHY_PATH } }],
            backendRefs: [{ name: "echo", port: 8080 }],
          },
        ],
      },
    } as KubeObject,
  ];
}

/** Namespace `name` with its name label (as the API server sets it). */
export const ns = (name: string): KubeObject => ({
  apiVersion: "v1",
  kind: "Namespace",
  metadata: { name, labels: { "kubernetes.io/metadata.name": name } },
});

function echo(namespace: string, port: number): KubeObject[] {
  return loopbackService(namespace, "echo", 8080, port);
}

/** Service `name` (port `servicePort`) with one ready endpoint, 127.0.0.1:`port` (slice `<name>-1`). */
export function loopbackService(
  namespace: string,
  name: string,
  servicePort: number,
  port: number,
): KubeObject[] {
  return [
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name, namespace },
      spec: { ports: [{ name: "http", port: servicePort, targetPort: port }] },
    } as KubeObject,
    {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { name: `${name}-1`, namespace, labels: { "kubernetes.io/service-name": name } },
      addressType: "IPv4",
      ports: [{ name: "http", port, protocol: "TCP" }],
      endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }],
    } as KubeObject,
  ];
}
