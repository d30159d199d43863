import { liveProxies, type KengineProxy, type PodLike } from "./model";
import { createHash } from "node:crypto";
import { parse } from "yaml";
import { Args, parseArgs } from "./args";
import { configReport, configYAML, parseObjectArg, redact } from "./config";
import { explainRoute, parseRouteArg } from "./explain";
import { REFUSAL, fixtureView, proxy } from "./fixture";
import { runCommand } from "./main";
import { ClusterView, localTranslation, storedRefusals } from "./model";
import { statusReport } from "./status";
import { age, formatTable, useColour } from "./table";

const NOW = new Date("2026-11-28T10:05:00Z");
const healthy = (): ClusterView => {
  const v = fixtureView([
    proxy("gw-kengine-a", "aaaaaaaaaaaa"),
    proxy("gw-kengine-b", "aaaaaaaaaaaa"),
  ]);
  // only the route that is served, no refusals
  return {
    ...v,
    objects: v.objects.filter(o => !["copy", "other", "refused"].includes(o.metadata.name)),
  };
};

function run(
  argv: string[],
  view: ClusterView,
  colour = false,
): { code: number; out: string; err: string } {
  let out = "";
  let err = "";
  const args = parseArgs(argv);
  if (typeof args === "string") throw new Error(args);
  const code = runCommand(args as Args, view, "default", {
    out: t => (out += `${t}\n`),
    err: t => (err += `${t}\n`),
    colour,
    now: () => NOW,
  });
  return { code, out, err };
}

describe("table", () => {
  it("pads columns like kubectl get, <none> for empty cells, no colour off a terminal", () => {
    expect(
      formatTable(
        ["name", "ready"],
        [
          ["a", "1/2"],
          ["longer", undefined],
        ],
      ),
    ).toBe(["NAME     READY", "a        1/2", "longer   <none>"].join("\n"));
  });
  it("colours only when asked, and only a terminal without NO_COLOR asks", () => {
    const t = formatTable(["s"], [[{ text: "False", tone: "bad" }]], true);
    expect(t).toContain("\u001b[31mFalse\u001b[0m");
    expect(useColour({ isTTY: true }, {})).toBe(true);
    expect(useColour({ isTTY: false }, {})).toBe(false);
    expect(useColour({ isTTY: true }, { NO_COLOR: "1" })).toBe(false);
  });
  it("prints ages as kubectl does", () => {
    expect(age("2026-11-28T10:04:30Z", NOW)).toBe("30s");
    expect(age("2026-11-28T09:00:00Z", NOW)).toBe("65m");
    expect(age("2026-11-25T10:05:00Z", NOW)).toBe("3d");
  });
});

describe("arguments", () => {
  it("parses flags in any order", () => {
    expect(
      parseArgs(["config", "-n", "shop", "gw", "--object=HTTPRoute/shop/web", "-o", "json"]),
    ).toEqual({
      command: "config",
      positional: ["gw"],
      namespace: "shop",
      allNamespaces: false,
      output: "json",
      object: "HTTPRoute/shop/web",
      help: false,
    });
    expect(parseArgs(["status", "--bogus"])).toBe("unknown flag --bogus");
    expect(parseArgs(["status", "-o", "xml"])).toMatch(/json, yaml or table/);
  });
  it("reads route and object references", () => {
    expect(parseRouteArg("web")).toEqual({ kind: "HTTPRoute", name: "web" });
    expect(parseRouteArg("grpcroute/api")).toEqual({ kind: "GRPCRoute", name: "api" });
    expect(parseRouteArg("gateway/x")).toBeUndefined();
    expect(parseObjectArg("httproute/default/web")).toBe("HTTPRoute default/web");
    expect(parseObjectArg("Listener/default/gw/http")).toBe("Listener default/gw/http");
    expect(parseObjectArg("HTTPRoute/web")).toBeUndefined();
  });
});

describe("the controller's refusals, read back from status", () => {
  it("finds the refused route and leaves it out of the local translation, as the controller does", () => {
    const view = fixtureView();
    expect(storedRefusals(view.objects)).toEqual([
      {
        kind: "HTTPRoute",
        namespace: "default",
        name: "refused",
        gateway: "default/gw",
        reason: "loading new config: bad regexp",
      },
    ]);
    const t = localTranslation(view);
    const hosts = t.gateways[0]!.httpServers.flatMap(s =>
      s.listeners.flatMap(l => l.routes.map(e => e.match.hostname)),
    );
    expect(hosts).not.toContain("api.example.com");
    const refused = t.statuses.routes.find(r => r.name === "refused")!;
    expect(refused.parents[0]!.conditions.find(c => c.type === "Accepted")!.message).toBe(REFUSAL);
  });
});

describe("status", () => {
  it("counts proxies and routes and lists every problem with the controller's words", () => {
    const r = statusReport(fixtureView(), NOW);
    expect(r.ok).toBe(false);
    const g = r.gateways[0]!;
    expect(g.proxies).toMatchObject({ synced: 1, total: 2 });
    expect(g.routes).toEqual({ attached: 4, accepted: 2 });
    expect(g.refused.map(x => `${x.namespace}/${x.name} ${x.condition} ${x.reason}`)).toEqual([
      "team/other Accepted NotAllowedByListeners",
      "team/other ResolvedRefs RefNotPermitted",
      "default/refused Accepted UnsupportedValue",
    ]);
    expect(g.problems[0]).toMatch(/^proxy gw-kengine-b: not running the current config/);
    expect(g.certificates).toEqual([
      expect.objectContaining({
        usedBy: "proxy gw-kengine-a (admin channel)",
        notAfter: "2027-11-28T10:00:00Z",
      }),
      expect.objectContaining({ usedBy: "proxy gw-kengine-b (admin channel)" }),
    ]);
  });

  it("exits 1 when something is wrong, 0 when all is well, 2 for an unknown Gateway", () => {
    const bad = run(["status"], fixtureView());
    expect(bad.code).toBe(1);
    expect(bad.out.split("\n")[0]).toMatch(/^NAMESPACE\s+NAME\s+CLASS\s+PROGRAMMED\s+PROXIES/);
    expect(bad.out).toMatch(/default\s+gw\s+kengine\s+True\s+1\/2\s+5m\s+2\/4\s+3\s+2027-11-28/);
    expect(bad.out).toContain(
      `HTTPRoute default/refused: Accepted=False UnsupportedValue: ${REFUSAL}`,
    );
    const good = run(["status", "-n", "default"], healthy());
    expect(good.code).toBe(0);
    expect(good.out).toMatch(/^NAME\s+CLASS/);
    expect(good.out).toMatch(/gw\s+kengine\s+True\s+2\/2\s+5m\s+1\/1\s+0/);
    expect(run(["status", "nope"], healthy()).code).toBe(2);
  });

  it("prints stable JSON", () => {
    const r = JSON.parse(run(["status", "-o", "json"], healthy()).out);
    expect(Object.keys(r)).toEqual(["gateways", "unreadable", "ok"]);
    expect(Object.keys(r.gateways[0])).toEqual([
      "namespace",
      "name",
      "gatewayClassName",
      "accepted",
      "programmed",
      "proxies",
      "lastSyncTime",
      "routes",
      "refused",
      "certificates",
      "problems",
    ]);
  });
});

describe("explain", () => {
  const view = fixtureView();
  const t = localTranslation(view);
  const explain = (namespace: string, name: string) =>
    explainRoute(view, t, { kind: "HTTPRoute", namespace, name })!;

  it("a served route: its hostname, path, listener and the pods it is pending on", () => {
    const r = explain("default", "web");
    expect(r.rows).toEqual([
      {
        hostname: "shop.example.com",
        path: "PathPrefix /",
        gateway: "default/gw",
        listener: "default/gw/http",
        port: 80,
        served: true,
        proxies: { synced: 1, total: 2, pending: ["gw-kengine-b"] },
        why: "pending on gw-kengine-b (not yet running the current config)",
      },
    ]);
    expect(r.notes).toEqual([]);
  });

  it("a shadowed route: by which route and under which precedence rule", () => {
    const r = explain("default", "copy");
    expect(r.rows[0]).toMatchObject({
      served: false,
      shadowedBy: "HTTPRoute default/web (rule 0, match 0)",
    });
    expect(r.rows[0]!.why).toMatch(/identical match.*older route/);
  });

  it("a route not attached: the condition, verbatim", () => {
    const r = explain("team", "other");
    expect(r.ok).toBe(false);
    expect(r.rows[0]).toMatchObject({ served: false });
    expect(r.rows[0]!.why).toMatch(
      /^Gateway default\/gw: Accepted=False NotAllowedByListeners: no listener allows/,
    );
  });

  it("a route the proxies refused: their words", () => {
    const r = explain("default", "refused");
    expect(r.rows[0]!.why).toContain("bad regexp");
    expect(r.notes).toEqual([]); // the local translation agrees with the stored status
  });

  it("exits 0 only when every part is served and current", () => {
    expect(run(["explain", "web"], healthy()).code).toBe(0);
    expect(run(["explain", "copy"], view).code).toBe(1);
    expect(run(["explain", "nope"], view).code).toBe(2);
  });
});

describe("config", () => {
  it("without the last-good Secret: the desired config, said so, with each part's objects", () => {
    const view = fixtureView();
    const r = configReport(view, localTranslation(view), "default/gw")!;
    expect(r.source).toBe("desired");
    expect(r.proxies.map(p => p.runsThisConfig)).toEqual([undefined, undefined]);
    expect(r.provenance).toContainEqual({
      path: "/apps/http/servers/http-80/routes/0/handle/0/hosts/shop.example.com/0",
      sources: ["HTTPRoute default/web"],
    });
    const only = configReport(view, localTranslation(view), "default/gw", {
      object: "HTTPRoute default/copy",
    })!;
    expect(only.provenance.every(p => p.sources.includes("HTTPRoute default/copy"))).toBe(true);
    expect(Object.keys(only.config as object)).toEqual(only.provenance.map(p => p.path));
    const yaml = configYAML(only);
    expect(yaml).toContain("# from HTTPRoute default/copy");
    expect(parse(yaml).source).toBe("desired");
  });

  it("with the last-good Secret: what the proxies run, which proxy runs it, parts that differ", () => {
    const base = fixtureView();
    const desired = configReport(base, localTranslation(base), "default/gw")!.config as {
      apps: { http: { servers: Record<string, { routes: unknown[] }> } };
    };
    const running = structuredClone(desired);
    // (a backend of the route table, shared dispatch, as the proxy would run it differently)
    const table = (
      running.apps.http.servers["http-80"]!.routes as {
        handle: { backends: Record<string, { flush_interval?: number }> }[];
      }[]
    )[0]!.handle[0]!;
    const backend = Object.keys(table.backends)[0]!;
    table.backends[backend]!.flush_interval = -1;
    const bytes = JSON.stringify(running);
    const hash = createHash("sha256").update(bytes).digest("hex");
    const secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: "gw-kengine-last-good",
        namespace: "default",
        annotations: {
          "gateway.kengine.io/config-hash": hash,
          "gateway.kengine.io/config-key": "bundled",
          "gateway.kengine.io/config-stored": "true",
        },
      },
      data: { bundled: Buffer.from(bytes).toString("base64") },
    };
    const view = fixtureView([
      proxy("gw-kengine-a", hash.slice(0, 12), hash.slice(0, 12)),
      proxy("gw-kengine-b", "bbbbbbbbbbbb", hash.slice(0, 12)),
    ]);
    const v2 = { ...view, objects: [...view.objects, secret] };
    const r = configReport(v2, localTranslation(v2), "default/gw")!;
    expect(r.source).toBe("running");
    expect(r.hash).toBe(hash);
    expect(r.proxies.map(p => [p.pod, p.runsThisConfig])).toEqual([
      ["gw-kengine-a", true],
      ["gw-kengine-b", false],
    ]);
    expect(r.sourceDetail).toContain("running now on gw-kengine-a");
    expect(
      r.provenance.find(
        p => p.path === `/apps/http/servers/http-80/routes/0/handle/0/backends/${backend}`,
      )!.matchesDesired,
    ).toBe(false);
    expect(r.provenance.find(p => p.path.endsWith("/shop.example.com/0"))!.matchesDesired).toBe(
      true,
    );
  });

  it("never prints a private key", () => {
    const pem = "-----BEGIN EC PRIVATE KEY-----\nabc\n-----END EC PRIVATE KEY-----\n";
    expect(redact({ tls: [{ certificate: "-----BEGIN CERTIFICATE-----", key: pem }] })).toEqual({
      tls: [{ certificate: "-----BEGIN CERTIFICATE-----", key: "<private key: not shown>" }],
    });
  });

  it("finds the Gateway from a proxy's name", () => {
    const r = run(["config", "gw-kengine-b", "-o", "json"], fixtureView());
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out);
    expect(out.gateway).toBe("default/gw");
    expect(out.proxies.map((p: { pod: string }) => p.pod)).toEqual(["gw-kengine-b"]);
  });
});

describe("liveProxies", () => {
  const proxy = (name: string, pod?: string): KengineProxy => ({
    metadata: { name, namespace: "ns" },
    ...(pod ? { spec: { pod } } : {}),
  });
  const pod = (name: string, deleting = false, namespace = "ns"): PodLike => ({
    metadata: {
      name,
      namespace,
      ...(deleting ? { deletionTimestamp: "2026-11-28T00:00:00Z" } : {}),
    },
  });

  it("keeps the records of running pods, drops those of gone and terminating pods", () => {
    const kept = liveProxies(
      [proxy("a", "a"), proxy("b", "b"), proxy("c", "c"), proxy("d")],
      [pod("a"), pod("b", true), pod("c", false, "other"), pod("d")],
    );
    expect(kept.map(p => p.metadata.name)).toEqual(["a", "d"]);
  });
});
