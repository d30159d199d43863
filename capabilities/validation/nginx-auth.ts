/**
 * The ingress-nginx external authentication annotations (docs/ingress.md, "ingress-nginx
 * annotations"): `auth-url` naming a Service of the cluster, and `auth-response-headers`. The
 * proxy asks that Service as ingress-nginx's auth_request does (proxy/extauth, mode
 * ingress-nginx); the Service is resolved like a backendRef of the Ingress's routes, so one in
 * another namespace needs a ReferenceGrant there.
 *
 * The URL must name the Service by its cluster DNS name (`<service>.<namespace>.svc`, with or
 * without `.cluster.local`, or `<service>.<namespace>`, or `<service>` in the Ingress's
 * namespace) over plain `http`: an address outside the cluster, or one written with nginx
 * variables (`https://$host/oauth2/auth`), is refused. Refused, never ignored: an Ingress served
 * without its authentication would let every client through.
 */
import { checkURLPath } from "./fields";
import { FieldProblem, truncate } from "./field-problem";

/** The authorization Service and what to ask it. */
export interface AuthEffect {
  readonly service: { readonly namespace: string; readonly name: string; readonly port: number };
  /** The URL's path and query, asked exactly (not prefixed to the client's path). */
  readonly path: string;
  /** The Host header of the authorization request: the URL's host[:port]. */
  readonly host: string;
  /** auth-response-headers: copied from a 2xx answer into the request (none: nothing). */
  readonly responseHeaders: readonly string[];
}

const LABEL = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;
const TOKEN = /^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/;
/** What a query may hold as the proxy sends it (no spaces, controls, `#` or placeholders). */
const QUERY = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*$/;

/**
 * The Service an `auth-url` names (`namespace/name`, port), or a reason it names none. The
 * Ingress's namespace fills in a bare Service name.
 */
export function authService(
  value: string,
  ingressNamespace: string,
): { namespace: string; name: string; port: number; url: URL } | { reason: string } {
  if (/[$`{}]/.test(value))
    return {
      reason:
        "nginx variables are not supported: name the authorization Service by its cluster DNS name, e.g. http://oauth2-proxy.auth.svc.cluster.local:4180/oauth2/auth",
    };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { reason: "must be an absolute http URL" };
  }
  if (url.protocol !== "http:")
    return {
      reason:
        "must be an http URL of a Service of the cluster (the proxy asks it over plain HTTP inside the cluster)",
    };
  if (url.username || url.password || url.hash)
    return { reason: "a user, password or fragment in the URL is not supported" };
  const host = url.hostname.toLowerCase();
  const labels = host
    .replace(/\.cluster\.local$/, "")
    .replace(/\.svc$/, "")
    .split(".");
  if (labels.length > 2 || !labels.every(l => LABEL.test(l)))
    return {
      reason:
        "the URL's host must name a Service of the cluster: <service>.<namespace>.svc[.cluster.local], <service>.<namespace> or <service>",
    };
  const [name, namespace = ingressNamespace] = labels as [string, string?];
  const port = url.port ? Number(url.port) : 80;
  if (port < 1) return { reason: "the URL's port must be from 1 to 65535" };
  return { namespace, name, port, url };
}

/** Reads auth-url and auth-response-headers; problems through `bad`. */
export function readAuth(
  raw: Readonly<Record<string, string>>,
  ingressNamespace: string,
  bad: (name: string, message: string) => undefined,
  problems: FieldProblem[],
  annotationPath: (name: string) => string,
): AuthEffect | undefined {
  const value = raw["auth-url"]?.trim();
  if (value === undefined) return undefined;
  const found = authService(value, ingressNamespace);
  if ("reason" in found) return bad("auth-url", found.reason);
  const path = found.url.pathname || "/";
  const wrong = checkURLPath(annotationPath("auth-url"), path);
  if (wrong.length > 0) {
    problems.push(...wrong);
    return undefined;
  }
  const query = found.url.search;
  if (!QUERY.test(query) || path.length + query.length > 1024)
    return bad(
      "auth-url",
      "the URL's query must be plain (no spaces or placeholders), 1024 characters at most with the path",
    );
  const responseHeaders = [
    ...new Set(
      (raw["auth-response-headers"] ?? "")
        .split(",")
        .map(h => h.trim())
        .filter(h => h !== ""),
    ),
  ];
  for (const h of responseHeaders)
    if (!TOKEN.test(h) || h.length > 256 || h.toLowerCase() === "host")
      bad(
        "auth-response-headers",
        `${JSON.stringify(truncate(h))} is not a header name the answer may set`,
      );
  if (responseHeaders.length > 64) bad("auth-response-headers", "may list at most 64 names");
  return {
    service: { namespace: found.namespace, name: found.name, port: found.port },
    path: path + query,
    host: found.url.host,
    responseHeaders,
  };
}
