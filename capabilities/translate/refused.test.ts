/**
 * translate(snapshot, { refused }): a refused object is left out of that Gateway's config and
 * reported on itself; an entry stops applying once the object contributes something else.
 */
import { KubeObject, snapshotOf } from "../snapshot";
import { RefusedObject, identityOf, translate } from ".";

const GW = "gateway.networking.k8s.io/v1";
const base = (): KubeObject[] => [
  { apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } },
  {
    apiVersion: GW,
    kind: "GatewayClass",
    metadata: { name: "kengine", generation: 1 },
    spec: { controllerName: "kengine.io/gateway-controller" },
  } as KubeObject,
  ...["gw", "other"].map(
    name =>
      ({
        apiVersion: GW,
        kind: "Gateway",
        metadata: { name, namespace: "default", generation: 1 },
        spec: {
          gatewayClassName: "kengine",
          listeners: [
            { name: "http", port: 80, protocol: "HTTP" },
            { name: "extra", port: 8080, protocol: "HTTP" },
          ],
        },
      }) as KubeObject,
  ),
  route("healthy", "/"),
  route("hostile", "/shop"),
  {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "web", namespace: "default" },
    spec: { ports: [{ name: "http", port: 8080, targetPort: 3000 }] },
  } as KubeObject,
  endpoints("127.0.0.11"),
];

function route(name: string, path: string): KubeObject {
  return {
    apiVersion: GW,
    kind: "HTTPRoute",
    metadata: { name, namespace: "default", generation: 1 },
    spec: {
      parentRefs: [{ name: "gw" }, { name: "other" }],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: path } }],
          backendRefs: [{ name: "web", port: 8080 }],
        },
      ],
    },
  } as KubeObject;
}

function endpoints(address: string): KubeObject {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: "web-1",
      namespace: "default",
      labels: { "kubernetes.io/service-name": "web" },
    },
    addressType: "IPv4",
    ports: [{ name: "http", port: 3000, protocol: "TCP" }],
    endpoints: [{ addresses: [address], conditions: { ready: true } }],
  } as unknown as KubeObject;
}

/** A refusal of `id` ("Kind/namespace/name[/listener]") by default/gw's proxies, as found now. */
function refusal(objects: readonly KubeObject[], id: string): RefusedObject {
  const found = translate(snapshotOf(objects), { candidates: true })
    .candidates?.get("default/gw")
    ?.find(c => identityOf(c) === id);
  if (!found) throw new Error(`no candidate ${id}`);
  return { ...found, gateway: "default/gw", reason: "the proxy's error" };
}

const routeNames = (r: ReturnType<typeof translate>, gateway: string): string[] => {
  const ir = r.gateways.find(g => `${g.namespace}/${g.name}` === gateway)!;
  return [
    ...new Set(
      ir.httpServers.flatMap(s => s.listeners.flatMap(l => l.routes.map(x => x.route.name))),
    ),
  ].sort();
};
const parent = (r: ReturnType<typeof translate>, name: string, gateway: string) =>
  r.statuses.routes
    .find(x => x.name === name)!
    .parents.find(p => p.parentRef.name === gateway)!
    .conditions.find(c => c.type === "Accepted")!;

describe("translate with refused objects", () => {
  it("lists what each Gateway's config is made of, routes before the listeners they need", () => {
    const c = translate(snapshotOf(base()), { candidates: true }).candidates!;
    expect(c.get("default/gw")!.map(identityOf)).toEqual([
      "HTTPRoute/default/healthy",
      "HTTPRoute/default/hostile",
      "Listener/default/gw/http",
      "Listener/default/gw/extra",
    ]);
    expect(translate(snapshotOf(base())).candidates).toBeUndefined();
  });

  it("leaves a refused route out of that Gateway only, and says why on the route", () => {
    const objects = base();
    const r = translate(snapshotOf(objects), {
      refused: [refusal(objects, "HTTPRoute/default/hostile")],
    });
    expect(routeNames(r, "default/gw")).toEqual(["healthy"]);
    expect(routeNames(r, "default/other")).toEqual(["healthy", "hostile"]);
    expect(parent(r, "hostile", "gw")).toMatchObject({
      status: "False",
      reason: "UnsupportedValue",
      message:
        "the proxies of Gateway default/gw refused this route's configuration: the proxy's error",
    });
    expect(parent(r, "hostile", "other").status).toBe("True");
    expect(parent(r, "healthy", "gw").status).toBe("True");
  });

  it("tries a changed route again, but not one whose endpoints alone changed", () => {
    const objects = base();
    const refused = [refusal(objects, "HTTPRoute/default/hostile")];
    const moved = objects.map(o => (o.kind === "EndpointSlice" ? endpoints("127.0.0.12") : o));
    expect(routeNames(translate(snapshotOf(moved), { refused }), "default/gw")).toEqual([
      "healthy",
    ]);
    const fixed = objects.map(o =>
      o.metadata.name === "hostile" ? route("hostile", "/store") : o,
    );
    const r = translate(snapshotOf(fixed), { refused });
    expect(routeNames(r, "default/gw")).toEqual(["healthy", "hostile"]);
    expect(parent(r, "hostile", "gw").status).toBe("True");
  });

  it("stops serving a refused listener (Programmed=False, Invalid) and keeps the others", () => {
    const objects = base();
    const refused = [
      { ...refusal(objects, "Listener/default/gw/extra"), field: "spec.listeners[1]" },
    ];
    const r = translate(snapshotOf(objects), { refused });
    const ir = r.gateways.find(g => g.name === "gw")!;
    expect(ir.httpServers.map(s => s.port)).toEqual([80]);
    expect(r.gateways.find(g => g.name === "other")!.httpServers.map(s => s.port)).toEqual([
      80, 8080,
    ]);
    const extra = r.statuses.gateways
      .find(g => g.name === "gw")!
      .listeners.find(l => l.name === "extra")!
      .conditions.find(c => c.type === "Programmed")!;
    expect(extra).toMatchObject({
      status: "False",
      reason: "Invalid",
      message:
        "the proxies of Gateway default/gw refused the configuration of listener extra (spec.listeners[1]): the proxy's error",
    });
  });

  it("ignores refusals of objects that are gone or belong to another Gateway", () => {
    const objects = base();
    const hostile = refusal(objects, "HTTPRoute/default/hostile");
    const plain = translate(snapshotOf(objects));
    const elsewhere = translate(snapshotOf(objects), {
      refused: [
        { ...hostile, gateway: "default/nope" },
        { ...hostile, name: "gone" },
      ],
    });
    expect(elsewhere).toEqual(plain);
  });
});
