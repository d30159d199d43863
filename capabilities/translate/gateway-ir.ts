/** One Gateway's IR from its context: servers per port, listeners' route entries, certificates. */
import type {
  BackendIR,
  GatewayIR,
  HTTPListenerIR,
  HTTPRouteEntryIR,
  HTTPServerIR,
  L4RouteIR,
  L4ServerIR,
  RedirectIR,
} from "../ir";
import type { Gateway, HTTPRequestRedirectFilter } from "../snapshot";
import {
  DEFAULT_PROXY_FLAVOR,
  ProxyFlavor,
  capabilitiesOf,
  missingCapability,
} from "../flavor/proxy-flavor";
import { DEFAULT_LIMITS, Limits } from "../validation/limits";
import { EgressPolicy, gatedBackends, gatedEndpoints, gatedMirrors } from "./egress";
import { compareHostSpecificity, intersectHostnames } from "./hostnames";
import type { ResolvedListener } from "./listeners";
import { l4BackendsIR, reencrypts } from "./l4backendtls";
import { CompiledRoute, CompiledRule, pathModifier, ruleNeeds } from "./routes";
import type { Attachment, GatewayContext } from "./context";
import { Ranked, RankedGroup, keptGroup, precedenceOrder, rankedGroup } from "./incremental";

/** Backends as `flavor` can reach them: one whose TLS needs what it lacks gets HTTP 500. */
function runnableBackends(
  backends: readonly BackendIR[],
  flavor: ProxyFlavor,
): readonly BackendIR[] {
  if (capabilitiesOf(flavor).backendSANs) return backends;
  if (!backends.some(b => b.type === "service" && b.tls?.subjectAltNames)) return backends;
  return backends.map(b =>
    b.type === "service" && b.tls?.subjectAltNames
      ? { type: "invalid", id: b.id, weight: b.weight }
      : b,
  );
}

const runnable = (rule: CompiledRule, flavor: ProxyFlavor): boolean =>
  missingCapability(flavor, ruleNeeds(rule)) === undefined;

export function buildIR(ctx: GatewayContext): GatewayIR {
  const served = ctx.listeners.filter(l => l.served);
  const ports = [...new Set(served.map(l => l.listener.port))].sort((a, b) => a - b);
  const httpServers: HTTPServerIR[] = [];
  const l4Servers: L4ServerIR[] = [];
  for (const port of ports) {
    const onPort = served.filter(l => l.listener.port === port);
    const http = onPort.filter(
      l => l.listener.protocol === "HTTP" || l.listener.protocol === "HTTPS",
    );
    if (http.length > 0) {
      const listeners = http
        .slice()
        .sort(
          (a, b) =>
            compareHostSpecificity(
              a.listener.hostname?.toLowerCase(),
              b.listener.hostname?.toLowerCase(),
            ) || (a.id < b.id ? -1 : 1),
        )
        .map(l =>
          httpListenerIR(l, ctx.attachments.get(l.id) ?? [], ctx.flavor, ctx.egress, ctx.gateway),
        );
      const clientValidation = http.find(l => l.clientValidation)?.clientValidation;
      httpServers.push({
        port,
        protocol: http[0].listener.protocol as "HTTP" | "HTTPS",
        ...(clientValidation && { clientValidation }),
        listeners,
      });
    }
    for (const protocol of ["TLS", "TCP", "UDP"] as const) {
      const ls = onPort.filter(l => l.listener.protocol === protocol);
      if (ls.length === 0) continue;
      const routes: (L4RouteIR & { created: string; origin?: string })[] = [];
      for (const l of ls) {
        for (const a of ctx.attachments.get(l.id) ?? []) {
          if (!a.route.l4) continue;
          const r = a.route;
          const terminate = reencrypts(protocol, l.listener.tls?.mode);
          routes.push({
            route: { kind: r.kind, namespace: r.namespace, name: r.name },
            serverNames: protocol === "TLS" ? a.hostnames : undefined,
            ...(terminate && { terminate: { certificateIds: l.certificates.map(c => c.id) } }),
            backends: l4BackendsIR(
              r.backends.map(b => ({ ...b, endpoints: gatedEndpoints(ctx.egress, b.endpoints) })),
              terminate,
            ),
            created: r.created,
            origin: routeHostnameOf(l.listener.hostname, r.hostnames, a.hostnames?.[0]),
          });
        }
      }
      routes.sort((a, b) => {
        const ha = a.serverNames?.[0];
        const hb = b.serverNames?.[0];
        return (
          compareHostSpecificity(ha, hb) ||
          compareHostSpecificity(a.origin, b.origin) ||
          (a.created !== b.created
            ? a.created < b.created
              ? -1
              : 1
            : `${a.route.namespace}/${a.route.name}` < `${b.route.namespace}/${b.route.name}`
              ? -1
              : 1)
        );
      });
      l4Servers.push({
        port,
        protocol,
        routes: routes.map(({ created: _c, origin: _o, ...r }) => r),
      });
    }
  }
  const certs = new Map(served.flatMap(l => l.certificates).map(c => [c.id, c] as const));
  const client = ctx.backendClientCertificate;
  return {
    namespace: ctx.gateway.metadata.namespace ?? "",
    name: ctx.gateway.metadata.name,
    gatewayClassName: ctx.gateway.spec.gatewayClassName,
    ...(ctx.flavor !== DEFAULT_PROXY_FLAVOR && { flavor: ctx.flavor }),
    ...(!sameTimeouts(ctx.limits, DEFAULT_LIMITS) && {
      limits: {
        requestHeaderTimeout: ctx.limits.requestHeaderTimeout,
        requestBodyTimeout: ctx.limits.requestBodyTimeout,
        idleTimeout: ctx.limits.idleTimeout,
      },
    }),
    httpServers,
    l4Servers,
    certificates: [...certs.values()].sort((a, b) => (a.id < b.id ? -1 : 1)),
    ...(client?.ok &&
      capabilitiesOf(ctx.flavor).backendClientCertificate && {
        backendClientCertificate: {
          id: client.id,
          certificatePem: client.certificatePem,
          keyPem: client.keyPem,
        },
      }),
  };
}

const sameTimeouts = (a: Limits, b: Limits): boolean =>
  a.requestHeaderTimeout === b.requestHeaderTimeout &&
  a.requestBodyTimeout === b.requestBodyTimeout &&
  a.idleTimeout === b.idleTimeout;

/**
 * The most specific of a route's own hostnames whose intersection with the listener's
 * hostname is `served` (undefined when the route names no hostname).
 */
function routeHostnameOf(
  listener: string | undefined,
  route: readonly string[] | undefined,
  served: string | undefined,
): string | undefined {
  if (served === undefined) return undefined;
  return (route ?? [])
    .filter(r => intersectHostnames(listener, [r])?.includes(served))
    .map(r => r.toLowerCase())
    .sort(compareHostSpecificity)[0];
}

function httpListenerIR(
  l: ResolvedListener,
  attachments: readonly Attachment[],
  flavor: ProxyFlavor,
  egress: EgressPolicy,
  gateway: Gateway,
): HTTPListenerIR {
  const groups: RankedGroup[] = [];
  // Everything the entries read besides the compiled route (listener-routes.ts): a new input
  // to an entry must be named here too. Hostnames hold no "," and none is empty.
  const listenerKey = JSON.stringify([
    l.listener.hostname,
    l.listener.protocol,
    l.listener.port,
    flavor,
    egress,
  ]);
  for (const a of attachments) {
    if (a.route.l4) continue;
    const route = a.route;
    const key = `${listenerKey}${a.hostnames ? `[${a.hostnames.join(",")}]` : "*"}`;
    groups.push(
      keptGroup(a, listenerKey, () =>
        rankedGroup(route, key, () => attachmentEntries(route, a.hostnames, l, flavor, egress)),
      ),
    );
  }
  return {
    id: l.id,
    ...(l.listener.hostname && { hostname: l.listener.hostname.toLowerCase() }),
    certificateIds: l.certificates.map(c => c.id),
    ...(l.filters.length > 0 && { filters: l.filters }),
    routes: precedenceOrder(gateway, l.id, groups).map(r => r.entry),
  };
}

/** The entries one attached route gives a listener: one per hostname, runnable rule and match. */
function attachmentEntries(
  route: CompiledRoute,
  hostnames: readonly string[] | undefined,
  l: ResolvedListener,
  flavor: ProxyFlavor,
  egress: EgressPolicy,
): Ranked[] {
  const ranked: Ranked[] = [];
  for (const hostname of hostnames ?? [undefined]) {
    const origin = routeHostnameOf(l.listener.hostname, route.hostnames, hostname);
    for (const rule of route.rules) {
      if (!runnable(rule, flavor)) continue;
      const mirrors = gatedMirrors(egress, rule.mirrors);
      rule.matches.forEach((m, j) => {
        const match = { ...m, hostname };
        const ref = {
          kind: route.kind,
          namespace: route.namespace,
          name: route.name,
          rule: rule.index,
          match: j,
        };
        const action: HTTPRouteEntryIR["action"] = rule.redirect
          ? { type: "redirect", redirect: redirectIR(rule.redirect, l) }
          : rule.backends.length === 0
            ? { type: "respond", status: 500, body: "" }
            : {
                type: "forward",
                backends: runnableBackends(gatedBackends(egress, rule.backends), flavor),
                ...(rule.timeouts && { timeouts: rule.timeouts }),
                ...(rule.retry && { retry: rule.retry }),
                ...(rule.session && { session: rule.session }),
              };
        const entry: HTTPRouteEntryIR = {
          route: ref,
          match,
          ...(rule.sourceRanges && { sourceRanges: rule.sourceRanges }),
          ...(rule.maxRequestBodyBytes !== undefined && {
            maxRequestBodyBytes: rule.maxRequestBodyBytes,
          }),
          // Endpoints this Gateway may not dial are left out: with none, every request is 500.
          ...(rule.auth && {
            auth: { ...rule.auth, endpoints: gatedEndpoints(egress, rule.auth.endpoints) },
          }),
          ...(rule.cors && { cors: rule.cors }),
          ...(rule.requestHeaders && { requestHeaders: rule.requestHeaders }),
          ...(rule.responseHeaders && { responseHeaders: rule.responseHeaders }),
          ...(rule.rewrite && { rewrite: rule.rewrite }),
          ...(mirrors && { mirrors }),
          action,
        };
        ranked.push({ match, route: ref, created: route.created, origin, entry });
      });
    }
  }
  return ranked;
}

/** The spec's redirect defaults: scheme from the listener, port from the scheme or listener. */
export function redirectIR(f: HTTPRequestRedirectFilter, l: ResolvedListener): RedirectIR {
  const listenerScheme = l.listener.protocol === "HTTPS" ? "https" : "http";
  const scheme = (f.scheme ?? listenerScheme) as "http" | "https";
  let port: number | undefined = f.port ?? (f.scheme ? undefined : l.listener.port);
  if ((scheme === "http" && port === 80) || (scheme === "https" && port === 443)) port = undefined;
  return {
    scheme,
    ...(f.hostname && { hostname: f.hostname }),
    ...(port !== undefined && { port }),
    ...(f.path && { path: pathModifier(f.path)! }),
    statusCode: (f.statusCode ?? 302) as RedirectIR["statusCode"],
  };
}
