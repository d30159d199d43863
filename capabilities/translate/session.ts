/**
 * Session persistence of HTTPRoute/GRPCRoute rules (GEP-1619): the rule's
 * `sessionPersistence` as IR (read by validation/session.ts, which admission shares) and what
 * the proxy needs to run it (proxy-flavor.ts). Rendering: caddy/session.ts. Pure.
 */
import { createHash } from "node:crypto";
import { SessionIR } from "../ir";
import { SessionRuleLike, readSessionPersistence } from "../validation/session";
import type { Capability } from "../flavor/proxy-flavor";

interface RouteLike {
  readonly metadata: {
    readonly namespace?: string;
    readonly name?: string;
    readonly uid?: string;
  };
}

/**
 * The IR of rule `index`'s sessionPersistence (undefined when it has none). The rule passed
 * the shared rules (translate/routes.ts drops it otherwise), so the reading succeeds; a
 * problem found here anyway leaves the rule without persistence rather than failing.
 */
export function sessionIR(route: RouteLike, rule: object, index: number): SessionIR | undefined {
  const r = readSessionPersistence(rule as SessionRuleLike, {
    at: `spec.rules[${index}]`,
    defaultCookieName: defaultCookieName(route, index),
    secret: route.metadata.uid ?? "",
  });
  return r.ok ? r.value : undefined;
}

/**
 * A cookie name unique to the rule (the spec: "if not specified, a unique cookie name SHOULD
 * be generated"), the same on every build.
 */
function defaultCookieName(route: RouteLike, index: number): string {
  const id = `${route.metadata.namespace ?? ""}/${route.metadata.name ?? ""}/${index}`;
  return `kengine-session-${createHash("sha256").update(id).digest("hex").slice(0, 10)}`;
}

/**
 * What a session needs beyond stock Caddy's `cookie` selection policy (a cookie on path "/",
 * no lifetime but Max-Age, no SameSite of its choosing): our `kengine_session` policy for
 * headers, cookie paths, SameSite and absolute lifetimes tracked in the token; Max-Age itself
 * (Caddy ≥ 2.9).
 */
export function sessionNeeds(s: SessionIR): Capability[] {
  const needs: Capability[] = [];
  if (
    s.mode === "header" ||
    s.path !== undefined ||
    s.timeoutMs !== undefined ||
    s.sameSite !== undefined
  )
    needs.push("sessionModule");
  if (s.maxAgeS !== undefined) needs.push("cookieMaxAge");
  return needs;
}
