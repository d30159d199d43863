/**
 * fast-check arbitraries for whole, valid snapshots (what the API server would store and the
 * admission webhook would accept): Gateways with HTTP/HTTPS listeners, HTTPRoutes with random
 * matches, filters, backendRefs, weights, timeouts and retries, Services with and without
 * ready endpoints. Used by the translator's property tests (pure) and by the real-Caddy
 * sample (integration).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { KubeObject } from "../../capabilities/snapshot";
import { parseSnapshotYAML } from "../../hack/translate";

const GW = "gateway.networking.k8s.io/v1";

/** The certificate Secret of the https golden (a real key pair, reused as is). */
const certSecret: KubeObject = (() => {
  const objs = parseSnapshotYAML(
    readFileSync(join(__dirname, "..", "golden", "https.in.yaml"), "utf8"),
  );
  const s = objs.find(o => o.kind === "Secret" && o.metadata.name === "cert");
  if (!s) throw new Error("tests/golden/https.in.yaml: Secret default/cert not found");
  return s;
})();

const hostnames = ["a.example.com", "*.example.com", "b.test", "*.test", "x.y.example.com"];
const paths = ["/", "/a", "/a/b", "/api", "/api/v1", "/x-y"];
const regexes = ["/re/[a-z]+", "/v[0-9]+/.*", "/(foo|bar)"];
const headerNames = ["X-A", "X-B", "X-Version", "Accept"];
const values = ["1", "two", "a b", "v{1}", "%20"];
const services = ["a", "b", "c"];
const methods = ["GET", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"];

const header = fc.record({
  name: fc.constantFrom(...headerNames),
  value: fc.constantFrom(...values),
});
const headerFilter = fc.record(
  {
    set: fc.uniqueArray(header, { maxLength: 2, selector: h => h.name.toLowerCase() }),
    add: fc.array(header, { maxLength: 2 }),
    remove: fc.uniqueArray(fc.constantFrom(...headerNames), { maxLength: 2 }),
  },
  { requiredKeys: [] },
);

const match = fc.record(
  {
    path: fc.oneof(
      fc.record({ type: fc.constant("Exact"), value: fc.constantFrom(...paths) }),
      fc.record({ type: fc.constant("PathPrefix"), value: fc.constantFrom(...paths) }),
      fc.record({ type: fc.constant("RegularExpression"), value: fc.constantFrom(...regexes) }),
    ),
    headers: fc.uniqueArray(
      fc.record({
        type: fc.constantFrom("Exact", "RegularExpression"),
        name: fc.constantFrom(...headerNames),
        value: fc.constantFrom("1", "v[0-9]"),
      }),
      { maxLength: 2, selector: h => h.name.toLowerCase() },
    ),
    queryParams: fc.uniqueArray(
      fc.record({
        type: fc.constantFrom("Exact", "RegularExpression"),
        name: fc.constantFrom("q", "page"),
        value: fc.constantFrom("1", "[0-9]+"),
      }),
      { maxLength: 2, selector: q => q.name },
    ),
    method: fc.constantFrom(...methods),
  },
  { requiredKeys: [] },
);

const backendFilter = fc.oneof(
  headerFilter.map(h => ({ type: "RequestHeaderModifier", requestHeaderModifier: h })),
  headerFilter.map(h => ({ type: "ResponseHeaderModifier", responseHeaderModifier: h })),
);

const backendRef = fc.record(
  {
    name: fc.constantFrom(...services, "missing"),
    port: fc.constantFrom(8080, 9090),
    weight: fc.integer({ min: 0, max: 5 }),
    filters: fc.array(backendFilter, { maxLength: 2 }),
  },
  { requiredKeys: ["name", "port"] },
);

const cors = fc.record(
  {
    allowOrigins: fc.uniqueArray(
      fc.constantFrom("*", "https://www.foo.com", "https://*.bar.com", "http://local.test:8080"),
      { minLength: 1, maxLength: 3 },
    ),
    allowMethods: fc.uniqueArray(fc.constantFrom("GET", "POST", "*"), { maxLength: 2 }),
    allowHeaders: fc.uniqueArray(fc.constantFrom("x-a", "x-b", "*"), { maxLength: 2 }),
    exposeHeaders: fc.uniqueArray(fc.constantFrom("x-c", "*"), { maxLength: 2 }),
    allowCredentials: fc.boolean(),
    maxAge: fc.integer({ min: 1, max: 86400 }),
  },
  { requiredKeys: ["allowOrigins"] },
);

const pathModifier = fc.oneof(
  fc.record({ type: fc.constant("ReplaceFullPath"), replaceFullPath: fc.constantFrom(...paths) }),
  fc.record({
    type: fc.constant("ReplacePrefixMatch"),
    replacePrefixMatch: fc.constantFrom(...paths),
  }),
);

const duration = fc.constantFrom("0s", "500ms", "1s", "1m30s", "10s");

/** Filters of one rule: header modifiers, CORS, and at most one of redirect / rewrite. */
const ruleFilters = fc
  .record({
    request: fc.option(headerFilter, { nil: undefined }),
    response: fc.option(headerFilter, { nil: undefined }),
    cors: fc.option(cors, { nil: undefined }),
    redirectOrRewrite: fc.option(
      fc.oneof(
        fc.record(
          {
            type: fc.constant("RequestRedirect"),
            scheme: fc.constantFrom("http", "https"),
            hostname: fc.constantFrom("example.org"),
            port: fc.constantFrom(8443),
            statusCode: fc.constantFrom(301, 302, 303, 307, 308),
            path: pathModifier,
          },
          { requiredKeys: ["type"] },
        ),
        fc.record(
          {
            type: fc.constant("URLRewrite"),
            hostname: fc.constant("internal.test"),
            path: pathModifier,
          },
          { requiredKeys: ["type"] },
        ),
      ),
      { nil: undefined },
    ),
  })
  .map(f => {
    const out: Record<string, unknown>[] = [];
    if (f.request) out.push({ type: "RequestHeaderModifier", requestHeaderModifier: f.request });
    if (f.response)
      out.push({ type: "ResponseHeaderModifier", responseHeaderModifier: f.response });
    if (f.cors) out.push({ type: "CORS", cors: f.cors });
    const rr = f.redirectOrRewrite;
    if (rr?.type === "RequestRedirect") {
      const { type, ...redirect } = rr;
      out.push({ type, requestRedirect: redirect });
    } else if (rr?.type === "URLRewrite") {
      const { type, ...urlRewrite } = rr;
      out.push({ type, urlRewrite });
    }
    return out;
  });

const rule = fc
  .record(
    {
      name: fc.constantFrom("r1", "r2"),
      matches: fc.array(match, { maxLength: 2 }),
      filters: ruleFilters,
      backendRefs: fc.array(backendRef, { maxLength: 3 }),
      timeouts: fc.record({ request: duration, backendRequest: duration }, { requiredKeys: [] }),
      retry: fc.record(
        {
          codes: fc.uniqueArray(fc.constantFrom(500, 502, 503, 504), { maxLength: 3 }),
          attempts: fc.integer({ min: 0, max: 3 }),
          backoff: fc.constantFrom("100ms", "1s"),
        },
        { requiredKeys: [] },
      ),
    },
    { requiredKeys: ["filters"] },
  )
  .map(r => {
    // What the CRD's CEL rules refuse is never stored: ReplacePrefixMatch needs PathPrefix
    // matches only (one match at most when redirecting/rewriting), backendRequest ≤ request.
    const prefix = r.filters.some(f =>
      [
        (f.requestRedirect as { path?: { type?: string } } | undefined)?.path?.type,
        (f.urlRewrite as { path?: { type?: string } } | undefined)?.path?.type,
      ].includes("ReplacePrefixMatch"),
    );
    const matches = prefix
      ? (r.matches ?? []).map(m => ({
          ...m,
          path: { type: "PathPrefix", value: m.path?.value.startsWith("/") ? m.path.value : "/a" },
        }))
      : r.matches;
    const t = r.timeouts;
    const timeouts =
      t && t.request && t.backendRequest && ms(t.backendRequest) > ms(t.request)
        ? { request: t.request }
        : t;
    const redirect = r.filters.some(f => f.type === "RequestRedirect");
    return {
      ...r,
      ...(matches && { matches }),
      ...(timeouts && { timeouts }),
      ...(redirect && { backendRefs: [] }),
    };
  });

function ms(d: string): number {
  let total = 0;
  const unit: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };
  for (const [, n, u] of d.matchAll(/([0-9]+)(ms|h|m|s)/g)) total += Number(n) * unit[u];
  return total;
}

const listener = fc.record(
  {
    protocol: fc.constantFrom("HTTP", "HTTPS"),
    port: fc.constantFrom(80, 8080),
    hostname: fc.constantFrom(...hostnames),
  },
  { requiredKeys: ["protocol", "port"] },
);

/** A whole snapshot as the list of objects the API server would hold. */
export const arbitrarySnapshot: fc.Arbitrary<KubeObject[]> = fc
  .record({
    listeners: fc.array(listener, { minLength: 1, maxLength: 4 }),
    routes: fc.array(
      fc.record({
        hostnames: fc.uniqueArray(fc.constantFrom(...hostnames), { maxLength: 2 }),
        section: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
        rules: fc.array(rule, { minLength: 1, maxLength: 3 }),
        age: fc.integer({ min: 0, max: 3 }),
      }),
      { maxLength: 4 },
    ),
    endpoints: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 3, maxLength: 3 }),
  })
  .map(({ listeners, routes, endpoints }) => {
    const objects: KubeObject[] = [
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
      } as KubeObject,
      certSecret,
    ];
    // HTTPS listeners get their own ports (443, 8443), so a port never mixes protocols.
    const ls = listeners.map((l, i) => ({
      name: `l${i}`,
      protocol: l.protocol,
      port: l.protocol === "HTTPS" ? (l.port === 80 ? 443 : 8443) : l.port,
      ...(l.hostname !== undefined && { hostname: l.hostname }),
      ...(l.protocol === "HTTPS" && { tls: { certificateRefs: [{ name: "cert" }] } }),
    }));
    objects.push({
      apiVersion: GW,
      kind: "Gateway",
      metadata: { name: "gw", namespace: "default", generation: 1 },
      spec: { gatewayClassName: "kengine", listeners: ls },
    } as KubeObject);
    routes.forEach((r, i) => {
      objects.push({
        apiVersion: GW,
        kind: "HTTPRoute",
        metadata: {
          name: `route-${i}`,
          namespace: "default",
          generation: 1,
          creationTimestamp: `2026-01-0${r.age + 1}T00:00:00Z`,
        },
        spec: {
          parentRefs: [
            {
              name: "gw",
              ...(r.section !== undefined &&
                r.section < ls.length && { sectionName: `l${r.section}` }),
            },
          ],
          ...(r.hostnames.length > 0 && { hostnames: r.hostnames }),
          rules: r.rules.map((rule, j) => ({ ...rule, name: `${rule.name}-${j}` })),
        },
      } as KubeObject);
    });
    services.forEach((name, i) => {
      objects.push({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name, namespace: "default" },
        spec: {
          ports: [
            { name: "http", port: 8080, targetPort: 3000 },
            { name: "alt", port: 9090, targetPort: 3001, appProtocol: "kubernetes.io/h2c" },
          ],
        },
      } as KubeObject);
      objects.push({
        apiVersion: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        metadata: {
          name: `${name}-1`,
          namespace: "default",
          labels: { "kubernetes.io/service-name": name },
        },
        addressType: "IPv4",
        ports: [
          { name: "http", port: 3000, protocol: "TCP" },
          { name: "alt", port: 3001, protocol: "TCP" },
        ],
        endpoints: Array.from({ length: endpoints[i] }, (_, k) => ({
          addresses: [`127.0.0.${10 + i * 4 + k}`],
          conditions: { ready: true },
        })),
      } as KubeObject);
    });
    return objects;
  });
