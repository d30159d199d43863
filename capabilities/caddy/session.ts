/**
 * A rule's session persistence as a reverse_proxy selection policy. Proxies with our module
 * (proxy/session) get `kengine_session` for every session; others get stock Caddy's `cookie`
 * policy, which translate/session.ts `sessionNeeds` limits to what it can do. The policy that
 * chooses without a session (the rule's weights) becomes the fallback, so new sessions keep
 * the traffic split.
 */
import { SessionIR } from "../ir";
import { ProxyCapabilities } from "../flavor/proxy-flavor";
import { CaddySelectionPolicy } from "./types";

export function sessionPolicy(
  caps: ProxyCapabilities,
  s: SessionIR,
  fallback: CaddySelectionPolicy,
): CaddySelectionPolicy {
  if (caps.sessionModule)
    return {
      policy: "kengine_session",
      mode: s.mode,
      name: s.name,
      ...(s.path !== undefined && { path: s.path }),
      ...(s.maxAgeS !== undefined && { max_age: `${s.maxAgeS}s` }),
      ...(s.timeoutMs !== undefined && { timeout: `${s.timeoutMs}ms` }),
      ...(s.sameSite && { same_site: s.sameSite }),
      ...(s.secret && { secret: s.secret }),
      fallback,
    };
  return {
    policy: "cookie",
    name: s.name,
    ...(s.secret && { secret: s.secret }),
    ...(s.maxAgeS !== undefined && { max_age: `${s.maxAgeS}s` }),
    fallback,
  };
}
