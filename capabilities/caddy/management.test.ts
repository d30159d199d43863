import { createHash } from "node:crypto";
import { inspect } from "node:util";
import {
  adminAddressProblem,
  bootstrapConfig,
  checkConfig,
  checkSpec,
  MANAGEMENT_SERVER,
  ManagementSpec,
  READINESS_SERVER,
  withManagement,
} from "./management";
import {
  exactHosts,
  isSealed,
  SealedConfig,
  sealConfig,
  TRAFFIC_METRICS,
  withTrafficMetrics,
} from "./seal";
import fc from "fast-check";
import { createAuthority, generateKeyPair, issueServerCertificate } from "../pki/pki";
import { Result } from "../result";
import type { PlainConfig } from "./types";

const must = <T, E>(r: Result<T, E>): T => {
  if (!r.ok) throw new Error(JSON.stringify(r.error));
  return r.value;
};
const start = new Date("2026-11-21T10:00:00Z");
const ca = must(
  createAuthority({
    commonName: "test CA",
    keys: generateKeyPair(),
    notBefore: start,
    lifetimeDays: 3650,
  }),
);
const spec: ManagementSpec = {
  listenAddress: "{env.KENGINE_POD_IP}:9443",
  adminAddress: "unix//tmp/kengine-admin.sock",
  serverCertTag: "kengine-management",
  clientCaPem: ca.certificatePem,
  serverCertificate: {
    kind: "files",
    certificateFile: "/etc/kengine/management/tls.crt",
    keyFile: "/etc/kengine/management/tls.key",
  },
  readinessAddress: ":8081",
};

type Json = { [key: string]: any }; // eslint-disable-line @typescript-eslint/no-explicit-any
const app = (extra: Json = {}): Json =>
  must(
    withManagement(
      {
        ...extra,
        apps: {
          ...extra.apps,
          http: {
            servers: {
              gw: {
                listen: [":80"],
                routes: [{ handle: [{ handler: "static_response", body: "hi" }] }],
              },
            },
          },
        },
      },
      spec,
    ),
  ) as Json;

describe("bootstrapConfig", () => {
  const boot = must(bootstrapConfig(spec)) as Json;

  it("serves only the management listener, with admin on the unix socket and never autosaved", () => {
    expect(boot.admin).toEqual({
      listen: "unix//tmp/kengine-admin.sock",
      config: { persist: false },
    });
    expect(Object.keys(boot.apps).sort()).toEqual(["http", "tls"]);
    expect(Object.keys(boot.apps.http.servers)).toEqual([MANAGEMENT_SERVER]);
    expect(boot.apps.http.servers[READINESS_SERVER]).toBeUndefined();
    expect(boot.apps.tls).toEqual({
      certificates: {
        load_files: [
          {
            certificate: "/etc/kengine/management/tls.crt",
            key: "/etc/kengine/management/tls.key",
            tags: ["kengine-management"],
          },
        ],
      },
    });
  });

  it("requires controller-CA client certificates and forwards only to the admin socket with a Host it accepts", () => {
    const server = boot.apps.http.servers[MANAGEMENT_SERVER];
    expect(server.listen).toEqual(["{env.KENGINE_POD_IP}:9443"]);
    expect(server.automatic_https).toEqual({ disable: true });
    expect(server.protocols).toEqual(["h1", "h2"]);
    expect(server.tls_connection_policies).toEqual([
      {
        certificate_selection: { any_tag: ["kengine-management"] },
        client_authentication: {
          ca: { provider: "inline", trusted_ca_certs: [ca.certificateDer.toString("base64")] },
          mode: "require_and_verify",
        },
      },
    ]);
    expect(server.routes).toEqual([
      {
        handle: [
          {
            handler: "reverse_proxy",
            upstreams: [{ dial: "unix//tmp/kengine-admin.sock" }],
            headers: { request: { set: { Host: ["127.0.0.1"] } } },
          },
        ],
      },
    ]);
  });

  it("trusts several CAs during a rotation", () => {
    const next = must(
      createAuthority({
        commonName: "next CA",
        keys: generateKeyPair(),
        notBefore: start,
        lifetimeDays: 3650,
      }),
    );
    const both = must(
      bootstrapConfig({ ...spec, clientCaPem: [ca.certificatePem, next.certificatePem] }),
    ) as Json;
    expect(
      both.apps.http.servers[MANAGEMENT_SERVER].tls_connection_policies[0].client_authentication.ca
        .trusted_ca_certs,
    ).toEqual([ca.certificateDer.toString("base64"), next.certificateDer.toString("base64")]);
    expect(checkSpec({ ...spec, clientCaPem: [] })).toHaveLength(1);
  });

  it("refuses a spec with an admin that is not a unix socket, shared ports or a CA that is not a certificate", () => {
    expect(checkSpec(spec)).toEqual([]);
    for (const tcp of ["127.0.0.1:2019", "localhost:2019", "[::1]:2019", "0.0.0.0:2019"])
      expect(checkSpec({ ...spec, adminAddress: tcp })).toEqual([
        expect.stringContaining("never a TCP address"),
      ]);
    expect(checkSpec({ ...spec, adminAddress: "10.0.0.1:2019" })).toHaveLength(1);
    expect(checkSpec({ ...spec, readinessAddress: ":9443" })).toEqual([
      expect.stringContaining("must differ"),
    ]);
    expect(checkSpec({ ...spec, clientCaPem: "x" })).toEqual([
      expect.stringContaining("clientCaPem"),
    ]);
    expect(bootstrapConfig({ ...spec, adminAddress: ":2019" }).ok).toBe(false);
  });

  it.each([
    ["127.0.0.1:2019", "never a TCP address"],
    ["tcp/127.0.0.1:2019", "never a TCP address"],
    [":2019", "never a TCP address"],
    ["", "never a TCP address"],
    [undefined, "never a TCP address"],
    [2019, "never a TCP address"],
    ["unixgram//tmp/a.sock", "never a TCP address"],
    ["/tmp/kengine-admin.sock", "never a TCP address"],
    ["unix/tmp/kengine-admin.sock", "absolute"],
    ["unix/@kengine-admin", "absolute"],
    ["unix//tmp/kengine-admin.sock|0777", "permission suffix"],
    ["unix//tmp/{env.X}.sock", "placeholder"],
    ["unix//tmp/kengine admin.sock", "space"],
    [`unix//${"d".repeat(100)}/admin.sock`, "longer than 107 bytes"],
  ])("an admin address %j is refused (%s)", (address, message) => {
    expect(adminAddressProblem(address)).toContain(message);
  });

  it.each([
    "unix//tmp/kengine-admin.sock",
    "unix/{env.KG_ADMIN_SOCKET}",
    `unix//${"d".repeat(95)}/admin.sock`,
  ])("an admin address %j is a unix socket", address => {
    expect(adminAddressProblem(address)).toBeUndefined();
    expect(checkSpec({ ...spec, adminAddress: address })).toEqual([]);
  });

  it("loads an inline serving key only through load_pem, and the spec does not print it", () => {
    const leaf = must(
      issueServerCertificate(ca, {
        commonName: "p",
        dnsNames: ["*.p.ns.svc"],
        keys: generateKeyPair(),
        notBefore: start,
        lifetimeDays: 1,
      }),
    );
    const pemSpec: ManagementSpec = {
      ...spec,
      serverCertificate: {
        kind: "pem",
        certificatePem: leaf.certificatePem,
        privateKey: leaf.privateKey,
      },
    };
    const boot2 = must(bootstrapConfig(pemSpec)) as Json;
    expect(boot2.apps.tls.certificates.load_pem[0].key).toBe(leaf.privateKey.reveal());
    const keyBody = leaf.privateKey.reveal().split("\n")[1]!;
    expect(JSON.stringify(pemSpec)).not.toContain(keyBody);
    expect(inspect(pemSpec, { depth: 10 })).not.toContain(keyBody);
  });
});

describe("withManagement", () => {
  it("adds management to an app config and keeps the app's own servers and certificates", () => {
    const config = app({
      apps: {
        tls: {
          certificates: { load_files: [{ certificate: "a.crt", key: "a.key", tags: ["gw"] }] },
        },
      },
    });
    expect(Object.keys(config.apps.http.servers).sort()).toEqual([MANAGEMENT_SERVER, "gw"].sort());
    expect(config.apps.tls.certificates.load_files).toHaveLength(2);
  });
  it("refuses to replace an existing management server or a different admin block", () => {
    expect(
      withManagement({ apps: { http: { servers: { [MANAGEMENT_SERVER]: {} } } } }, spec),
    ).toEqual({ ok: false, error: [expect.stringContaining(MANAGEMENT_SERVER)] });
    expect(withManagement({ admin: { listen: "0.0.0.0:2019" } }, spec).ok).toBe(false);
    expect(
      withManagement({ admin: { listen: "127.0.0.1:2019", config: { persist: false } } }, spec).ok,
    ).toBe(false);
  });
});

describe("sealConfig", () => {
  const sealed = must(sealConfig(JSON.stringify(app()), spec));

  it("hashes the desired bytes and adds the readiness server marked with that hash", () => {
    const input = JSON.stringify(app());
    expect(sealed.hash).toBe(createHash("sha256").update(input).digest("hex"));
    const out = JSON.parse(sealed.bytes.toString()) as Json;
    const ready = out.apps.http.servers[READINESS_SERVER];
    expect(ready["@id"]).toBe(`kengine-config-${sealed.hash}`);
    expect(ready.listen).toEqual([":8081"]);
    expect(ready.routes[0]).toEqual({
      match: [{ path: ["/ready"] }],
      handle: [{ handler: "static_response", status_code: 200, body: "ready\n" }],
    });
    // No shutdown delay: Caddy would apply it on a reload that closes a listener (seal.ts).
    expect(out.apps.http.shutdown_delay).toBeUndefined();
    // everything else is the desired config unchanged
    delete out.apps.http.servers[READINESS_SERVER];
    expect(out.apps.http.metrics).toEqual(TRAFFIC_METRICS);
    delete out.apps.http.metrics;
    expect(out).toEqual(JSON.parse(input));
    expect(isSealed(sealed)).toBe(true);
    expect(isSealed({ ...sealed } as SealedConfig)).toBe(false);
  });

  const broken: [string, (c: Json) => void, string][] = [
    ["no management server", c => delete c.apps.http.servers[MANAGEMENT_SERVER], "is missing"],
    [
      "management server without client authentication",
      c =>
        delete c.apps.http.servers[MANAGEMENT_SERVER].tls_connection_policies[0]
          .client_authentication,
      "differs",
    ],
    [
      "management server on another port",
      c => (c.apps.http.servers[MANAGEMENT_SERVER].listen = [":9444"]),
      "differs",
    ],
    ["persist true", c => (c.admin.config.persist = true), "persist"],
    ["persist unset", c => delete c.admin.config, "persist"],
    ["no admin block", c => delete c.admin, "admin block is missing"],
    ["admin on all interfaces", c => (c.admin.listen = ":2019"), "never a TCP address"],
    ["admin on loopback TCP", c => (c.admin.listen = "127.0.0.1:2019"), "never a TCP address"],
    ["admin on localhost", c => (c.admin.listen = "localhost:2019"), "never a TCP address"],
    ["admin on an explicit TCP network", c => (c.admin.listen = "tcp/[::1]:2019"), "TCP"],
    // Caddy listens on its default localhost:2019 when the address is absent or empty
    ["admin listen absent", c => delete c.admin.listen, "never a TCP address"],
    ["admin listen empty", c => (c.admin.listen = ""), "never a TCP address"],
    [
      "admin on another unix socket",
      c => (c.admin.listen = "unix//tmp/other.sock"),
      "admin.listen must be unix//tmp/kengine-admin.sock",
    ],
    [
      "admin socket open to every user",
      c => (c.admin.listen = "unix//tmp/kengine-admin.sock|0777"),
      "permission suffix",
    ],
    ["admin disabled", c => (c.admin.disabled = true), "disabled"],
    ["remote admin", c => (c.admin.remote = { listen: ":2021" }), "admin.remote"],
    ["a config loader", c => (c.admin.config.load = { module: "http" }), "admin.config.load"],
    ["no management certificate", c => delete c.apps.tls, "lacks the management certificate"],
    [
      "another server on the management port",
      c => (c.apps.http.servers.gw.listen = [":9443"]),
      "reserved for kengine-management",
    ],
    [
      "a layer4 server on the readiness port",
      c => (c.apps.layer4 = { servers: { l4: { listen: ["0.0.0.0:8081"] } } }),
      "reserved for kengine-readiness",
    ],
    [
      "a server on the admin socket",
      c => (c.apps.http.servers.gw.listen = ["unix//tmp/kengine-admin.sock"]),
      "only the admin API uses a unix socket",
    ],
    [
      "a layer4 server on another unix socket",
      c => (c.apps.layer4 = { servers: { l4: { listen: ["UNIXPACKET//tmp/x.sock"] } } }),
      "only the admin API uses a unix socket",
    ],
    [
      "a server named like the readiness server",
      c => (c.apps.http.servers[READINESS_SERVER] = { listen: [":1"] }),
      "reserved",
    ],
  ];
  it.each(broken)("refuses a config with %s", (_, breakIt, message) => {
    const config = app();
    breakIt(config);
    const result = sealConfig(JSON.stringify(config), spec);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.join("\n")).toContain(message);
  });

  it("refuses a spec whose admin is on TCP even when the config matches it", () => {
    const tcp = { ...spec, adminAddress: "127.0.0.1:2019" };
    const config = app();
    config.admin.listen = "127.0.0.1:2019";
    config.apps.http.servers[MANAGEMENT_SERVER].routes[0].handle[0].upstreams = [
      { dial: "127.0.0.1:2019" },
    ];
    const checked = checkConfig(config, tcp);
    expect(checked.ok).toBe(false);
    if (!checked.ok)
      expect(checked.error).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^adminAddress must be a unix socket/),
          expect.stringMatching(/^admin\.listen must be a unix socket/),
        ]),
      );
    expect(sealConfig(JSON.stringify(config), tcp).ok).toBe(false);
  });

  it("refuses input that is not a JSON object", () => {
    expect(sealConfig("{", spec).ok).toBe(false);
    expect(sealConfig("[]", spec).ok).toBe(false);
    expect(sealConfig(Buffer.from("null"), spec).ok).toBe(false);
  });

  it("accepts the bootstrap config shape as input (a Gateway with no routes yet)", () => {
    const boot = must(bootstrapConfig(spec)) as PlainConfig;
    expect(sealConfig(JSON.stringify(boot), spec).ok).toBe(true);
  });
});

describe("traffic metrics: series bounded by the configuration", () => {
  /** A traffic server whose host matchers sit inside a subroute, as the translator emits them. */
  const server = (hosts: readonly string[], tls = false): Json => ({
    listen: [":80"],
    ...(tls && { tls_connection_policies: [{ match: { sni: ["a.test"] } }] }),
    routes: [
      {
        group: "listeners",
        handle: [
          {
            handler: "subroute",
            routes: hosts.map(h => ({ match: [{ host: [h] }], handle: [{ handler: "vars" }] })),
          },
        ],
      },
    ],
  });
  const sealedHttp = (servers: Json, mode: "app" | "server" = "app"): Json =>
    JSON.parse(
      must(
        sealConfig(
          JSON.stringify(must(withManagement({ apps: { http: { servers } } }, spec))),
          spec,
          { trafficMetrics: mode },
        ),
      ).bytes.toString(),
    ).apps.http;

  it("HTTP only: per-host labels, and each server names its exact hostnames last (Caddy folds the rest into _other)", () => {
    const http = sealedHttp({
      gw: server(["B.test", "a.test", "*.w.test", "{http.request.host}"]),
    });
    expect(http.metrics).toEqual({ per_host: true });
    expect(http.metrics.observe_catchall_hosts).toBeUndefined();
    // last: after the routes that serve requests, so no request pays for it
    expect(http.servers.gw.routes.at(-1)).toEqual({ match: [{ host: ["a.test", "b.test"] }] });
    expect(http.servers.gw.routes.slice(0, -1)).toEqual(
      server(["B.test", "a.test", "*.w.test", "{http.request.host}"]).routes,
    ); // the routes themselves unchanged
    expect(http.servers[MANAGEMENT_SERVER].routes).toHaveLength(1);
  });

  it("an HTTPS listener anywhere: no host label at all (Caddy labels every Host of an HTTPS request)", () => {
    const http = sealedHttp({ gw: server(["a.test"]), gws: server(["b.test"], true) });
    expect(http.metrics).toEqual({});
    expect(http.servers.gw.routes).toEqual(server(["a.test"]).routes);
  });

  it('mode "server" (Caddy 2.8): no apps.http.metrics, `metrics: {}` on each traffic server only', () => {
    const http = sealedHttp({ gw: server(["a.test"]), gws: server(["b.test"], true) }, "server");
    expect(http.metrics).toBeUndefined();
    expect(http.servers.gw.metrics).toEqual({});
    expect(http.servers.gws.metrics).toEqual({});
    expect(http.servers.gw.routes).toEqual(server(["a.test"]).routes);
    expect(http.servers[MANAGEMENT_SERVER].metrics).toBeUndefined();
    expect(http.servers[READINESS_SERVER].metrics).toBeUndefined();
  });

  it("the hash tells the seals of one desired config apart", () => {
    const desired = JSON.stringify(app());
    const app_ = must(sealConfig(desired, spec, { trafficMetrics: "app" }));
    const server = must(sealConfig(desired, spec, { trafficMetrics: "server" }));
    expect(app_.hash).toBe(createHash("sha256").update(desired).digest("hex"));
    expect(server.hash).not.toBe(app_.hash);
    expect(server.bytes.toString()).toContain(`kengine-config-${server.hash}`);
  });

  it("a config's own apps.http.metrics is kept", () => {
    const own = { per_host: false };
    expect(withTrafficMetrics({ metrics: own, servers: {} }, "app").metrics).toBe(own);
  });

  it("property: the labelled hosts are exactly the configured literal hostnames, lower-cased", () => {
    const label = fc.stringMatching(/^[a-zA-Z0-9-]{1,8}$/);
    const host = fc.oneof(
      fc.array(label, { minLength: 1, maxLength: 3 }).map(l => l.join(".")),
      label.map(l => `*.${l}`),
      label.map(l => `{http.vars.${l}}`),
    );
    fc.assert(
      fc.property(fc.array(fc.array(host, { maxLength: 5 }), { maxLength: 4 }), groups => {
        const routes = groups.map(g => ({
          handle: [{ handler: "subroute", routes: [{ match: [{ host: g }] }] }],
        }));
        const literal = new Set(
          groups
            .flat()
            .filter(h => !h.includes("*") && !h.includes("{"))
            .map(h => h.toLowerCase()),
        );
        expect(exactHosts(routes)).toEqual([...literal].sort());
      }),
    );
  });
});
