/**
 * A listener's pre-routing filters (HTTPListenerIR.filters) as Caddy JSON: one
 * `kengine_ext_auth` handler per filter, in order, in a route of their own at the head of the
 * listener's subroute (after the misdirected-request check, which is part of choosing the
 * listener), outside the listener's route group: every request of the listener passes them
 * before any of its routes is matched, and route matching sees the headers they granted.
 */
import { EndpointIR, HTTPListenerIR } from "../ir";
import { CaddyHandler, CaddyRoute } from "./types";
import { MAX_EXTERNAL_AUTH_BODY_BYTES } from "../validation/limits";

/** The filters' route, or undefined when the listener has none. */
export function listenerFiltersRoute(
  l: HTTPListenerIR,
  dial: (e: EndpointIR) => string,
): CaddyRoute | undefined {
  if (!l.filters?.length) return undefined;
  const handle: CaddyHandler[] = l.filters.map(f => ({
    handler: "kengine_ext_auth",
    dial: f.endpoints.map(dial),
    ...(f.pathPrefix !== undefined && { path_prefix: f.pathPrefix }),
    ...(f.allowedRequestHeaders.length > 0 && {
      allowed_request_headers: [...f.allowedRequestHeaders],
    }),
    ...(f.allowedResponseHeaders.length > 0 && {
      allowed_response_headers: [...f.allowedResponseHeaders],
    }),
    // The class's limit was applied in translation; 16 MiB holds whatever the IR says.
    ...(f.maxBodyBytes !== undefined && {
      max_body_bytes: Math.min(f.maxBodyBytes, MAX_EXTERNAL_AUTH_BODY_BYTES),
    }),
    ...(f.egressGuard && {
      egress_guard: f.egressGuard.deny.length > 0 ? { deny: [...f.egressGuard.deny] } : {},
    }),
  }));
  return { handle };
}
