/**
 * Tracing Caddy's errors to objects: the parser on errors the real proxies gave (collected by
 * loading refused configs into Caddy 2.11.9 and 2.8.4; tests/integration/culprit-trace.test.ts
 * does it on every run), and the renderer's source map checked against the config itself for
 * random snapshots.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { parseSnapshotYAML } from "../../hack/translate";
import { arbitrarySnapshot } from "../../tests/support/arbitrary-snapshot";
import {
  CaddyHandler,
  CaddyRoute,
  SourceObject,
  caddySourceMap,
  listenerSource,
  toCaddyConfig,
} from "../caddy";
import { BACKEND_VAR } from "./config";
import { tableKey } from "./route-table";
import { GatewayIR } from "../ir";
import { snapshotOf } from "../snapshot";
import { identityOf, translate } from "../translate";
import { deltaErrorLocation, errorLocation, sourcesAt, sourcesOfError } from "./load-errors";

const TAIL =
  "loading module 'reverse_proxy': provision http.handlers.reverse_proxy: loading transport: loading module 'http': provision http.reverse_proxy.transport.http: making TLS client config: failed to load ca module: loading module 'inline': provision tls.ca_pool.source.inline: parsing certificate at index 0: x509: unsupported elliptic curve";
const LOAD = "loading config: loading new config: ";

describe("errorLocation", () => {
  it("follows a route into its subroutes (per-route layout, Caddy 2.8.4 and 2.11.9)", () => {
    const message = `${LOAD}loading http app module: provision http: server http-8080: setting up route handlers: route 0: loading handler modules: position 0: loading module 'subroute': provision http.handlers.subroute: setting up subroutes: route 1: loading handler modules: position 0: ${TAIL}`;
    expect(errorLocation(message)).toBe("/http/servers/http-8080/routes/0/handle/0/routes/1");
  });

  it("stops at a server route (shared dispatch: the backend's own route)", () => {
    const message = `${LOAD}loading http app module: provision http: server https-8443: setting up route handlers: route 2: loading handler modules: position 0: ${TAIL}`;
    expect(errorLocation(message)).toBe("/http/servers/https-8443/routes/2");
  });

  it("names a server with its Gateway, a handler position other than 0, and matchers", () => {
    const message =
      "loading http app module: provision http: server ns/gw/http-80: setting up route handlers: route 3: loading handler modules: position 1: loading module 'subroute': provision http.handlers.subroute: setting up subroutes: route 0: loading matcher modules: module name 'expression': provision http.matchers.expression: compiling CEL program: ERROR";
    expect(errorLocation(message)).toBe("/http/servers/ns/gw/http-80/routes/3/handle/1/routes/0");
  });

  it("names TLS connection policies, PEM pairs and layer-4 routes", () => {
    expect(
      errorLocation(
        "loading http app module: provision http: server https-443: setting up TLS connection policies: connection policy 2: building standard TLS config: x",
      ),
    ).toBe("/http/servers/https-443/tls_connection_policies/2");
    expect(
      errorLocation(
        `${LOAD}loading tls app module: provision tls: loading certificates: PEM pair 1: tls: private key does not match public key`,
      ),
    ).toBe("/tls/certificates/load_pem/1");
    expect(
      errorLocation(
        "loading layer4 app module: provision layer4: server 'tls-9443': route 4: loading handlers: x",
      ),
    ).toBe("/layer4/servers/tls-9443/routes/4");
  });

  it("names nothing for what no object made", () => {
    for (const message of [
      "loading http app module: provision http: server http-80, listener 0: listen tcp :80: bind: address already in use",
      'loading http app module: decoding module config: http: json: unknown field "metrics"',
      "loading http app module: provision http: server http-80: setting up TLS connection policies: loading client cert verifiers: x",
      "",
    ])
      expect(errorLocation(message)).toBeUndefined();
  });
});

describe("sourcesAt", () => {
  const a: SourceObject = { kind: "HTTPRoute", namespace: "n", name: "a" };
  const l: SourceObject = { kind: "Listener", namespace: "n", name: "gw", listener: "http" };
  const map = new Map([
    ["/http/servers/s/routes/0", [l]],
    ["/http/servers/s/routes/0/handle/0/routes/1", [a]],
  ]);
  it("finds the nearest owned part at or above the location", () => {
    expect(sourcesAt(map, "/http/servers/s/routes/0/handle/0/routes/1/handle/2/routes/0")).toEqual([
      a,
    ]);
    expect(sourcesAt(map, "/http/servers/s/routes/0/handle/0/routes/0")).toEqual([l]);
    expect(sourcesAt(map, "/http/servers/s/routes/1")).toEqual([]);
    expect(sourcesOfError(map, "no location")).toEqual([]);
  });
});

/* ------------------------------------------------------------------ the source map, checked */

const MARK = "x-kengine-source";

/** The IR with every route entry marked (a request header naming its route): an oracle. */
const marked = (ir: GatewayIR): GatewayIR => ({
  ...ir,
  httpServers: ir.httpServers.map(s => ({
    ...s,
    listeners: s.listeners.map(l => ({
      ...l,
      routes: l.routes.map(e => {
        const { kind, namespace, name } = e.route;
        const add = [{ name: MARK, value: identityOf({ kind, namespace, name }) }];
        const h = e.requestHeaders ?? { set: [], add: [], remove: [] };
        return { ...e, requestHeaders: { ...h, add: [...h.add, ...add] } };
      }),
    })),
  })),
});

/** The marks inside a JSON value (every entry route carries its route's mark). */
function marksIn(v: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(v)) for (const x of v) marksIn(x, out);
  else if (v && typeof v === "object")
    for (const [k, x] of Object.entries(v)) {
      if (k === MARK && Array.isArray(x)) for (const m of x) out.add(String(m).replace(/\\/g, ""));
      else marksIn(x, out);
    }
  return out;
}

const at = (root: unknown, pointer: string): unknown =>
  pointer
    .split("/")
    .slice(1)
    .reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], root);

describe("route table errors (Bundled)", () => {
  const TABLE =
    "loading handler modules: position 0: loading module 'kengine_route_table': provision http.handlers.kengine_route_table: ";
  it("follows a /load error into the host's list and its subroutes", () => {
    const message = `loading http app module: provision http: server http-80: setting up route handlers: route 0: ${TABLE}host "a.example.com": route 2: ${TAIL}`;
    expect(errorLocation(message)).toBe(
      "/http/servers/http-80/routes/0/handle/0/hosts/a.example.com/2",
    );
  });
  it("locates a delta's 400 (host, then its list's route) inside the table", () => {
    const table = "/http/servers/http-80/routes/0/handle/0";
    expect(deltaErrorLocation(table, `host "*.example.com": route 1: ${TAIL}`)).toBe(
      `${table}/hosts/*.example.com/1`,
    );
    expect(deltaErrorLocation(table, `host "b.example.com": decoding route list: x`)).toBe(
      `${table}/hosts/b.example.com`,
    );
    expect(deltaErrorLocation(table, "body larger than 4 bytes")).toBeUndefined();
  });
  it("locates a /load error in one of the table's backends", () => {
    const message = `loading http app module: provision http: server ns/gw/http-80: setting up route handlers: route 0: ${TABLE}backend "b0123": loading handler modules: position 0: ${TAIL}`;
    expect(errorLocation(message)).toBe(
      "/http/servers/ns/gw/http-80/routes/0/handle/0/backends/b0123",
    );
  });
});

describe("caddySourceMap", () => {
  it("maps every route to the object that produced it, for random snapshots", () => {
    fc.assert(
      fc.property(arbitrarySnapshot, fc.boolean(), (objects, perRoute) => {
        const opts = perRoute ? { dispatch: "per-route" as const } : {};
        for (const plain of translate(snapshotOf(objects)).gateways) {
          const ir = marked(plain);
          const config = toCaddyConfig(ir, opts);
          const map = caddySourceMap(ir, opts);
          const ids = (l: readonly SourceObject[]) => l.map(identityOf).sort();
          const servers = (config.apps as { http?: { servers: Record<string, object> } }).http
            ?.servers;
          for (const s of ir.httpServers) {
            const name = `${s.protocol.toLowerCase()}-${s.port}`;
            const routes = (servers?.[name] as { routes: CaddyRoute[] }).routes;
            // The listeners: routes of their own (linear), or the keys of one route table
            // (Bundled): each list belongs to its listener, each entry to its marked route.
            const table = routes[0]?.handle[0]?.handler === "kengine_route_table";
            const head = table ? 1 : s.listeners.length;
            s.listeners.forEach((l, i) => {
              const owner = table
                ? `/http/servers/${name}/routes/0/handle/0/hosts/${tableKey(l.hostname)}`
                : `/http/servers/${name}/routes/${i}`;
              const entries = table ? owner : `${owner}/handle/0/routes`;
              expect(map.get(owner) ?? []).toEqual([listenerSource(l.id)]);
              ((at(config.apps, entries) as readonly CaddyRoute[] | undefined) ?? []).forEach(
                (e, j) => {
                  const got = map.get(`${entries}/${j}`);
                  expect(got ? ids(got) : []).toEqual([...marksIn(e)].sort());
                },
              );
            });
            // Then (shared dispatch) a route per backend set, or (Bundled) the table's
            // backends: each owned by every route whose entry names it.
            const parts: [string, string | undefined][] = routes.flatMap((r, i) =>
              i < head
                ? []
                : [[`/http/servers/${name}/routes/${i}`, r.match?.[0]?.vars?.[BACKEND_VAR]?.[0]]],
            );
            const h0 = routes[0]?.handle[0];
            if (table && h0?.handler === "kengine_route_table")
              for (const id of Object.keys(h0.backends ?? {}))
                parts.push([`/http/servers/${name}/routes/0/handle/0/backends/${id}`, id]);
            parts.forEach(([location, backend]) => {
              const owners = map.get(location) ?? [];
              if (backend === undefined) return expect(owners).toEqual([]);
              // A backend's route: every route whose entry names it.
              const users = new Set<string>();
              const visit = (v: unknown): void => {
                if (Array.isArray(v)) v.forEach(visit);
                else if (v && typeof v === "object") {
                  const h = v as CaddyRoute;
                  if (Array.isArray(h.handle) && h.handle.some(isVar(backend)))
                    for (const m of marksIn(h)) users.add(m);
                  Object.values(v).forEach(visit);
                }
              };
              visit(routes.slice(0, head));
              expect(ids(owners)).toEqual([...users].sort());
            });
          }
          // Every located part exists in the config.
          for (const pointer of map.keys()) expect(at(config.apps, pointer)).toBeDefined();
        }
      }),
      { numRuns: 150 },
    );
  });
});

describe("caddySourceMap of merged host routes", () => {
  it("gives a route merged from several HTTPRoutes (grouped-hosts golden) to each of them", () => {
    const text = readFileSync(join(__dirname, "../../tests/golden/grouped-hosts.in.yaml"), "utf8");
    const objects = parseSnapshotYAML(text);
    // The linear shape (stock Caddy), where hostnames are merged into one route.
    const [bundled] = translate(snapshotOf(objects)).gateways;
    const ir: GatewayIR = { ...bundled, flavor: "Caddy" };
    const config = toCaddyConfig(ir);
    const map = caddySourceMap(ir);
    const listener = "/http/servers/http-80/routes/0/handle/0/routes";
    const sub = at(config.apps, listener) as CaddyRoute[];
    const merged = sub
      .map((r, j) => ({ j, hosts: r.match?.[0]?.host ?? [] }))
      .filter(m => m.hosts.length > 1);
    expect(merged.length).toBeGreaterThan(0);
    for (const { j, hosts } of merged) {
      // The routes that name one of the merged hostnames, read from the objects themselves.
      const expected = objects
        .filter(o => o.kind === "HTTPRoute")
        .filter(o =>
          ((o as { spec?: { hostnames?: string[] } }).spec?.hostnames ?? []).some(h =>
            hosts.includes(h),
          ),
        )
        .map(o => `HTTPRoute/${o.metadata.namespace}/${o.metadata.name}`)
        .sort();
      expect((map.get(`${listener}/${j}`) ?? []).map(identityOf).sort()).toEqual(expected);
    }
  });
});

const isVar =
  (id: string) =>
  (h: CaddyHandler): boolean =>
    h.handler === "vars" && (h as Record<string, unknown>)[BACKEND_VAR] === id;
