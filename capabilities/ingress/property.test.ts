/**
 * Property test of the Ingress converter (fast-check): random Ingresses shaped like
 * networking.k8s.io/v1 (valid and malformed values mixed), and arbitrary JSON besides. For each:
 * conversion never throws and is deterministic, with the ingress-nginx annotations read or not;
 * every synthetic HTTPRoute passes our HTTPRoute validation (validation/httproute.ts) or the
 * Ingress carries a problem; every object name is a DNS subdomain, unique within the conversion.
 */
import fc from "fast-check";
import type { V1Ingress, V1Service } from "@kubernetes/client-node";
import { convertIngress } from "./convert";
import { HTTPRouteLike, httpRouteProblems } from "../validation/httproute";

/** Value pools: only valid values, or valid and malformed mixed. */
const pools = (valid: boolean) => {
  const mix = <T>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<T>): fc.Arbitrary<T> =>
    valid ? good : fc.oneof(good, bad);
  const hosts = mix(
    fc.constantFrom(
      undefined,
      "",
      "example.com",
      "a.example.com",
      "*.example.com",
      "*.a.b.example.com",
      "x",
    ),
    fc.constantFrom("Bad.Host", "10.0.0.1", "*", "a.*.com", "host:80"),
  );
  const paths = mix(
    fc.oneof(
      fc.constantFrom("/", "/a", "/a/", "/a/b", "//", "/a%20b"),
      fc.stringMatching(/^\/[-a-z0-9/._~]{0,12}$/),
    ),
    fc.oneof(
      fc.constantFrom(undefined, "", "/(.*)", "/x*", "/a b", "/%zz"),
      fc.string({ maxLength: 8 }),
    ),
  );
  const pathTypes = mix(
    fc.constantFrom("Exact", "Prefix", "ImplementationSpecific"),
    fc.constantFrom("Regex", undefined),
  );
  const port = mix(
    fc.oneof(
      fc.record({ number: fc.integer({ min: 1, max: 65535 }) }),
      fc.record({ name: fc.constantFrom("http", "https", "grpc") }),
    ),
    fc.oneof(
      fc.record({ number: fc.constantFrom(0, 70000, 1.5) }),
      fc.record({ name: fc.constantFrom("Bad_Name", "") }),
      fc.constant({}),
      fc.constant({ number: 80, name: "http" }),
    ),
  );
  const service = fc.record({
    service: fc.record({
      name: mix(fc.constantFrom("web", "api", "gone"), fc.constant("Bad")),
      port,
    }),
  });
  const backend = mix(
    service,
    fc.oneof(
      fc.constant({ resource: { apiGroup: "x.io", kind: "Bucket", name: "b" } }),
      fc.constant({}),
    ),
  );
  const P = "nginx.ingress.kubernetes.io/";
  const annotations = fc.record(
    {
      [`${P}ssl-redirect`]: mix(fc.constantFrom("true", "false"), fc.constant("yes")),
      [`${P}force-ssl-redirect`]: fc.constantFrom("true", "false"),
      [`${P}permanent-redirect`]: mix(
        fc.constantFrom("https://new.example.org/shop", "http://a.example.org:8080", "/moved"),
        fc.constantFrom("ftp://x", "https://a.example.org/?q", "moved", "https://10.0.0.1/"),
      ),
      [`${P}permanent-redirect-code`]: mix(fc.constantFrom("301", "308"), fc.constant("200")),
      [`${P}temporal-redirect`]: fc.constantFrom("/maintenance", "https://b.example.org/"),
      [`${P}app-root`]: mix(fc.constantFrom("/app", "/a/b"), fc.constantFrom("app", "/a b")),
      [`${P}rewrite-target`]: mix(fc.constantFrom("/", "/v2"), fc.constantFrom("/$1", "x")),
      [`${P}upstream-vhost`]: mix(
        fc.constantFrom("internal.example.org"),
        fc.constantFrom("$host", "a:80"),
      ),
      [`${P}proxy-read-timeout`]: mix(fc.constantFrom("1", "99999"), fc.constantFrom("0", "5s")),
      [`${P}backend-protocol`]: fc.constantFrom("HTTP", "GRPC"),
      [`${P}canary`]: mix(fc.constant("false"), fc.constant("true")),
      [`${P}canary-by-header`]: mix(fc.constantFrom("X-Canary", "Cookie"), fc.constant("Host")),
      [`${P}canary-by-header-pattern`]: mix(fc.constant("v[0-9]+"), fc.constant("(?=a)")),
      [`${P}canary-by-cookie`]: mix(fc.constant("beta"), fc.constant("a;b")),
      [`${P}enable-cors`]: fc.constantFrom("true", "false"),
      [`${P}cors-allow-origin`]: mix(
        fc.constantFrom("*", "https://a.example.com, http://*.b.example.com:8080"),
        fc.constantFrom("a.example.com", "*, https://a.example.com", "{env.HOME}"),
      ),
      [`${P}cors-allow-methods`]: mix(
        fc.constantFrom("GET", "*", "get, put"),
        fc.constant("FETCH"),
      ),
      [`${P}cors-max-age`]: mix(fc.constantFrom("1", "600"), fc.constant("0")),
      [`${P}affinity`]: mix(fc.constant("cookie"), fc.constant("ip")),
      [`${P}session-cookie-name`]: mix(fc.constantFrom("route", "S_ID"), fc.constant("{a}")),
      [`${P}session-cookie-max-age`]: mix(
        fc.constantFrom("60", "86400", "604800"),
        fc.constant("1h"),
      ),
      [`${P}session-cookie-samesite`]: mix(
        fc.constantFrom("None", "Lax", "strict"),
        fc.constantFrom("Strict; Domain=evil.test", "{http.request.host}", ""),
      ),
      [`${P}proxy-connect-timeout`]: mix(
        fc.constantFrom("1", "15", "3600s"),
        fc.constantFrom("0", "3601", "-1", "1m", "{env.HOME}"),
      ),
      [`${P}proxy-send-timeout`]: mix(fc.constantFrom("60", "5s"), fc.constantFrom("0s", "1.5")),
      [`${P}auth-url`]: mix(
        fc.constantFrom(
          "http://auth.infra.svc.cluster.local:4180/oauth2/auth",
          "http://web:8080/verify?x=1",
        ),
        fc.constantFrom(
          "https://$host/oauth2/auth",
          "http://127.0.0.1:2019/load",
          "http://auth.example.com/v",
          "http://a:0/",
          "{http.request.host}",
        ),
      ),
      [`${P}auth-response-headers`]: mix(
        fc.constantFrom("X-User", "X-User, X-Email"),
        fc.constantFrom("Host", "a b"),
      ),
      [`${P}use-regex`]: fc.constantFrom("true", "false"),
      [`${P}proxy-body-size`]: mix(fc.constantFrom("0", "1k", "8m"), fc.constant("8mb")),
      [`${P}server-alias`]: mix(
        fc.constantFrom("www.example.com", "a.example.org, b.example.org"),
        fc.constantFrom("*.example.com", "{http.request.host}"),
      ),
      ...(valid ? {} : { [`${P}server-snippet`]: fc.constant("x") }),
    },
    { requiredKeys: [] },
  );
  return { hosts, paths, pathTypes, backend, annotations };
};
const ingressOf = (valid: boolean): fc.Arbitrary<V1Ingress> => {
  const { hosts, paths, pathTypes, backend, annotations } = pools(valid);
  return fc.record(
    {
      metadata: fc.record({
        name: fc.constantFrom("shop", "a.b", "x".repeat(253)),
        namespace: fc.constant("apps"),
        uid: fc.constant("u"),
        creationTimestamp: fc.constant(new Date("2026-01-01T00:00:00Z")),
        annotations,
      }),
      spec: fc.record(
        {
          defaultBackend: backend,
          rules: fc.array(
            fc.record(
              {
                host: hosts,
                http: fc.record({
                  paths: fc.array(fc.record({ path: paths, pathType: pathTypes, backend }), {
                    maxLength: 20,
                  }),
                }),
              },
              { requiredKeys: [] },
            ),
            { maxLength: 4 },
          ),
          tls: fc.array(
            fc.record(
              {
                hosts: fc.array(hosts.filter(h => h !== undefined) as fc.Arbitrary<string>, {
                  maxLength: 3,
                }),
                secretName: fc.constantFrom("cert", "other"),
              },
              { requiredKeys: [] },
            ),
            { maxLength: 3 },
          ),
        },
        { requiredKeys: [] },
      ),
    },
    { requiredKeys: ["metadata"] },
  ) as fc.Arbitrary<V1Ingress>;
};
/** Half built from values the proxy runs only, half mixed with malformed ones. */
const ingressArb = fc.oneof(ingressOf(true), ingressOf(false));

const services: Record<string, V1Service> = {
  "apps/web": { spec: { ports: [{ name: "http", port: 8080 }] } },
  "apps/api": { spec: { ports: [{ name: "grpc", port: 9000 }, { port: 1 }] } },
};
const lookup = (ns: string, name: string) => services[`${ns}/${name}`];
const target = { gateway: { namespace: "infra", name: "shared" } };
/** A class reading the ingress-nginx annotations, on a non-default HTTPS port. */
const nginxTarget = { ...target, httpsPort: 8443, nginxAnnotations: true };
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

describe("convertIngress (property)", () => {
  it("never throws, is deterministic, and makes only routes our validation accepts", () => {
    fc.assert(
      fc.property(ingressArb, fc.boolean(), (ingress, nginx) => {
        const t = nginx ? nginxTarget : target;
        const out = convertIngress(ingress, t, lookup);
        expect(JSON.stringify(convertIngress(ingress, t, lookup))).toBe(JSON.stringify(out));
        for (const route of out.httpRoutes) {
          const routeProblems = httpRouteProblems(route as HTTPRouteLike);
          if (routeProblems.length > 0) expect(out.problems).not.toEqual([]);
          expect(routeProblems).toEqual([]);
          expect(route.spec.rules.length).toBeLessThanOrEqual(16);
          // The rule fields only the converter writes hold only values the reader checked.
          for (const rule of route.spec.rules) {
            for (const v of Object.values(rule["x-kengine-proxy-timeouts"] ?? {}))
              expect(Number.isInteger(v) && v >= 1 && v <= 3600).toBe(true);
            const auth = rule["x-kengine-external-auth"];
            if (auth !== undefined) {
              expect(auth.path.startsWith("/")).toBe(true);
              expect(auth.service.port).toBeGreaterThanOrEqual(1);
              expect(auth.service.name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
              expect(auth.host).not.toMatch(/[{}$\s]/);
              expect(auth.responseHeaders.map(h => h.toLowerCase())).not.toContain("host");
            }
            const sameSite = rule["x-kengine-session-same-site"];
            if (sameSite !== undefined) {
              expect(["None", "Lax", "Strict"]).toContain(sameSite);
              expect(rule.sessionPersistence).toBeDefined();
            }
          }
        }
        const names = [...out.httpRoutes, ...out.listenerSets].map(o => o.metadata.name);
        expect(new Set(names).size).toBe(names.length);
        for (const n of names) {
          expect(n.length).toBeLessThanOrEqual(253);
          expect(n).toMatch(DNS_SUBDOMAIN);
        }
        for (const ls of out.listenerSets) {
          const ln = ls.spec.listeners.map(l => l.name);
          expect(new Set(ln).size).toBe(ln.length);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("the generator is not so hostile that nothing converts", () => {
    // A fixed seed: the counts are over generated cases, so they must be the same every run
    // (with a random seed a run could, rarely, fall short). The property above stays random.
    const cases = fc.sample(fc.tuple(ingressArb, fc.boolean()), { numRuns: 2000, seed: 31 });
    let served = 0;
    let filtered = 0;
    for (const [ingress, nginx] of cases) {
      const out = convertIngress(ingress, nginx ? nginxTarget : target, lookup);
      if (out.httpRoutes.some(r => r.spec.rules.length > 1)) served++;
      if (nginx && out.httpRoutes.some(r => r.spec.rules.some(x => x.filters))) filtered++;
    }
    expect(served).toBeGreaterThan(100);
    expect(filtered).toBeGreaterThan(50);
  });

  it("never throws on arbitrary JSON", () => {
    fc.assert(
      fc.property(fc.anything(), fc.anything(), (metadata, spec) => {
        const ingress = { metadata, spec } as unknown as V1Ingress;
        expect(() => convertIngress(ingress, target, lookup)).not.toThrow();
        expect(() => convertIngress(ingress, nginxTarget, lookup)).not.toThrow();
      }),
      { numRuns: 2000 },
    );
  });
});
