/**
 * The authorization of a rule made from an Ingress (ir/types.ts EXTERNAL_AUTH_FIELD, the
 * ingress-nginx `auth-url`): its Service resolved like a backendRef of the route (a missing
 * Service, or one in another namespace without a ReferenceGrant, is a ResolvedRefs problem),
 * and the rule kept either way: with no endpoints the proxy answers every request 500, so the
 * Ingress is never served without its authentication.
 */
import { EXTERNAL_AUTH_FIELD, RouteAuthIR } from "../ir";
import type { Snapshot } from "../snapshot";
import { resolveBackend } from "./backends";

const LABEL = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;
const TOKEN = /^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/;

export function routeAuth(
  s: Snapshot,
  kind: "HTTPRoute" | "GRPCRoute",
  namespace: string,
  rule: object,
): { auth?: RouteAuthIR; problem?: { reason: string; message: string } } {
  const v = (rule as Record<string, unknown>)[EXTERNAL_AUTH_FIELD];
  if (!v || typeof v !== "object") return {};
  const a = v as {
    service?: { namespace?: unknown; name?: unknown; port?: unknown };
    path?: unknown;
    host?: unknown;
    responseHeaders?: unknown;
  };
  const svc = a.service ?? {};
  const port = svc.port;
  const headers = Array.isArray(a.responseHeaders) ? a.responseHeaders : [];
  // Only the converter writes the field, from a validated annotation; anything else is
  // refused whole (every request 500) rather than served unauthenticated.
  const shaped =
    typeof svc.namespace === "string" &&
    LABEL.test(svc.namespace) &&
    typeof svc.name === "string" &&
    LABEL.test(svc.name) &&
    typeof port === "number" &&
    Number.isInteger(port) &&
    port >= 1 &&
    port <= 65535 &&
    typeof a.path === "string" &&
    a.path.startsWith("/") &&
    typeof a.host === "string" &&
    headers.every(h => typeof h === "string" && TOKEN.test(h));
  const id = shaped ? `${svc.namespace}/${svc.name}:${port}` : "invalid";
  const refused = (reason: string, message: string) => ({
    auth: { id, endpoints: [], path: "/", host: "", responseHeaders: [] },
    problem: { reason, message },
  });
  if (!shaped) return refused("BackendNotFound", "the authorization Service is not usable");
  const r = resolveBackend(s, kind, namespace, {
    group: "",
    kind: "Service",
    name: svc.name as string,
    namespace: svc.namespace as string,
    port: port as number,
  });
  if (!r.ok) return refused(r.reason, `authorization ${r.message}`);
  return {
    auth: {
      id: r.id,
      endpoints: r.endpoints,
      path: a.path as string,
      host: a.host as string,
      responseHeaders: headers as string[],
    },
  };
}
