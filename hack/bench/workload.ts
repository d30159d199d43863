/**
 * The benchmark's workload: R HTTPRoutes over G Gateways with a realistic mix of matches,
 * filters and backends, as plain Kubernetes objects (the same objects feed the pure translator
 * and `kubectl apply`). Deterministic: the same options give the same objects.
 *
 * The mix, per route (index i): hostname `r<i>.<domain>`; 1–3 rules; matches mostly PathPrefix,
 * some Exact, RegularExpression, method, header and query matches; 20 % add a request header,
 * 5 % a response header, 5 % rewrite the path, 5 % redirect; backends drawn from a pool of
 * `services` Services (10 % of rules split traffic 80/20 over two of them).
 */
import { KubeObject } from "../../capabilities/snapshot";

export interface WorkloadOptions {
  readonly routes: number;
  readonly gateways?: number;
  readonly namespace?: string;
  readonly gatewayClass?: string;
  /** Services the routes draw their backends from (default 100). */
  readonly services?: number;
  /** Synthetic EndpointSlices with two ready endpoints per Service (pure runs); default true. */
  readonly endpointSlices?: boolean;
  /** Service selector (cluster runs: the echo pods); default none. */
  readonly selector?: Record<string, string>;
  readonly targetPort?: number;
  readonly domain?: string;
  /** Extra fields for every Gateway's spec (e.g. infrastructure.parametersRef). */
  readonly gatewaySpec?: Record<string, unknown>;
  /** First route index (routes are named r<index>). */
  readonly firstRoute?: number;
  /** Every route attaches to this Gateway (default: gw<i mod gateways>). */
  readonly parent?: string;
  /** Labels on every route (cluster runs select their routes by them). */
  readonly routeLabels?: Record<string, string>;
}

const API = "gateway.networking.k8s.io/v1";

export const gatewayName = (g: number): string => `gw${g}`;
export const routeName = (i: number): string => `r${i}`;
export const routeHost = (i: number, domain = "bench.local"): string => `r${i}.${domain}`;

export function gatewayClass(name = "kengine-bench"): KubeObject {
  return {
    apiVersion: API,
    kind: "GatewayClass",
    metadata: { name },
    spec: { controllerName: "kengine.io/gateway-controller" },
  } as KubeObject;
}

export function gateways(opts: WorkloadOptions): KubeObject[] {
  const ns = opts.namespace ?? "bench";
  return Array.from(
    { length: opts.gateways ?? 10 },
    (_, g) =>
      ({
        apiVersion: API,
        kind: "Gateway",
        metadata: { name: gatewayName(g), namespace: ns, generation: 1 },
        spec: {
          gatewayClassName: opts.gatewayClass ?? "kengine-bench",
          listeners: [{ name: "http", port: 80, protocol: "HTTP" }],
          ...opts.gatewaySpec,
        },
      }) as KubeObject,
  );
}

export function services(opts: WorkloadOptions): KubeObject[] {
  const ns = opts.namespace ?? "bench";
  const out: KubeObject[] = [];
  for (let s = 0; s < (opts.services ?? 100); s++) {
    out.push({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: `svc${s}`, namespace: ns },
      spec: {
        ...(opts.selector && { selector: opts.selector }),
        ports: [{ name: "http", port: 8080, targetPort: opts.targetPort ?? 3000 }],
      },
    } as KubeObject);
    if (opts.endpointSlices ?? true)
      out.push({
        apiVersion: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        metadata: {
          name: `svc${s}-1`,
          namespace: ns,
          labels: { "kubernetes.io/service-name": `svc${s}` },
        },
        addressType: "IPv4",
        ports: [{ name: "http", port: opts.targetPort ?? 3000, protocol: "TCP" }],
        endpoints: [
          { addresses: [`10.244.${1 + (s >> 7)}.${(s * 2) % 250}`], conditions: { ready: true } },
          {
            addresses: [`10.244.${1 + (s >> 7)}.${(s * 2 + 1) % 250}`],
            conditions: { ready: true },
          },
        ],
      } as unknown as KubeObject);
  }
  return out;
}

/** A small deterministic generator (mulberry32), so every run builds the same mix. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One HTTPRoute of the mix; `simple` gives a single PathPrefix / rule to svc0 (propagation probe). */
export function httpRoute(i: number, opts: WorkloadOptions, simple = false): KubeObject {
  const ns = opts.namespace ?? "bench";
  const nServices = opts.services ?? 100;
  const r = rng(i + 1);
  const pick = (n: number) => Math.floor(r() * n);
  const backend = (s: number, weight?: number) => ({
    name: `svc${s}`,
    port: 8080,
    ...(weight !== undefined && { weight }),
  });
  const rules: Record<string, unknown>[] = [];
  const nRules = simple ? 1 : 1 + pick(3);
  for (let k = 0; k < nRules; k++) {
    const x = r();
    let match: Record<string, unknown>;
    if (simple || k === nRules - 1) match = { path: { type: "PathPrefix", value: "/" } };
    else if (x < 0.45) match = { path: { type: "PathPrefix", value: `/api/v${k + 1}` } };
    else if (x < 0.6) match = { path: { type: "Exact", value: `/exact/${k}` } };
    else if (x < 0.7) match = { path: { type: "RegularExpression", value: `/items/[0-9]+/v${k}` } };
    else if (x < 0.8) match = { path: { type: "PathPrefix", value: `/admin${k}` }, method: "POST" };
    else if (x < 0.9)
      match = {
        path: { type: "PathPrefix", value: `/h${k}` },
        headers: [{ name: "X-Tenant", value: `t${pick(20)}` }],
      };
    else
      match = {
        path: { type: "PathPrefix", value: `/q${k}` },
        queryParams: [{ name: "version", value: `${pick(5)}` }],
      };
    const filters: Record<string, unknown>[] = [];
    let redirect = false;
    if (!simple) {
      const f = r();
      if (f < 0.2)
        filters.push({
          type: "RequestHeaderModifier",
          requestHeaderModifier: { set: [{ name: "X-Route", value: routeName(i) }] },
        });
      else if (f < 0.25)
        filters.push({
          type: "ResponseHeaderModifier",
          responseHeaderModifier: { add: [{ name: "X-Served-By", value: "kengine" }] },
        });
      else if (f < 0.3 && (match.path as { type: string }).type === "PathPrefix")
        filters.push({
          type: "URLRewrite",
          urlRewrite: { path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/" } },
        });
      else if (f < 0.35) {
        redirect = true;
        filters.push({
          type: "RequestRedirect",
          requestRedirect: { scheme: "https", statusCode: 301 },
        });
      }
    }
    const s = simple ? 0 : pick(nServices);
    const backendRefs = redirect
      ? undefined
      : !simple && r() < 0.1
        ? [backend(s, 80), backend((s + 1) % nServices, 20)]
        : [backend(s)];
    rules.push({ matches: [match], ...(filters.length && { filters }), backendRefs });
  }
  return {
    apiVersion: API,
    kind: "HTTPRoute",
    metadata: {
      name: routeName(i),
      namespace: ns,
      generation: 1,
      creationTimestamp: "2026-01-01T00:00:00Z",
      ...(opts.routeLabels && { labels: opts.routeLabels }),
    },
    spec: {
      parentRefs: [{ name: opts.parent ?? gatewayName(i % (opts.gateways ?? 10)) }],
      hostnames: [routeHost(i, opts.domain)],
      rules,
    },
  } as KubeObject;
}

export function httpRoutes(opts: WorkloadOptions): KubeObject[] {
  const first = opts.firstRoute ?? 0;
  return Array.from({ length: opts.routes }, (_, k) => httpRoute(first + k, opts));
}

/** Everything for a pure (no cluster) translation: namespace, class, Gateways, Services, routes. */
export function snapshotObjects(opts: WorkloadOptions): KubeObject[] {
  const ns = opts.namespace ?? "bench";
  return [
    {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: ns, labels: { "kubernetes.io/metadata.name": ns } },
    } as KubeObject,
    gatewayClass(opts.gatewayClass),
    ...gateways(opts),
    ...services(opts),
    ...httpRoutes(opts),
  ];
}
