/**
 * Ingresses through the build stage: an Ingress of our class is served by the Gateway its
 * IngressClass names, a bad one next to it is left out and reported on itself only, one of
 * another class is ignored, synthetic objects get no status writes, and only a changed Ingress
 * is converted again.
 */
import { generateKeyPair, issueServerCertificate } from "../pki/pki";
import { KubeObject, Snapshot, applyAll, snapshotOf } from "../snapshot";
import type { BuildStage } from "./build-stage";
import { IngressStage } from "./ingress-stage";
import {
  EDGE_GATEWAY,
  testBuildStage as stage,
  testCa as ca,
  testNow as now,
  tenantRoute,
} from "./testing/build";

const signing = ca.signing;

const ingress = (name: string, path: string, extra: Record<string, unknown> = {}): KubeObject =>
  ({
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: {
      namespace: "team",
      name,
      uid: `u-${name}`,
      generation: 1,
      creationTimestamp: "2026-11-01T00:00:00Z",
    },
    spec: {
      ingressClassName: "kengine",
      rules: [
        {
          host: `${name}.example.com`,
          http: {
            paths: [
              {
                path,
                pathType: "Prefix",
                backend: { service: { name: "web", port: { name: "http" } } },
              },
            ],
          },
        },
      ],
      ...extra,
    },
  }) as unknown as KubeObject;

const base = snapshotOf([
  ...EDGE_GATEWAY,
  {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace: "team", name: "web" },
    spec: { ports: [{ name: "http", port: 8080, targetPort: 8080 }] },
  },
  {
    apiVersion: "networking.k8s.io/v1",
    kind: "IngressClass",
    metadata: { name: "kengine" },
    spec: {
      controller: "kengine.io/ingress-controller",
      parameters: {
        apiGroup: "gateway.networking.k8s.io",
        kind: "Gateway",
        scope: "Namespace",
        namespace: "apps",
        name: "edge",
      },
    },
  },
  {
    apiVersion: "networking.k8s.io/v1",
    kind: "IngressClass",
    metadata: { name: "nginx" },
    spec: { controller: "k8s.io/ingress-nginx" },
  },
  ingress("good", "/api"),
  ingress("bad", "/(.*)"),
  { ...ingress("other", "/"), spec: { ingressClassName: "nginx", rules: [] } },
] as unknown as KubeObject[]);

const configText = (out: ReturnType<BuildStage["run"]>): string =>
  Buffer.from(out.plans[0]!.targets[0]!.config.bytes).toString();

const upsertOf = (object: KubeObject) =>
  ({ type: "upsert", kind: object.kind as "Ingress", object }) as const;

const upsert = (s: Snapshot, object: KubeObject): Snapshot =>
  applyAll(s, [{ type: "upsert", kind: object.kind as "Ingress", object }]).snapshot;

describe("Ingress through the build stage", () => {
  it("serves a good Ingress on the class's Gateway and reports a bad one on itself", () => {
    const out = stage().run({ snapshot: base, translate: true, ca, now });
    const config = configText(out);
    expect(config).toContain("good.example.com");
    expect(config).toContain("/api");
    expect(config).not.toContain("bad.example.com");
    expect(out.ingresses.get("team/good")).toEqual([]);
    expect(out.ingresses.get("team/bad")?.map(p => p.path)).toEqual([
      "spec.rules[0].http.paths[0].path",
    ]);
    expect(out.ingresses.has("team/other")).toBe(false);
    expect(out.ingressesConverted).toBe(2);
    // Synthetic objects exist only in the build: nothing of them is written as status.
    expect(out.statuses.routes.filter(r => r.namespace === "team")).toEqual([]);
    expect(out.statuses.listenerSets).toEqual([]);
  });

  it("converts again only the Ingress that changed; a status-only update converts none", () => {
    const builder = stage();
    builder.run({ snapshot: base, translate: true, ca, now });
    const fixed = upsert(base, {
      ...ingress("bad", "/fixed"),
      metadata: { ...ingress("bad", "/").metadata, generation: 2 },
    });
    const out = builder.run({ snapshot: fixed, translate: true, ca, now });
    expect(out.ingressesConverted).toBe(1);
    expect(configText(out)).toContain("bad.example.com");
    expect(out.ingresses.get("team/bad")).toEqual([]);
    const echoed = upsert(fixed, {
      ...(fixed.objects.Ingress.get("team/good") as KubeObject),
      status: { loadBalancer: { ingress: [{ ip: "192.0.2.1" }] } },
    } as KubeObject);
    expect(builder.run({ snapshot: echoed, translate: true, ca, now }).ingressesConverted).toBe(0);
  });

  it("a Service's named port change reconverts the Ingresses that use it", () => {
    const builder = stage();
    builder.run({ snapshot: base, translate: true, ca, now });
    const moved = upsert(base, {
      apiVersion: "v1",
      kind: "Service",
      metadata: { namespace: "team", name: "web" },
      spec: { ports: [{ name: "http", port: 9090 }] },
    } as KubeObject);
    const out = builder.run({ snapshot: moved, translate: true, ca, now });
    // The bad Ingress converts to nothing and looked up no Service.
    expect(out.ingressesConverted).toBe(1);
    expect(configText(out)).toContain("good.example.com");
  });

  it("an Ingress leaving the class is no longer served", () => {
    const builder = stage();
    builder.run({ snapshot: base, translate: true, ca, now });
    const left = upsert(base, {
      ...ingress("good", "/api", { ingressClassName: "nginx" }),
      metadata: { ...ingress("good", "/").metadata, generation: 2 },
    });
    const out = builder.run({ snapshot: left, translate: true, ca, now });
    expect(out.ingresses.has("team/good")).toBe(false);
    expect(configText(out)).not.toContain("good.example.com");
  });

  it("an Ingress being deleted, or in a namespace being deleted, is served no more", () => {
    // The conformance suite's pattern: each scenario's namespace is deleted without waiting,
    // and the next scenario's Ingress (newer, so lower in precedence) has the same catch-all.
    const catchAll = (namespace: string, created: string, service: string): KubeObject =>
      ({
        apiVersion: "networking.k8s.io/v1",
        kind: "Ingress",
        metadata: {
          namespace,
          name: "default-backend",
          uid: `u-${namespace}`,
          generation: 1,
          creationTimestamp: created,
        },
        spec: {
          ingressClassName: "kengine",
          defaultBackend: { service: { name: service, port: { number: 8080 } } },
        },
      }) as unknown as KubeObject;
    const namespace = (name: string, deleting: boolean): KubeObject =>
      ({
        apiVersion: "v1",
        kind: "Namespace",
        metadata: { name, ...(deleting ? { deletionTimestamp: "2026-11-28T12:00:05Z" } : {}) },
      }) as unknown as KubeObject;
    const both = [
      catchAll("old", "2026-11-28T12:00:00Z", "old-echo"),
      catchAll("new", "2026-11-28T12:00:04Z", "new-echo"),
      namespace("new", false),
    ];
    const routes = (s: Snapshot) =>
      [...new IngressStage().derive(s).snapshot.objects.HTTPRoute.values()]
        .map(r => r.metadata.namespace)
        .filter(ns => ns !== "team");
    expect(routes(applyAll(base, both.map(upsertOf)).snapshot)).toEqual(["old", "new"]);
    const terminating = applyAll(base, [...both, namespace("old", true)].map(upsertOf)).snapshot;
    expect(routes(terminating)).toEqual(["new"]);
    const ownDeletion = applyAll(
      base,
      [
        ...both.slice(1),
        {
          ...both[0],
          metadata: { ...both[0].metadata, deletionTimestamp: "2026-11-28T12:00:05Z" },
        } as KubeObject,
      ].map(upsertOf),
    ).snapshot;
    expect(routes(ownDeletion)).toEqual(["new"]);
    // Through the build: the catch-all is the newer Ingress's, and the old one is not reported.
    const out = stage().run({ snapshot: terminating, translate: true, ca, now });
    expect(out.ingresses.has("old/default-backend")).toBe(false);
    expect(out.ingresses.has("new/default-backend")).toBe(true);
  });

  it("a real HTTPRoute of a synthetic name wins, reported on the Ingress at every build", () => {
    const first = new IngressStage().derive(base);
    const name = [...first.snapshot.objects.HTTPRoute.values()].find(r =>
      r.metadata.name.startsWith("ingress-good-"),
    )!.metadata.name;
    const taken = upsert(base, {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: { namespace: "team", name },
      spec: { parentRefs: [{ name: "elsewhere" }] },
    } as KubeObject);
    const stage = new IngressStage();
    for (const s of [taken, taken, { ...taken }]) {
      const d = stage.derive(s as Snapshot);
      expect(d.problems.get("team/good")?.map(p => p.path)).toEqual(["metadata.name"]);
      expect(d.snapshot.objects.HTTPRoute.get(`team/${name}`)?.spec).toEqual({
        parentRefs: [{ name: "elsewhere" }],
      });
    }
  });

  it("reads the ingress-nginx annotations once the class opts in, and reconverts on the flip", () => {
    const P = "nginx.ingress.kubernetes.io/";
    const annotated = (name: string, annotations: Record<string, string>): KubeObject => {
      const o = ingress(name, "/api");
      return { ...o, metadata: { ...o.metadata, annotations } } as KubeObject;
    };
    const s = applyAll(
      base,
      [
        annotated("moved", { [`${P}permanent-redirect`]: "https://new.example.org/shop" }),
        annotated("rewritten", {
          [`${P}rewrite-target`]: "/v2",
          [`${P}upstream-vhost`]: "internal.example.org",
          [`${P}proxy-read-timeout`]: "42",
          [`${P}proxy-connect-timeout`]: "7",
          [`${P}proxy-send-timeout`]: "9s",
          [`${P}affinity`]: "cookie",
          [`${P}session-cookie-samesite`]: "Strict",
          [`${P}app-root`]: "/home",
          [`${P}proxy-body-size`]: "8m",
          [`${P}whitelist-source-range`]: "10.0.0.0/8",
        }),
        {
          apiVersion: "discovery.k8s.io/v1",
          kind: "EndpointSlice",
          metadata: {
            namespace: "team",
            name: "web-x1",
            labels: { "kubernetes.io/service-name": "web" },
          },
          ports: [{ name: "http", port: 8080 }],
          endpoints: [{ addresses: ["10.244.0.9"] }],
        } as unknown as KubeObject,
      ].map(upsertOf),
    ).snapshot;
    const builder = stage();
    const plain = configText(builder.run({ snapshot: s, translate: true, ca, now }));
    expect(plain).not.toContain("new.example.org");
    expect(plain).not.toContain("internal.example.org");
    const cls = s.objects.IngressClass.get("kengine")!;
    const optedIn = upsert(s, {
      ...cls,
      metadata: {
        ...cls.metadata,
        annotations: { "kengine.io/ingress-nginx-annotations": "true" },
      },
    } as KubeObject);
    const out = builder.run({ snapshot: optedIn, translate: true, ca, now });
    expect(out.ingressesConverted).toBe(4);
    expect(out.ingresses.get("team/moved")).toEqual([]);
    expect(out.ingresses.get("team/rewritten")).toEqual([]);
    const config = configText(out);
    expect(config).toContain("https://new.example.org/shop");
    expect(config).toContain("internal.example.org");
    expect(config).toContain('"/v2');
    expect(config).toContain("/home");
    expect(config).toContain(
      '"response_header_timeout":"42000ms","dial_timeout":"7000ms","write_timeout":"9000ms"',
    );
    expect(config).toContain('"policy":"kengine_session","mode":"cookie","name":"INGRESSCOOKIE"');
    expect(config).toContain('"same_site":"Strict"');
    expect(plain).not.toContain("same_site");
    // proxy-body-size: Caddy's request_body handler first in the Ingress's route
    expect(config).toContain('{"handler":"request_body","max_size":8388608}');
    expect(plain).not.toContain("request_body");
    // whitelist-source-range: a 403 for any client outside the range, first in the route
    expect(config).toContain(
      '{"handler":"subroute","routes":[{"match":[{"not":[{"remote_ip":{"ranges":["10.0.0.0/8"]}}]}],"handle":[{"handler":"static_response","status_code":403}]}]},{"handler":"request_body"',
    );
    expect(config).toContain("10.244.0.9:8080");
  });

  it("a tenant's HTTPRoute carrying the connection-timeout or SameSite rule field gets neither", () => {
    const tenant = tenantRoute({
      sessionPersistence: { type: "Cookie", sessionName: "own" },
      "x-kengine-proxy-timeouts": { connect: 7, send: 9 },
      "x-kengine-session-same-site": "None",
    });
    const slice = {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        namespace: "team",
        name: "web-x1",
        labels: { "kubernetes.io/service-name": "web" },
      },
      ports: [{ name: "http", port: 8080 }],
      endpoints: [{ addresses: ["10.244.0.9"] }],
    } as unknown as KubeObject;
    const snapshot = upsert(upsert(base, slice), tenant);
    const config = configText(stage().run({ snapshot, translate: true, ca, now }));
    expect(config).toContain("own.example.com");
    expect(config).toContain('"policy":"kengine_session","mode":"cookie","name":"own"');
    expect(config).not.toContain("dial_timeout");
    expect(config).not.toContain("write_timeout");
    expect(config).not.toContain("same_site");
  });

  it("ssl-redirect: the Gateway's HTTP listener redirects a tls host, its ListenerSet serves it", () => {
    const issued = issueServerCertificate(signing, {
      commonName: "tls.example.com",
      dnsNames: ["tls.example.com"],
      keys: generateKeyPair(),
      notBefore: now,
      lifetimeDays: 30,
    });
    if (!issued.ok) throw new Error(issued.error);
    const gw = base.objects.Gateway.get("apps/edge")!;
    const cls = base.objects.IngressClass.get("kengine")!;
    const tls = ingress("tls", "/api", {
      tls: [{ hosts: ["tls.example.com"], secretName: "tls-cert" }],
    });
    const s = applyAll(
      base,
      [
        {
          ...gw,
          spec: {
            ...(gw.spec as object),
            allowedListeners: { namespaces: { from: "All" } },
          },
        } as KubeObject,
        {
          ...cls,
          metadata: {
            ...cls.metadata,
            annotations: { "kengine.io/ingress-nginx-annotations": "true" },
          },
        } as KubeObject,
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { namespace: "team", name: "tls-cert" },
          type: "kubernetes.io/tls",
          data: {
            "tls.crt": Buffer.from(issued.value.certificatePem).toString("base64"),
            "tls.key": Buffer.from(issued.value.privateKey.reveal()).toString("base64"),
          },
        } as unknown as KubeObject,
        tls,
      ].map(upsertOf),
    ).snapshot;
    const out = stage().run({ snapshot: s, translate: true, ca, now });
    expect(out.ingresses.get("team/tls")).toEqual([]);
    const config = JSON.parse(configText(out)) as {
      apps: { http: { servers: Record<string, unknown> } };
    };
    const servers = config.apps.http.servers;
    const http = JSON.stringify(servers["http-80"]);
    expect(http).toContain('"status_code":308');
    expect(http).toContain("https://{http.request.host}");
    const https = JSON.stringify(
      Object.entries(servers).find(([name]) => name.includes("443"))?.[1],
    );
    expect(https).toContain("tls.example.com");
    expect(https).not.toContain('"status_code":308');
  });
});
