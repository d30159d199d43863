/**
 * backendRefs to an XBackend (gateway.networking.x-k8s.io/v1alpha1, Gateway API v1.7.0
 * experimental): resolved to endpoints, the transport's protocol and TLS, and the backend's
 * session persistence. Pure; the XBackend's own fields are read by validation/xbackend.ts
 * (shared with admission), what other objects say is decided here:
 *
 * - `ExternalHostname`: one upstream `hostname:port`; the proxy resolves the name (DNS) when
 *   it connects, through its dial guard. Whether a Gateway may use it at all is its class's
 *   and flavour's decision (translate/egress.ts); never behind TCPRoute or TLSRoute
 *   (RefNotPermitted: caddy-l4 has no dial guard).
 * - `EndpointSelector`: the controller sees pods only through EndpointSlices, so the selector
 *   resolves through the Services of the XBackend's namespace whose `spec.selector` is exactly
 *   `matchLabels` (such a Service selects the same pods); their ready endpoints' addresses
 *   with the XBackend's port. No such Service: `BackendNotFound`, saying so.
 * - `tls` mode ServerOnly: SNI and verification name `validation.hostname`, trust from
 *   `caCertificateRefs` (ConfigMap `ca.crt`, ClusterTrustBundle; shared with BackendTLSPolicy)
 *   or the system store; `subjectAltNames` as for BackendTLSPolicy (flavours without our
 *   transport answer 500 there, gateway-ir.ts).
 * - `protocol`: H2C (and GRPC without TLS) is HTTP/2 cleartext; HTTP/HTTP11/HTTP2/MCP/WSS over
 *   the route's HTTP transport (WebSocket upgrades pass through Caddy's reverse_proxy); TCP only
 *   behind TCPRoute/TLSRoute. An XBackend with TLS behind a TCPRoute, or any behind a UDPRoute,
 *   is refused (`UnsupportedProtocol`).
 * - A cross-namespace reference needs a ReferenceGrant to kind XBackend, as for Services.
 */
import { createHash } from "node:crypto";
import { EndpointIR } from "../ir";
import { Snapshot, X_GATEWAY_GROUP, XBackend } from "../snapshot";
import { problemText } from "../validation/message";
import { readXBackend } from "../validation/xbackend";
import { BackendTLSDecision, caCertificatesOf, sansOf } from "./backendtls";
import { BackendResolution, slicesByService } from "./resolution";
import { RouteReason } from "./conditions";
import { serviceRead } from "./reads";
import { refPermitted } from "./refs";

export const XBACKEND_KIND = "XBackend";

/** A resolution as for Services (backends.ts); `appProtocol` `kubernetes.io/h2c` for H2C. */
export type XBackendResolution = BackendResolution;

/** Whether a backendRef names an XBackend. */
export const isXBackendRef = (ref: { readonly group?: string; readonly kind?: string }): boolean =>
  ref.group === X_GATEWAY_GROUP && ref.kind === XBACKEND_KIND;

const L4_KINDS = new Set(["TCPRoute", "TLSRoute", "UDPRoute"]);

/** Resolves a backendRef to an XBackend from a route of kind `routeKind` in `routeNamespace`. */
export function resolveXBackend(
  s: Snapshot,
  routeKind: string,
  routeNamespace: string,
  ref: { readonly name: string; readonly namespace?: string },
): XBackendResolution {
  const namespace = ref.namespace ?? routeNamespace;
  const key = `${namespace}/${ref.name}`;
  const id = `XBackend ${key}`;
  const fail = (reason: string, message: string): XBackendResolution => ({
    ok: false,
    id,
    reason,
    message,
  });
  if (
    !refPermitted(
      s,
      { group: "gateway.networking.k8s.io", kind: routeKind, namespace: routeNamespace },
      { group: X_GATEWAY_GROUP, kind: XBACKEND_KIND, namespace, name: ref.name },
    )
  )
    return fail(
      RouteReason.RefNotPermitted,
      `backendRef to ${id} is not permitted by any ReferenceGrant in namespace ${namespace}`,
    );
  const xb = s.objects.XBackend.get(key);
  if (!xb) return fail(RouteReason.BackendNotFound, `${id} not found`);
  const read = readXBackend(xb, defaultCookieName(xb));
  if (!read.ok)
    return fail(
      RouteReason.UnsupportedValue,
      `${id} cannot be run by the proxy: ${read.problems.map(problemText).join("; ")}`,
    );
  const x = read.value;
  const l4 = L4_KINDS.has(routeKind);
  if (routeKind === "UDPRoute")
    return fail(RouteReason.UnsupportedProtocol, `${id}: XBackends are not UDP backends`);
  if (routeKind === "TCPRoute" && x.tls)
    return fail(
      RouteReason.UnsupportedProtocol,
      `${id}: TLS to the backend is not supported behind a TCPRoute`,
    );
  // The layer-4 proxy (caddy-l4) has no dial guard (translate/egress.ts): a name a tenant
  // wrote is never dialled behind a TCPRoute or TLSRoute, whatever the class allows.
  if (l4 && x.target.type === "ExternalHostname")
    return fail(
      RouteReason.RefNotPermitted,
      `${id}: ExternalHostname backends are not supported behind ${routeKind}s (the layer-4 proxy cannot check the addresses a name resolves to)`,
    );
  if (!l4 && x.protocol === "TCP")
    return fail(
      RouteReason.UnsupportedProtocol,
      `${id}: protocol TCP is only for TCPRoute and TLSRoute backends`,
    );

  let backendTLS: BackendTLSDecision | undefined;
  if (x.tls) {
    const { cas, problems } = caCertificatesOf(s, namespace, x.tls.caCertificateRefs);
    if (problems.length > 0)
      // Never connect with weaker verification than asked: the backend is not used.
      return fail(RouteReason.BackendNotFound, `${id}: ${problems.map(p => p.message).join("; ")}`);
    const sans = sansOf(x.tls.subjectAltNames);
    backendTLS = {
      policy: id,
      ok: true,
      tls: {
        serverName: x.tls.hostname,
        ...(cas.length > 0 && { caCertificates: cas }),
        ...(sans && { subjectAltNames: sans }),
      },
    };
  }
  let endpoints: EndpointIR[];
  if (x.target.type === "ExternalHostname")
    endpoints = [{ address: x.target.hostname, port: x.port }];
  else {
    const selected = selectedEndpoints(s, namespace, x.target.matchLabels, x.port);
    if (!selected.ok) return fail(RouteReason.BackendNotFound, `${id}: ${selected.error}`);
    endpoints = selected.value;
  }
  const h2c = x.protocol === "H2C" || (x.protocol === "GRPC" && !x.tls);
  return {
    ok: true,
    id,
    endpoints,
    ...(h2c && { appProtocol: "kubernetes.io/h2c" }),
    ...(backendTLS && { backendTLS }),
    ...(x.session && { session: x.session }),
    ...(x.target.type === "ExternalHostname" && { named: true as const }),
  };
}

/**
 * Ready endpoints of the pods `matchLabels` selects, through the Services of `namespace` with
 * exactly that selector (they select the same pods), at `port` (a pod port).
 */
function selectedEndpoints(
  s: Snapshot,
  namespace: string,
  matchLabels: Readonly<Record<string, string>>,
  port: number,
): { ok: true; value: EndpointIR[] } | { ok: false; error: string } {
  const want = canonical(matchLabels);
  const services: string[] = [];
  for (const [key, svc] of s.objects.Service) {
    if (svc.metadata.namespace !== namespace || svc.spec?.type === "ExternalName") continue;
    if (svc.spec?.selector && canonical(svc.spec.selector) === want) services.push(key);
  }
  if (services.length === 0)
    return {
      ok: false,
      error: `no Service in namespace ${namespace} has the selector ${want}: the controller sees pods through EndpointSlices only, so an EndpointSelector resolves through a Service with the same selector`,
    };
  const out = new Map<string, EndpointIR>();
  const slices = slicesByService(s);
  for (const key of services.sort()) {
    serviceRead(key);
    for (const slice of slices.get(key) ?? []) {
      if (slice.addressType === "FQDN") continue;
      for (const ep of slice.endpoints ?? []) {
        if (ep.conditions?.ready === false || ep.conditions?.terminating === true) continue;
        for (const address of ep.addresses ?? []) out.set(address, { address, port });
      }
    }
  }
  return {
    ok: true,
    value: [...out.values()].sort((a, b) =>
      a.address < b.address ? -1 : a.address > b.address ? 1 : 0,
    ),
  };
}

const canonical = (labels: Readonly<Record<string, string>>): string =>
  `{${Object.keys(labels)
    .sort()
    .map(k => `${k}=${labels[k]}`)
    .join(",")}}`;

/** A cookie name unique to the XBackend, the same on every build (the spec: SHOULD generate). */
function defaultCookieName(xb: XBackend): string {
  const id = `xbackend/${xb.metadata.namespace ?? ""}/${xb.metadata.name}`;
  return `kengine-session-${createHash("sha256").update(id).digest("hex").slice(0, 10)}`;
}
