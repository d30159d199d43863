/**
 * HTTPRoute `timeouts.request` over retries (Gateway API v1.7.0 HTTPRouteRetryCodes with
 * HTTPRouteRequestTimeout): reverse_proxy's `try_duration` stops starting retries once the
 * request timeout has passed, but an attempt already under way runs on (up to its
 * `response_header_timeout`) and its answer, say the backend's last 500, reaches the client.
 * Our handler `kengine_deadline` (proxy/deadline) ends the whole exchange at the request
 * timeout with 504. Only proxies with the module (capability `requestDeadline`) get it; the
 * others keep the per-attempt bound, and do not advertise HTTPRouteRetryCodes.
 */
import type { RetryIR, TimeoutsIR } from "../ir";
import type { ProxyCapabilities } from "../flavor/proxy-flavor";
import type { CaddyHandler } from "./types";

export function requestDeadline(
  caps: ProxyCapabilities,
  timeouts: TimeoutsIR | undefined,
  retry: RetryIR | undefined,
): CaddyHandler[] {
  if (!caps.requestDeadline || !retry || timeouts?.requestMs === undefined) return [];
  return [{ handler: "kengine_deadline", timeout: `${timeouts.requestMs}ms` }];
}
