/**
 * A listener's pre-routing filters (Listener `filters.requests`, GatewayListenerFilters):
 * ExternalAuth over HTTP, resolved to what the proxy module `kengine_ext_auth` needs. The
 * field rules are validation/listenerfilters.ts (admission and listenerProblems); here: the
 * flavour (only Bundled has the module) and the backendRef (a Service, same namespace or
 * allowed by a ReferenceGrant, with a port).
 *
 * A listener whose filter cannot run is never served without it: a flavour without the module
 * makes it Accepted=False/UnsupportedValue, an unresolvable backendRef ResolvedRefs=False
 * (RefNotPermitted, or InvalidFilterBackendRef), and the proxy does not serve it. A resolved
 * Service without ready endpoints is served, and every request is refused (403).
 *
 * Egress (egress.ts): an ExternalHostname XBackend as the backendRef is used only where the
 * class allows names and the flavour guards dials (with `egressGuard`); otherwise the listener
 * gets ResolvedRefs=False/RefNotPermitted and is not served. Service endpoints the Gateway may
 * not dial (its own proxy pods, the class's deniedCIDRs) are left out silently here: the
 * listener stays served (a listener-wide ResolvedRefs=False would stop it), and requests are
 * refused (403) when none remains.
 */
import { ListenerFilterIR } from "../ir";
import { Listener, Snapshot } from "../snapshot";
import { resolveBackend } from "./backends";
import { ListenerReason, RouteReason } from "./conditions";
import { ProxyFlavor, missingCapability } from "../flavor/proxy-flavor";
import { DEFAULT_LIMITS, Limits } from "../validation/limits";
import { externalAuthBodyProblem } from "../validation/listenerfilters";
import { problemText } from "../validation/message";
import { EgressPolicy, gatedEndpoints, namedRefusal } from "./egress";

/** Implementation-specific ResolvedRefs reason: a filter's backendRef does not resolve. */
export const INVALID_FILTER_BACKEND_REF = "InvalidFilterBackendRef";

export type ListenerFiltersResolution =
  | { readonly ok: true; readonly filters: readonly ListenerFilterIR[] }
  | {
      readonly ok: false;
      /** Which listener condition says so: Accepted (cannot run) or ResolvedRefs. */
      readonly condition: "Accepted" | "ResolvedRefs";
      readonly reason: string;
      readonly message: string;
    };

/**
 * The filters of listener `l` owned by a `ownerKind` in `namespace`, on `flavor`'s proxies.
 * Call after the listener passed listenerProblems (every filter is ExternalAuth over HTTP).
 */
export function resolveListenerFilters(
  s: Snapshot,
  ownerKind: "Gateway" | "ListenerSet",
  namespace: string,
  l: Listener,
  flavor: ProxyFlavor,
  limits: Limits = DEFAULT_LIMITS,
  egress?: EgressPolicy,
): ListenerFiltersResolution {
  const requests = l.filters?.requests ?? [];
  if (requests.length === 0) return { ok: true, filters: [] };
  const why = missingCapability(flavor, ["extAuth"]);
  if (why)
    return {
      ok: false,
      condition: "Accepted",
      reason: ListenerReason.UnsupportedValue,
      message: `filters.requests: ${why}`,
    };
  // Bodies above the class's limit (admission refuses the same, validation/listenerfilters.ts).
  for (const [i, f] of requests.entries()) {
    const over = externalAuthBodyProblem(
      `filters.requests[${i}]`,
      f.externalAuth?.forwardBody?.maxSize,
      limits.externalAuthMaxBodyBytes,
    );
    if (over)
      return {
        ok: false,
        condition: "Accepted",
        reason: ListenerReason.UnsupportedValue,
        message: problemText(over),
      };
  }
  const filters: ListenerFilterIR[] = [];
  for (const [i, f] of requests.entries()) {
    const auth = f.externalAuth!;
    const b = resolveBackend(s, ownerKind, namespace, auth.backendRef);
    if (!b.ok)
      return {
        ok: false,
        condition: "ResolvedRefs",
        reason:
          b.reason === RouteReason.RefNotPermitted
            ? ListenerReason.RefNotPermitted
            : INVALID_FILTER_BACKEND_REF,
        message: `filters.requests[${i}].externalAuth.backendRef: ${b.message}`,
      };
    // A name a tenant wrote (ExternalHostname XBackend): only through the dial guard, when
    // the class allows it (egress.ts); Service endpoints this Gateway may not dial left out.
    const refusedName = b.named && (egress ? namedRefusal(egress) : "no egress policy");
    if (refusedName)
      return {
        ok: false,
        condition: "ResolvedRefs",
        reason: ListenerReason.RefNotPermitted,
        message: `filters.requests[${i}].externalAuth.backendRef: ${b.id} (ExternalHostname ${b.endpoints[0]?.address ?? ""}) is not used: ${refusedName}`,
      };
    const path = auth.http?.path ?? "";
    const maxBody = Math.min(auth.forwardBody?.maxSize ?? 0, limits.externalAuthMaxBodyBytes);
    filters.push({
      type: "ExternalAuth",
      id: b.id,
      endpoints: egress && !b.named ? gatedEndpoints(egress, b.endpoints) : b.endpoints,
      ...(path !== "" && { pathPrefix: path.startsWith("/") ? path : `/${path}` }),
      allowedRequestHeaders: [...(auth.http?.allowedHeaders ?? [])],
      allowedResponseHeaders: [...(auth.http?.allowedResponseHeaders ?? [])],
      ...(maxBody > 0 && { maxBodyBytes: maxBody }),
      ...(b.named && egress && { egressGuard: { deny: egress.settings.deniedCIDRs } }),
    });
  }
  return { ok: true, filters };
}
