/**
 * The route table says what the linear shape says: for random snapshots and hosts, the list the
 * table picks for a host (exact key, longest wildcard key, `*`) holds the same rules that can
 * match that host, in the same order, as the listener route the linear shape picks (first
 * listener matching the host). Backend-set ids (positional in the linear shape, named by
 * content in the table) are compared by the reverse_proxy they name. The proxy's own lookup is
 * proven against the linear shape in Go (proxy/routetable golden_test.go, table_test.go).
 */
import fc from "fast-check";
import { arbitrarySnapshot } from "../../tests/support/arbitrary-snapshot";
import { snapshotOf } from "../snapshot";
import { translate } from "../translate";
import { BACKEND_VAR, toCaddyConfig } from "./config";
import { CaddyMatcherSet, CaddyRoute } from "./types";

type Server = { routes: CaddyRoute[] };

/** Whether a matcher set's host conditions (host, Host pattern) admit `host`. */
function hostAdmits(set: CaddyMatcherSet, host: string): boolean {
  if (set.host && !set.host.some(h => h.toLowerCase() === host)) return false;
  const pattern = set.header_regexp?.Host?.pattern;
  if (pattern !== undefined && !new RegExp(pattern.replace(/^\(\?i\)/, ""), "i").test(host))
    return false;
  return true;
}
const mayMatch = (r: CaddyRoute, host: string): boolean =>
  !r.match?.length || r.match.some(set => hostAdmits(set, host));

/** Backend-set ids replaced by the handler they name, so both shapes compare. */
function normalised(routes: readonly CaddyRoute[], server: Server): string {
  const byId = new Map<string, string>();
  for (const r of server.routes) {
    const id = r.match?.[0]?.vars?.[BACKEND_VAR]?.[0];
    if (id !== undefined) byId.set(id, JSON.stringify(r.handle));
    // (the table's shape: the backends inside its handler)
    const h = r.handle[0];
    if (h?.handler === "kengine_route_table")
      for (const [b, handler] of Object.entries(h.backends ?? {}))
        byId.set(b, JSON.stringify([handler]));
  }
  return JSON.stringify(routes, (k, v: unknown) =>
    k === BACKEND_VAR && typeof v === "string" ? byId.get(v) : v,
  );
}

/**
 * The routes that may match `host`, each host matcher narrowed to it: for that host a route
 * matching hosts [x, host] does what one matching [host] does (the linear shape merges host
 * catch-alls into one route matching all their hosts; the table lists each under its key).
 */
const forHost = (routes: readonly CaddyRoute[], host: string): CaddyRoute[] =>
  routes
    .filter(r => mayMatch(r, host))
    .map(r =>
      r.match?.some(set => set.host)
        ? {
            ...r,
            match: r.match.map(set =>
              set.host && hostAdmits(set, host) ? { ...set, host: [host] } : set,
            ),
          }
        : r,
    );

function linearList(server: Server, host: string): readonly CaddyRoute[] {
  for (const r of server.routes) {
    if (r.group !== "listeners" || !mayMatch(r, host)) continue;
    const h = r.handle[0];
    if (h.handler === "subroute") return h.routes;
    const { group: _listeners, ...notFound } = r; // the final 404 (in the listeners' group)
    return [notFound];
  }
  return [];
}

function tableList(server: Server, host: string): readonly CaddyRoute[] {
  const h = server.routes[0].handle[0];
  if (h.handler !== "kengine_route_table") throw new Error("no table");
  if (h.hosts[host]) return h.hosts[host];
  const labels = host.split(".");
  for (let i = 1; i < labels.length; i++) {
    const list = h.hosts[`*.${labels.slice(i).join(".")}`];
    if (list) return list;
  }
  return h.hosts["*"] ?? [];
}

/** Checks every probe host of every HTTP server of the snapshot's Gateways. */
function sameRules(objects: Parameters<typeof snapshotOf>[0]): void {
  for (const ir of translate(snapshotOf(objects)).gateways) {
    const table = toCaddyConfig(ir).apps.http?.servers ?? {};
    const linear = toCaddyConfig(ir, { routeTable: false }).apps.http?.servers ?? {};
    for (const s of ir.httpServers) {
      const name = `${s.protocol.toLowerCase()}-${s.port}`;
      const t = table[name] as unknown as Server;
      const l = linear[name] as unknown as Server;
      const names = new Set<string>(["unknown.invalid", "10.1.2.3"]);
      for (const li of s.listeners)
        for (const h of [li.hostname, ...li.routes.map(e => e.match.hostname)])
          if (h !== undefined)
            for (const n of h.startsWith("*.") ? [`x${h.slice(1)}`, `a.b${h.slice(1)}`] : [h])
              names.add(n.toLowerCase());
      for (const host of names) {
        const want = forHost(linearList(l, host), host);
        const got = forHost(tableList(t, host), host);
        expect([host, normalised(got, t)]).toEqual([host, normalised(want, l)]);
      }
    }
  }
}

const GW = "gateway.networking.k8s.io/v1";
const route = (name: string, section: string, hostnames: string[]) => ({
  apiVersion: GW,
  kind: "HTTPRoute",
  metadata: { name, namespace: "default", generation: 1 },
  spec: {
    parentRefs: [{ name: "gw", sectionName: section }],
    hostnames,
    rules: [
      {
        filters: [
          {
            type: "RequestRedirect",
            requestRedirect: { path: { type: "ReplaceFullPath", replaceFullPath: `/${name}` } },
          },
        ],
      },
    ],
  },
});

describe("route table ≡ linear listener routes", () => {
  it("every host gets the same rules, in the same order, for random snapshots", () => {
    fc.assert(fc.property(arbitrarySnapshot, sameRules), { numRuns: 150 });
  });

  it("a route hostname under a more specific listener is not a key of the wider one", () => {
    sameRules([
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
            { name: "wide", protocol: "HTTP", port: 80, hostname: "*.example.com" },
            { name: "narrow", protocol: "HTTP", port: 80, hostname: "*.foo.example.com" },
            { name: "any", protocol: "HTTP", port: 80 },
          ],
        },
      },
      route("a", "wide", ["x.foo.example.com", "a.example.com", "*.bar.foo.example.com"]),
      route("b", "narrow", ["*.foo.example.com"]),
      route("c", "any", ["a.example.com", "other.test", "*.example.com"]),
    ] as never);
  });
});

/** Every backend route of a table's server is named by the table, and the other way round. */
function backendsNamed(objects: Parameters<typeof snapshotOf>[0]): void {
  for (const ir of translate(snapshotOf(objects)).gateways)
    for (const [name, s] of Object.entries(toCaddyConfig(ir).apps.http?.servers ?? {})) {
      const routes = (s as unknown as Server).routes;
      if (routes[0]?.handle[0]?.handler !== "kengine_route_table") continue;
      const named = new Set<string>();
      JSON.stringify(routes[0], (k, v: unknown) => {
        if (k === BACKEND_VAR && typeof v === "string") named.add(v);
        return v;
      });
      const table = routes[0].handle[0];
      const served = Object.keys(
        table.handler === "kengine_route_table" ? (table.backends ?? {}) : {},
      );
      expect([name, [...served].sort()]).toEqual([name, [...named].sort()]);
      // (no backend route is left outside the table)
      expect(routes.flatMap(r => r.match?.[0]?.vars?.[BACKEND_VAR] ?? [])).toEqual([]);
    }
}

describe("a table's backends", () => {
  it("are exactly the backends its host lists name, for random snapshots", () => {
    fc.assert(fc.property(arbitrarySnapshot, backendsNamed), { numRuns: 150 });
  });

  it("leave out the backends of a route whose hostname an earlier listener takes", () => {
    // Found by error-path.test.ts's source-map property: route-0's only hostname, b.test,
    // belongs to listener l2, so the wider l3 has no key for it and its backend is unreached.
    const svc = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "a", namespace: "default" },
    };
    backendsNamed([
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
            { name: "l2", protocol: "HTTP", port: 80, hostname: "b.test" },
            { name: "l3", protocol: "HTTP", port: 80, hostname: "*.test" },
          ],
        },
      },
      {
        apiVersion: GW,
        kind: "HTTPRoute",
        metadata: { name: "route-0", namespace: "default", generation: 1 },
        spec: {
          parentRefs: [{ name: "gw", sectionName: "l3" }],
          hostnames: ["b.test"],
          rules: [{ backendRefs: [{ name: "a", port: 8080 }] }],
        },
      },
      { ...svc, spec: { ports: [{ name: "http", port: 8080, targetPort: 3000 }] } },
      {
        apiVersion: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        metadata: {
          name: "a-1",
          namespace: "default",
          labels: { "kubernetes.io/service-name": "a" },
        },
        addressType: "IPv4",
        ports: [{ name: "http", port: 3000, protocol: "TCP" }],
        endpoints: [{ addresses: ["127.0.0.10"], conditions: { ready: true } }],
      },
    ] as never);
  });
});
