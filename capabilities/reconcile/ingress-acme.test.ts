/**
 * Automatic HTTPS for Ingress `tls` entries without a Secret (docs/ingress.md, "Automatic
 * HTTPS"): the class's (or the Ingress's) issuer, granted to the Ingress's namespace, ordered
 * into the Gateway's namespace; only the listeners the Ingress stage made are ordered for and
 * answered (a tenant's copy of one, same name, labels, annotations and owner, gets nothing);
 * the oldest Ingress wins a host across namespaces; the Gateway's own names stay the platform's.
 */
import { wantedNames } from "../acme/issuers";
import type { GatewayIR } from "../ir";
import { KubeObject, Snapshot, snapshotOf } from "../snapshot";
import { withHttp01Answers } from "../translate/acme";
import {
  ACME_ISSUER_OPTION,
  ACME_LISTENERSET_MESSAGE,
  AcmeAnnotation,
  acmeSecretLabels,
  acmeSecretName,
  ingressAcmeWarnings,
  isIngressAcmeListener,
} from "../validation/acme";
import type { StatusResults } from "../translate";
import { IngressStage, splitIngressStatuses } from "./ingress-stage";

const GWAPI = "gateway.networking.k8s.io/v1";
const objects = (classIssuer: string): KubeObject[] =>
  [
    {
      apiVersion: GWAPI,
      kind: "GatewayClass",
      metadata: { name: "kengine" },
      spec: {
        controllerName: "kengine.io/gateway-controller",
        parametersRef: {
          group: "gateway.kengine.io",
          kind: "KengineParameters",
          name: "platform",
          namespace: "infra",
        },
      },
    },
    {
      apiVersion: "gateway.kengine.io/v1alpha1",
      kind: "KengineParameters",
      metadata: { name: "platform", namespace: "infra" },
      spec: {
        acme: {
          issuers: [
            {
              name: "le",
              server: "https://acme.example/dir",
              allowedNamespaces: {
                from: "Selector",
                selector: { matchLabels: { acme: "yes" } },
              },
            },
          ],
        },
      },
    },
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "infra" } },
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "apps", labels: { acme: "yes" } } },
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "team", labels: { acme: "yes" } } },
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "other", labels: { acme: "yes" } } },
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "outsider" } },
    {
      apiVersion: GWAPI,
      kind: "Gateway",
      metadata: { namespace: "apps", name: "edge", uid: "g1" },
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
            name: "platform",
            port: 443,
            protocol: "HTTPS",
            hostname: "platform.example.com",
            tls: { options: { [ACME_ISSUER_OPTION]: "le" } },
          },
        ],
      },
      status: { addresses: [{ type: "IPAddress", value: "127.20.0.9" }] },
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { namespace: "team", name: "web" },
      spec: { ports: [{ name: "http", port: 8080 }] },
    },
    {
      apiVersion: "networking.k8s.io/v1",
      kind: "IngressClass",
      metadata: {
        name: "kengine",
        ...(classIssuer && { annotations: { [ACME_ISSUER_OPTION]: classIssuer } }),
      },
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
  ] as unknown as KubeObject[];

const ingress = (
  namespace: string,
  name: string,
  hosts: string[],
  created = "2026-11-01T00:00:00Z",
  annotations: Record<string, string> = {},
): KubeObject =>
  ({
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: {
      namespace,
      name,
      uid: `u-${namespace}-${name}`,
      generation: 1,
      creationTimestamp: created,
      annotations,
    },
    spec: {
      ingressClassName: "kengine",
      tls: [{ hosts }],
      rules: hosts.map(host => ({
        host,
        http: {
          paths: [
            {
              path: "/",
              pathType: "Prefix",
              backend: { service: { name: "web", port: { name: "http" } } },
            },
          ],
        },
      })),
    },
  }) as unknown as KubeObject;

/** `classIssuer` "": the class names none. */
const derive = (extra: KubeObject[], classIssuer = "le") =>
  new IngressStage().derive(snapshotOf([...objects(classIssuer), ...extra]));
const names = (s: Snapshot) =>
  wantedNames(s).map(w => `${w.namespace}/${w.secretName} ${w.issuerName}`);

describe("automatic HTTPS for Ingress", () => {
  it("orders the class's issuer for a granted namespace, into the Gateway's namespace", () => {
    const d = derive([ingress("team", "shop", ["shop.example.com"])]);
    expect(d.problems.get("team/shop")).toBeUndefined();
    const ls = [...d.snapshot.objects.ListenerSet.values()][0]!;
    expect(ls.spec.listeners![0]).toMatchObject({
      hostname: "shop.example.com",
      tls: { mode: "Terminate", options: { [ACME_ISSUER_OPTION]: "le" } },
    });
    expect(ls.spec.listeners![0]!.tls!.certificateRefs).toBeUndefined();
    expect(names(d.snapshot)).toEqual([
      "apps/kengine-acme-platform.example.com le",
      "apps/kengine-acme-shop.example.com le",
    ]);
  });

  it("the Ingress's own annotation names the issuer when the class names none; none: not served", () => {
    const own = derive(
      [ingress("team", "a", ["a.example.com"], undefined, { [ACME_ISSUER_OPTION]: "le" })],
      "",
    );
    expect(names(own.snapshot)).toContain("apps/kengine-acme-a.example.com le");
    const none = derive([ingress("team", "a", ["a.example.com"])], "");
    expect(none.problems.get("team/a")).toEqual([
      expect.objectContaining({
        path: "spec.tls[0].secretName",
        message: expect.stringContaining(`names an ACME issuer (annotation ${ACME_ISSUER_OPTION})`),
      }),
    ]);
  });

  it("refuses wildcard hosts, and orders nothing for a namespace the issuer does not grant", () => {
    const wild = derive([ingress("team", "w", ["*.example.com"])]);
    expect(wild.problems.get("team/w")).toEqual([
      expect.objectContaining({ message: expect.stringContaining("DNS-01") }),
    ]);
    const out = derive([ingress("outsider", "x", ["x.example.com"])]);
    expect(names(out.snapshot)).toEqual(["apps/kengine-acme-platform.example.com le"]);
  });

  it("never orders for the Gateway's own names on behalf of an Ingress", () => {
    const d = derive([ingress("team", "p", ["platform.example.com"])]);
    const w = wantedNames(d.snapshot);
    expect(w).toHaveLength(1);
    expect(w[0]!.listeners).toEqual([{ gateway: "apps/edge", listener: "platform" }]);
  });

  it("gives a host to the oldest Ingress across namespaces; the other is reported", () => {
    const d = derive([
      ingress("other", "late", ["shop.example.com"], "2026-11-02T00:00:00Z"),
      ingress("team", "early", ["shop.example.com"], "2026-11-01T00:00:00Z"),
    ]);
    expect(d.problems.get("team/early")).toBeUndefined();
    expect(d.problems.get("other/late")?.filter(p => p.path === "spec.tls")).toEqual([
      expect.objectContaining({
        message: expect.stringContaining("older Ingress team/early: not ordered for this one"),
      }),
    ]);
    const marked = [...d.snapshot.objects.ListenerSet.values()].map(ls => [
      ls.metadata.namespace,
      isIngressAcmeListener(ls.spec.listeners![0]!),
    ]);
    expect(marked.sort()).toEqual([
      ["other", false],
      ["team", true],
    ]);
    const w = wantedNames(d.snapshot).filter(x => x.name === "shop.example.com");
    expect(w).toHaveLength(1);
  });

  it("a tenant's copy of the synthetic ListenerSet gets neither an order nor an answer", () => {
    const real = derive([ingress("team", "shop", ["shop.example.com"])]);
    const synthetic = [...real.snapshot.objects.ListenerSet.values()][0]!;
    // Same name, labels, annotations, owner references: a real object, so the Ingress's part
    // is not served (the real one wins the name) and the copy is a tenant's ListenerSet.
    const forged = JSON.parse(JSON.stringify(synthetic)) as KubeObject;
    const secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        namespace: "apps",
        name: acmeSecretName("shop.example.com"),
        labels: acmeSecretLabels("certificate"),
        annotations: {
          [AcmeAnnotation.name]: "shop.example.com",
          [AcmeAnnotation.challenges]: JSON.stringify({ tok: "tok.key" }),
        },
      },
    } as unknown as KubeObject;
    const d = derive([ingress("team", "shop", ["shop.example.com"]), forged, secret]);
    expect(d.problems.get("team/shop")).toEqual([
      expect.objectContaining({ message: expect.stringContaining("already exists") }),
    ]);
    expect(d.snapshot.objects.ListenerSet.get(`team/${synthetic.metadata.name}`)).toBe(forged);
    expect(names(d.snapshot)).toEqual(["apps/kengine-acme-platform.example.com le"]);
    const gw = d.snapshot.objects.Gateway.get("apps/edge")!;
    const ir = {
      namespace: "apps",
      httpServers: [{ port: 80, protocol: "HTTP", listeners: [{ routes: [] }] }],
    } as unknown as GatewayIR;
    const answered = (
      listeners: { owner: { kind: string; namespace: string }; listener: never }[],
    ) =>
      withHttp01Answers(d.snapshot, gw, listeners, ir).httpServers[0]!.listeners[0]!.routes.length;
    expect(
      answered([
        {
          owner: { kind: "ListenerSet", namespace: "team" },
          listener: (forged as unknown as { spec: { listeners: never[] } }).spec.listeners[0]!,
        },
      ]),
    ).toBe(0);
    // The genuine synthetic listener (marked) is answered from the Gateway namespace's Secret.
    const genuine = derive([ingress("team", "shop", ["shop.example.com"]), secret]);
    const ls = [...genuine.snapshot.objects.ListenerSet.values()][0]!;
    expect(
      withHttp01Answers(
        genuine.snapshot,
        gw,
        [{ owner: { kind: "ListenerSet", namespace: "team" }, listener: ls.spec.listeners![0]! }],
        ir,
      ).httpServers[0]!.listeners[0]!.routes,
    ).toEqual([
      expect.objectContaining({
        match: expect.objectContaining({ hostname: "shop.example.com" }),
        action: { type: "respond", status: 200, body: "tok.key" },
      }),
    ]);
  });
});

describe("a tenant's ListenerSet beside the synthetic one", () => {
  it("gets no order for its host, whatever it copies of the synthetic one", () => {
    const real = derive([ingress("team", "shop", ["shop.example.com"])]);
    const synthetic = [...real.snapshot.objects.ListenerSet.values()][0]!;
    const copy = JSON.parse(JSON.stringify(synthetic)) as {
      metadata: { name: string };
      spec: { listeners: { hostname?: string }[] };
    };
    copy.metadata.name = "copy";
    copy.spec.listeners[0]!.hostname = "evil.example.com";
    const d = derive([
      ingress("team", "shop", ["shop.example.com"]),
      copy as unknown as KubeObject,
    ]);
    expect(names(d.snapshot)).toEqual([
      "apps/kengine-acme-platform.example.com le",
      "apps/kengine-acme-shop.example.com le",
    ]);
  });
});

describe("admission warnings of automatic HTTPS for Ingress", () => {
  const tls = (tlsEntries: object[], annotations: Record<string, string> = {}) => ({
    metadata: { annotations },
    spec: { tls: tlsEntries as { hosts?: string[]; secretName?: string }[] },
  });
  it("warns when no issuer is named or a host cannot be ordered; a Secret needs neither", () => {
    expect(
      ingressAcmeWarnings(tls([{ hosts: ["a.example.com"], secretName: "s" }]), undefined),
    ).toEqual([]);
    expect(ingressAcmeWarnings(tls([{ hosts: ["a.example.com"] }]), "le")).toEqual([]);
    expect(
      ingressAcmeWarnings(
        tls([{ hosts: ["a.example.com"] }], { [ACME_ISSUER_OPTION]: "le" }),
        undefined,
      ),
    ).toEqual([]);
    expect(ingressAcmeWarnings(tls([{ hosts: ["a.example.com"] }]), undefined)).toEqual([
      expect.stringContaining(
        "spec.tls[0]: no secretName and neither the IngressClass nor the Ingress",
      ),
    ]);
    expect(
      ingressAcmeWarnings(tls([{ hosts: ["ok.example.com", "*.example.com"] }, {}]), "le"),
    ).toEqual([
      expect.stringMatching(
        /^spec\.tls\[0\]\.hosts\[1\]: wildcard name \*\.example\.com needs the DNS-01/,
      ),
      expect.stringMatching(
        /^spec\.tls\[1\]\.hosts\[0\]: an automatic certificate needs the listener's hostname/,
      ),
    ]);
  });
});

describe("what the Ingress's Event says of its automatic certificate", () => {
  /** The statuses of the one Ingress listener `tls-0-0` of team/shop, with this condition. */
  const withListenerCondition = (condition: object) => {
    const d = derive([ingress("team", "shop", ["shop.example.com"])]);
    const ls = [...d.snapshot.objects.ListenerSet.values()][0]!;
    const statuses = {
      gatewayClasses: [],
      gateways: [],
      routes: [],
      listenerSets: [
        {
          namespace: "team",
          name: ls.metadata.name,
          conditions: [],
          listeners: [{ name: "tls-0-0", conditions: [condition] }],
        },
      ],
    } as unknown as StatusResults;
    return splitIngressStatuses(statuses, d.snapshot);
  };

  it("says pending (the listener's Programmed=False/Pending message) as a problem", () => {
    const pending = "certificate pending: no ACME order yet for shop.example.com (issuer le)";
    const split = withListenerCondition({
      type: "Programmed",
      status: "False",
      reason: "Pending",
      message: pending,
    });
    expect(split.problems.get("team/shop")).toEqual([
      { path: "spec.tls (tls-0-0)", value: "Pending", message: pending },
    ]);
    expect(split.statuses.listenerSets).toEqual([]);
  });

  it("does not repeat the ListenerSet refusal for a host an older Ingress holds", () => {
    const split = withListenerCondition({
      type: "ResolvedRefs",
      status: "False",
      reason: "InvalidCertificateRef",
      message: ACME_LISTENERSET_MESSAGE,
    });
    expect(split.problems.get("team/shop")).toEqual([]);
  });
});
