import { apply, emptySnapshot, KubeObject } from "../snapshot";
import { Ingest, changesTranslation } from "./ingest";

const route = (rv: string, spec: object = { hostnames: ["a.example"] }, status?: object) =>
  ({
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: {
      namespace: "apps",
      name: "r",
      resourceVersion: rv,
      managedFields: [{ manager: "kubectl" }],
    },
    spec,
    ...(status ? { status } : {}),
  }) as unknown as KubeObject;

describe("Ingest", () => {
  it("drops an event older than one already seen of the object, by resourceVersion", () => {
    const i = new Ingest();
    expect(i.event("HTTPRoute", "upsert", route("10"), new Set())).toBeDefined();
    expect(i.event("HTTPRoute", "upsert", route("9"), new Set())).toBeUndefined();
    expect(i.event("HTTPRoute", "upsert", route("10"), new Set())).toBeDefined();
    expect(i.event("HTTPRoute", "delete", route("11"), new Set())).toBeDefined();
  });

  it("remembers listed resourceVersions: a late watch event after a list is dropped", () => {
    const i = new Ingest();
    i.listed("HTTPRoute", [route("20")]);
    expect(i.event("HTTPRoute", "upsert", route("19"), new Set())).toBeUndefined();
  });

  it("forgets a deleted object, and a list replaces what its kind remembered", () => {
    const i = new Ingest();
    i.event("HTTPRoute", "upsert", route("5"), new Set());
    expect(i.remembered).toBe(1);
    i.event("HTTPRoute", "delete", route("6"), new Set());
    expect(i.remembered).toBe(0);
    i.event("HTTPRoute", "upsert", route("7"), new Set());
    i.listed("HTTPRoute", []);
    expect(i.remembered).toBe(0);
  });

  it("strips what we never read on the way in", () => {
    const i = new Ingest();
    const e = i.event("HTTPRoute", "upsert", route("1"), new Set())!;
    expect(e.event.object.metadata).not.toHaveProperty("managedFields");
    expect(i.listed("HTTPRoute", [route("2")])[0]!.metadata).not.toHaveProperty("managedFields");
  });

  it("tells our proxies' objects and the Secrets the plans read from the rest", () => {
    const i = new Ingest();
    const svc = (labels: Record<string, string>, name = "s") =>
      ({ metadata: { namespace: "apps", name, labels } }) as unknown as KubeObject;
    const ours = { "app.kubernetes.io/managed-by": "kengine-gateway" };
    const gw = { "gateway.networking.k8s.io/gateway-name": "gw" };
    expect(i.event("Service", "upsert", svc({ ...ours, ...gw }), new Set())!.ours).toBe(true);
    expect(i.event("Service", "upsert", svc(ours), new Set())!.ours).toBe(false);
    expect(i.event("Service", "upsert", svc(gw), new Set())!.ours).toBe(false);
    const byo = { "gateway.kengine.io/owning-gateway": "gw" };
    expect(i.event("Service", "upsert", svc(byo), new Set())!.ours).toBe(true);
    expect(i.event("Secret", "upsert", svc({}, "creds"), new Set(["apps/creds"]))!.ours).toBe(true);
    expect(i.event("Service", "upsert", svc({}, "creds"), new Set(["apps/creds"]))!.ours).toBe(
      false,
    );
  });
});

describe("changesTranslation", () => {
  const snapshot = apply(emptySnapshot(), {
    type: "upsert",
    kind: "HTTPRoute",
    object: route("1"),
  }).snapshot;

  it("is false for a status-only or bookkeeping-only update", () => {
    expect(
      changesTranslation(snapshot, {
        type: "upsert",
        kind: "HTTPRoute",
        object: route("2", undefined, { parents: [] }),
      }),
    ).toBe(false);
  });
  it("is true for a spec change, a new object and a delete", () => {
    expect(
      changesTranslation(snapshot, {
        type: "upsert",
        kind: "HTTPRoute",
        object: route("2", { hostnames: ["b.example"] }),
      }),
    ).toBe(true);
    expect(
      changesTranslation(emptySnapshot(), {
        type: "upsert",
        kind: "HTTPRoute",
        object: route("1"),
      }),
    ).toBe(true);
    expect(
      changesTranslation(snapshot, { type: "delete", kind: "HTTPRoute", object: route("2") }),
    ).toBe(true);
  });
});

describe("changesTranslation of Ingresses", () => {
  const cls = (name: string, controller: string) => ({
    apiVersion: "networking.k8s.io/v1",
    kind: "IngressClass",
    metadata: { name },
    spec: { controller },
  });
  const ingress = (className: string, path = "/") => ({
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: { namespace: "apps", name: "i", resourceVersion: "1" },
    spec: { ingressClassName: className, rules: [{ http: { paths: [{ path }] } }] },
  });
  let snapshot = emptySnapshot();
  for (const o of [
    cls("kengine", "kengine.io/ingress-controller"),
    cls("nginx", "k8s.io/ingress-nginx"),
  ])
    snapshot = apply(snapshot, { type: "upsert", kind: "IngressClass", object: o }).snapshot;

  it("is false for an Ingress of another controller, created, changed or deleted", () => {
    const theirs = apply(snapshot, {
      type: "upsert",
      kind: "Ingress",
      object: ingress("nginx"),
    }).snapshot;
    expect(
      changesTranslation(snapshot, { type: "upsert", kind: "Ingress", object: ingress("nginx") }),
    ).toBe(false);
    expect(
      changesTranslation(theirs, {
        type: "upsert",
        kind: "Ingress",
        object: ingress("nginx", "/x"),
      }),
    ).toBe(false);
    expect(
      changesTranslation(theirs, { type: "delete", kind: "Ingress", object: ingress("nginx") }),
    ).toBe(false);
  });

  it("is true for one of ours, and for one moving into or out of our class", () => {
    const theirs = apply(snapshot, {
      type: "upsert",
      kind: "Ingress",
      object: ingress("nginx"),
    }).snapshot;
    const ours = apply(snapshot, {
      type: "upsert",
      kind: "Ingress",
      object: ingress("kengine"),
    }).snapshot;
    expect(
      changesTranslation(snapshot, { type: "upsert", kind: "Ingress", object: ingress("kengine") }),
    ).toBe(true);
    expect(
      changesTranslation(theirs, { type: "upsert", kind: "Ingress", object: ingress("kengine") }),
    ).toBe(true);
    expect(
      changesTranslation(ours, { type: "upsert", kind: "Ingress", object: ingress("nginx") }),
    ).toBe(true);
    expect(
      changesTranslation(ours, { type: "delete", kind: "Ingress", object: ingress("kengine") }),
    ).toBe(true);
  });
});
