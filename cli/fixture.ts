/**
 * A small cluster for the plugin's unit tests, with the status the controller would have
 * written: Gateway default/gw (HTTP :80, *.example.com) and its routes: `web` served, `copy`
 * shadowed by it (identical match, newer), `other` in another namespace (not allowed by the
 * listener), `refused` refused by the proxies; two proxies, one still pending.
 */
import { snapshotOf } from "../capabilities/snapshot";
import type { KubeObject } from "../capabilities/snapshot";
import { translate } from "../capabilities/translate";
import type { ClusterView, KengineProxy } from "./model";

const GW = "gateway.networking.k8s.io/v1";
export const REFUSAL =
  "the proxies of Gateway default/gw refused this route's configuration: loading new config: bad regexp";

const route = (
  name: string,
  namespace: string,
  created: string,
  host: string,
  extra: object = {},
) => ({
  apiVersion: GW,
  kind: "HTTPRoute",
  metadata: { name, namespace, generation: 1, creationTimestamp: created },
  spec: {
    parentRefs: [{ name: "gw", namespace: "default" }],
    hostnames: [host],
    rules: [
      {
        matches: [{ path: { type: "PathPrefix", value: "/" } }],
        backendRefs: [{ name: "web", namespace: "default", port: 8080 }],
      },
    ],
    ...extra,
  },
});

export function fixtureObjects(): KubeObject[] {
  return [
    {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "default", labels: { "kubernetes.io/metadata.name": "default" } },
    },
    {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "team", labels: { "kubernetes.io/metadata.name": "team" } },
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
        listeners: [{ name: "http", port: 80, protocol: "HTTP", hostname: "*.example.com" }],
      },
    },
    route("web", "default", "2026-01-01T00:00:00Z", "shop.example.com"),
    route("copy", "default", "2026-02-01T00:00:00Z", "shop.example.com"),
    route("other", "team", "2026-01-01T00:00:00Z", "team.example.com"),
    route("refused", "default", "2026-01-01T00:00:00Z", "api.example.com"),
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "web", namespace: "default" },
      spec: { ports: [{ name: "http", port: 8080, targetPort: 3000 }] },
    },
    {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: "web-abc",
        namespace: "default",
        labels: { "kubernetes.io/service-name": "web" },
      },
      addressType: "IPv4",
      ports: [{ name: "http", port: 3000, protocol: "TCP" }],
      endpoints: [{ addresses: ["10.0.0.1"], conditions: { ready: true } }],
    } as KubeObject,
  ] as KubeObject[];
}

export const proxy = (
  pod: string,
  applied: string,
  desired = "aaaaaaaaaaaa",
  error?: string,
): KengineProxy => ({
  apiVersion: "gateway.kengine.io/v1alpha1",
  kind: "KengineProxy",
  metadata: { name: pod, namespace: "default" },
  spec: { gateway: "gw", pod, address: "10.1.0.1:19443" },
  status: {
    desiredHash: desired,
    appliedHash: applied,
    lastSyncTime: "2026-11-28T10:00:00Z",
    ...(error && { lastError: error }),
    channel: { state: "Verified", serverCertificateNotAfter: "2027-11-28T10:00:00Z" },
    conditions: [{ type: "Synced", status: applied === desired ? "True" : "False" }],
  },
});

/** The objects with the status the controller writes (the translator's, plus the refusal). */
export function fixtureView(
  proxies: readonly KengineProxy[] = [
    proxy("gw-kengine-a", "aaaaaaaaaaaa"),
    proxy("gw-kengine-b", "bbbbbbbbbbbb"),
  ],
): ClusterView {
  const objects = fixtureObjects();
  const result = translate(snapshotOf(objects));
  const synced = proxies.filter(p => p.status?.appliedHash === p.status?.desiredHash).length;
  const withStatus = objects.map(o => {
    const key = `${o.metadata.namespace}/${o.metadata.name}`;
    if (o.kind === "Gateway") {
      const g = result.statuses.gateways.find(x => `${x.namespace}/${x.name}` === key)!;
      return {
        ...o,
        status: {
          conditions: [
            ...g.conditions.filter(c => c.type !== "Programmed"),
            {
              type: "Programmed",
              status: synced > 0 ? "True" : "False",
              reason: synced > 0 ? "Programmed" : "Pending",
              message: `${synced}/${proxies.length} proxies run the current configuration`,
            },
          ],
          listeners: g.listeners.map(l => ({
            name: l.name,
            attachedRoutes: l.attachedRoutes,
            conditions: l.conditions,
          })),
        },
      };
    }
    const r = result.statuses.routes.find(
      x => x.kind === o.kind && `${x.namespace}/${x.name}` === key,
    );
    if (!r) return o;
    const parents = r.parents.map(p =>
      o.metadata.name === "refused"
        ? {
            ...p,
            conditions: [
              { type: "Accepted", status: "False", reason: "UnsupportedValue", message: REFUSAL },
              ...p.conditions.filter(c => c.type !== "Accepted"),
            ],
          }
        : p,
    );
    return { ...o, status: { parents } };
  });
  return { objects: withStatus as KubeObject[], proxies, unreadable: [] };
}
