import { parsePrometheusText } from "../proxies/prom-text";
import fc from "fast-check";
import { KubeObject, snapshotOf } from "../snapshot";
import { TrafficTotals, gatewayRoutes, routeForHost } from "./traffic";

const scrape = (reload: number, lines: string[]) =>
  parsePrometheusText(
    [
      "# HELP caddy_config_last_reload_success_timestamp_seconds Timestamp of the last successful configuration reload.",
      "# TYPE caddy_config_last_reload_success_timestamp_seconds gauge",
      `caddy_config_last_reload_success_timestamp_seconds ${reload}`,
      ...lines,
    ].join("\n"),
  );
const req = (handler: string, host: string, code: string, n: number, server = "http-80") =>
  `caddy_http_request_duration_seconds_count{code="${code}",handler="${handler}",host="${host}",method="GET",server="${server}"} ${n}`;

const routes = [
  { route: "apps/shop", hostnames: ["shop.example"] },
  { route: "apps/wild", hostnames: ["*.wild.example"] },
  { route: "apps/any", hostnames: [] },
];
const routeOf = (h: string | undefined) => routeForHost(routes, h);
const byRoute = (t: TrafficTotals) =>
  Object.fromEntries(t.totals().map(x => [`${x.labels.route}|${x.labels.code}`, x.value]));

describe("parsePrometheusText", () => {
  it("reads samples with labels (escapes too) and skips what does not parse", () => {
    const s = parsePrometheusText(
      'a_total{x="1",y="q\\"uote"} 3\n# c\nbroken{x= 1\nb 2.5e3\nc{} +Inf\n',
    );
    expect(s).toEqual([
      { name: "a_total", labels: { x: "1", y: 'q"uote' }, value: 3 },
      { name: "b", labels: {}, value: 2500 },
      { name: "c", labels: {}, value: Infinity },
    ]);
  });
});

describe("routeForHost", () => {
  it("picks the one route serving a host, else the catch-all route, else none", () => {
    expect(routeOf("shop.example")).toBe("apps/shop");
    expect(routeOf("SHOP.example:80")).toBe("apps/shop");
    expect(routeOf("a.wild.example")).toBe("apps/wild");
    expect(routeOf("wild.example")).toBe("apps/any");
    expect(routeOf("_other")).toBe("");
    expect(routeForHost([{ route: "a/b", hostnames: [] }], "_other")).toBe("a/b");
    expect(
      routeForHost(
        [
          { route: "a/1", hostnames: ["x.example"] },
          { route: "a/2", hostnames: ["x.example"] },
        ],
        "x.example",
      ),
    ).toBe("");
  });
});

describe("TrafficTotals", () => {
  it("counts each request once (largest count across handlers), ignores our own servers", () => {
    const t = new TrafficTotals();
    t.observe(
      "p1",
      "apps/gw",
      scrape(100, [
        req("subroute", "shop.example", "200", 7),
        req("reverse_proxy", "shop.example", "200", 7),
        req("subroute", "_other", "404", 2),
        req("reverse_proxy", "shop.example", "200", 1, "kengine-management"),
      ]),
      routeOf,
    );
    expect(byRoute(t)).toEqual({ "apps/shop|200": 7, "|404": 2 });
  });

  it("adds only what is new across scrapes, and handles resets (reload, restart)", () => {
    const t = new TrafficTotals();
    t.observe("p1", "apps/gw", scrape(100, [req("subroute", "shop.example", "200", 5)]), routeOf);
    // the same reading again: nothing new (a second scrape of the controller)
    t.observe("p1", "apps/gw", scrape(100, [req("subroute", "shop.example", "200", 5)]), routeOf);
    t.observe("p1", "apps/gw", scrape(100, [req("subroute", "shop.example", "200", 8)]), routeOf);
    expect(byRoute(t)).toEqual({ "apps/shop|200": 8 });
    // a config load: counters start again; 9 > 8 but all 9 are new
    t.observe("p1", "apps/gw", scrape(200, [req("subroute", "shop.example", "200", 9)]), routeOf);
    expect(byRoute(t)).toEqual({ "apps/shop|200": 17 });
    // a restart that kept the timestamp format but lowered a counter: reset too
    t.observe("p1", "apps/gw", scrape(200, [req("subroute", "shop.example", "200", 2)]), routeOf);
    expect(byRoute(t)).toEqual({ "apps/shop|200": 19 });
    // a second proxy adds up; a proxy that is gone keeps its counts in the totals
    t.observe("p2", "apps/gw", scrape(300, [req("subroute", "shop.example", "200", 4)]), routeOf);
    t.retain(new Set(["p2"]));
    expect(byRoute(t)).toEqual({ "apps/shop|200": 23 });
    // a new pod under the same name after retain: counted from zero
    t.observe("p1", "apps/gw", scrape(400, [req("subroute", "shop.example", "200", 1)]), routeOf);
    expect(byRoute(t)).toEqual({ "apps/shop|200": 24 });
  });

  it("property: the controller's series are routes that exist × servers × status codes, whatever hosts and codes a proxy reports", () => {
    const host = fc.oneof(
      fc.constantFrom("shop.example", "a.wild.example", "_other"),
      fc.stringMatching(/^[a-z0-9.-]{1,30}$/),
    );
    const code = fc.oneof(fc.constantFrom("200", "404"), fc.stringMatching(/^[0-9a-z]{0,5}$/));
    fc.assert(
      fc.property(fc.array(fc.tuple(host, code, fc.nat(1000)), { maxLength: 200 }), readings => {
        const t = new TrafficTotals();
        t.observe(
          "p1",
          "apps/gw",
          scrape(
            1,
            readings.map(([h, c, n]) => req("subroute", h, c, n)),
          ),
          routeOf,
        );
        const known = new Set(["", ...routes.map(r => r.route)]);
        for (const { labels } of t.totals()) {
          expect(known.has(labels.route)).toBe(true);
          expect(labels.code).toMatch(/^([1-9][0-9]{2})?$/);
        }
        // routes (4 with "") × codes (900 + "") bounds the series; hosts never appear
        expect(t.totals().length).toBeLessThanOrEqual(known.size * 901);
        expect(JSON.stringify(t.totals())).not.toContain('"host"');
      }),
    );
  });
});

describe("gatewayRoutes", () => {
  const parentRef = fc.record(
    {
      name: fc.constantFrom("a", "b"),
      namespace: fc.constantFrom("x", "y"),
      kind: fc.constantFrom("Gateway", "ListenerSet"),
    },
    { requiredKeys: ["name"] },
  );
  const route = fc.record({
    kind: fc.constantFrom("HTTPRoute", "GRPCRoute"),
    name: fc.constantFrom("r1", "r2", "r3", "R0", "r10"),
    namespace: fc.constantFrom("x", "y"),
    hostnames: fc.array(fc.constantFrom("h.test", "*.test"), { maxLength: 2 }),
    parentRefs: fc.array(parentRef, { maxLength: 3 }),
  });

  /** What each Gateway's list must be: its routes by parentRef, each once, sorted. */
  const expected = (objects: readonly KubeObject[], ns: string, name: string) =>
    ["HTTPRoute", "GRPCRoute"]
      .flatMap(kind => objects.filter(o => o.kind === kind))
      .filter(o =>
        (
          (
            o as unknown as {
              spec: { parentRefs: { name: string; namespace?: string; kind?: string }[] };
            }
          ).spec.parentRefs ?? []
        ).some(
          p =>
            (p.kind ?? "Gateway") === "Gateway" &&
            p.name === name &&
            (p.namespace ?? o.metadata.namespace) === ns,
        ),
      )
      .map(o => ({
        route: `${o.metadata.namespace}/${o.metadata.name}`,
        hostnames: (o as unknown as { spec: { hostnames: string[] } }).spec.hostnames,
      }))
      .sort((p, q) => (p.route < q.route ? -1 : p.route > q.route ? 1 : 0));

  it("gives every Gateway its attached routes, once each, sorted, as a scan per Gateway would", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(route, { selector: r => `${r.kind}/${r.namespace}/${r.name}` }),
        routes => {
          const objects = routes.map(
            r =>
              ({
                apiVersion: "gateway.networking.k8s.io/v1",
                kind: r.kind,
                metadata: { name: r.name, namespace: r.namespace },
                spec: { hostnames: r.hostnames, parentRefs: r.parentRefs },
              }) as KubeObject,
          );
          const snapshot = snapshotOf(objects);
          for (const ns of ["x", "y"])
            for (const name of ["a", "b"])
              expect(gatewayRoutes(snapshot, ns, name)).toEqual(expected(objects, ns, name));
        },
      ),
    );
  });
});
