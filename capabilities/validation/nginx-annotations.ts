/**
 * The ingress-nginx annotations (`nginx.ingress.kubernetes.io/*`) read for an Ingress whose
 * class opts in (docs/ingress.md, "ingress-nginx annotations"): for each one, how far it is
 * supported and what it becomes in the converted HTTPRoutes. Admission (validation/ingress.ts)
 * warns and refuses from this table, and the converter (ingress/convert.ts) applies the
 * effects read here, so the two never disagree.
 *
 * Pure; annotation values come from raw JSON and are read as possibly of any type.
 */
import { checkURLPath } from "./fields";
import { FieldProblem, display, truncate } from "./field-problem";

export const NGINX_PREFIX = "nginx.ingress.kubernetes.io/";

/**
 * supported: applied as ingress-nginx does; partial: applied, with the difference warned at
 * admission; refused: the Ingress is refused (admission) or not served (conversion);
 * not yet: ignored, with a warning.
 */
export type Support = "supported" | "partial" | "refused" | "not yet";

export interface AnnotationEntry {
  readonly support: Support;
  /** What it becomes, or why it is refused or ignored: the docs table and the warnings say it. */
  readonly becomes: string;
}

const notYet = (becomes: string): AnnotationEntry => ({ support: "not yet", becomes });
const SNIPPET: AnnotationEntry = {
  support: "refused",
  becomes: "the proxy runs no nginx configuration: express it with Gateway API filters",
};

/** Every annotation the table knows, by name without the prefix. */
export const NGINX_ANNOTATIONS: Readonly<Record<string, AnnotationEntry>> = {
  "ssl-redirect": {
    support: "supported",
    becomes:
      'HTTP requests for a host with a `tls` entry get a 308 RequestRedirect to https (the default, as in ingress-nginx); "false" turns it off',
  },
  "force-ssl-redirect": {
    support: "partial",
    becomes:
      "as ssl-redirect: hosts with a `tls` entry are redirected; a host without one (TLS ended before the proxy) is not, since the proxy cannot tell the client's scheme",
  },
  "permanent-redirect": {
    support: "supported",
    becomes:
      "every path of the Ingress answers a RequestRedirect to the URL (scheme, hostname, port, ReplaceFullPath), 301 or permanent-redirect-code; the request's query string is kept, where ingress-nginx drops it",
  },
  "permanent-redirect-code": {
    support: "supported",
    becomes: "the status of permanent-redirect: 301, 302, 303, 307 or 308",
  },
  "temporal-redirect": {
    support: "supported",
    becomes:
      "as permanent-redirect with 302 (or temporal-redirect-code); wins over permanent-redirect, as in ingress-nginx",
  },
  "temporal-redirect-code": {
    support: "supported",
    becomes: "the status of temporal-redirect: 301, 302, 303, 307 or 308",
  },
  "app-root": {
    support: "supported",
    becomes:
      "an Exact `/` rule per host answering a 302 RequestRedirect to the path (the query string is kept)",
  },
  "rewrite-target": {
    support: "partial",
    becomes:
      "URLRewrite ReplaceFullPath on every path (nginx replaces the whole matched URI); capture groups such as `$1` are refused, since regular-expression paths are",
  },
  "use-regex": notYet(
    "paths are matched as written; paths that look like regular expressions are refused",
  ),
  "upstream-vhost": {
    support: "supported",
    becomes: "URLRewrite hostname: the backend sees that Host",
  },
  "proxy-read-timeout": {
    support: "partial",
    becomes:
      "timeouts.backendRequest (seconds): bounds the wait for the backend's response headers; reads after them are not bounded",
  },
  "proxy-send-timeout": notYet("the proxy's default applies"),
  "proxy-connect-timeout": notYet("the proxy's default connect timeout applies"),
  "backend-protocol": {
    support: "partial",
    becomes:
      "HTTP is the default; for GRPC set the Service port's appProtocol to kubernetes.io/h2c, for HTTPS and GRPCS add a BackendTLSPolicy: the proxy reads the protocol from those, not from the Ingress",
  },
  canary: notYet(
    "a canary Ingress is not served (reported on it): its main Ingress answers every request",
  ),
  "canary-weight": notYet("see canary"),
  "canary-weight-total": notYet("see canary"),
  "canary-by-header": notYet("see canary"),
  "canary-by-header-value": notYet("see canary"),
  "canary-by-header-pattern": notYet("see canary"),
  "canary-by-cookie": notYet("see canary"),
  "proxy-body-size": notYet("no limit on the request body is applied"),
  "whitelist-source-range": notYet("every client address is admitted"),
  "denylist-source-range": notYet("no client address is refused"),
  "enable-cors": notYet("no CORS headers are added"),
  "cors-allow-origin": notYet("see enable-cors"),
  "cors-allow-methods": notYet("see enable-cors"),
  "cors-allow-headers": notYet("see enable-cors"),
  "cors-expose-headers": notYet("see enable-cors"),
  "cors-allow-credentials": notYet("see enable-cors"),
  "cors-max-age": notYet("see enable-cors"),
  affinity: notYet("requests are balanced without session affinity"),
  "affinity-mode": notYet("see affinity"),
  "session-cookie-name": notYet("see affinity"),
  "session-cookie-path": notYet("see affinity"),
  "session-cookie-max-age": notYet("see affinity"),
  "session-cookie-expires": notYet("see affinity"),
  "session-cookie-samesite": notYet("see affinity"),
  "auth-url": notYet("requests are not authenticated"),
  "auth-response-headers": notYet("see auth-url"),
  "auth-signin": notYet("see auth-url"),
  "server-alias": notYet("only the rule's host is served"),
  "configuration-snippet": SNIPPET,
  "server-snippet": SNIPPET,
  "auth-snippet": SNIPPET,
  "stream-snippet": SNIPPET,
  "modsecurity-snippet": SNIPPET,
};

/* ------------------------------------------------------------------ effects */

export interface RedirectEffect {
  readonly scheme?: "http" | "https";
  readonly hostname?: string;
  readonly port?: number;
  /** ReplaceFullPath value. */
  readonly path: string;
  readonly statusCode: number;
}

/** What the annotations of one Ingress do to its converted HTTPRoutes. */
export interface NginxEffects {
  /** Redirect HTTP to HTTPS on hosts with a `tls` entry (ssl-redirect, default true). */
  readonly sslRedirect: boolean;
  /** permanent-redirect or temporal-redirect: every path answers this redirect. */
  readonly redirect?: RedirectEffect;
  /** app-root: `/` answers a 302 to this path. */
  readonly appRoot?: string;
  /** rewrite-target: URLRewrite ReplaceFullPath. */
  readonly rewritePath?: string;
  /** upstream-vhost: URLRewrite hostname. */
  readonly hostname?: string;
  /** proxy-read-timeout: HTTPRoute timeouts.backendRequest. */
  readonly backendRequest?: string;
  /** canary: "true": the Ingress is not served. */
  readonly canary: boolean;
}

export interface NginxReading {
  readonly effects: NginxEffects;
  /** Values the proxy cannot run, and refused annotations: admission refuses the Ingress. */
  readonly problems: FieldProblem[];
  /** Partial, not yet and unknown annotations, for admission (field path first). */
  readonly warnings: string[];
}

export const annotationPath = (name: string): string =>
  `metadata.annotations[${JSON.stringify(NGINX_PREFIX + name)}]`;

/** Go's strconv.ParseBool, which ingress-nginx uses. */
const BOOL: Readonly<Record<string, boolean>> = {
  "1": true,
  t: true,
  T: true,
  TRUE: true,
  true: true,
  True: true,
  "0": false,
  f: false,
  F: false,
  FALSE: false,
  false: false,
  False: false,
};
const REDIRECT_CODES = [301, 302, 303, 307, 308];
const LABEL = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;

const isHostname = (h: string): boolean =>
  h.length > 0 && h.length <= 253 && h.split(".").every(l => LABEL.test(l));

/**
 * Reads the `nginx.ingress.kubernetes.io/*` annotations of an Ingress whose class opts in.
 * Never throws; a value the proxy cannot run is a problem, never silently dropped.
 */
export function readNginxAnnotations(annotations: unknown): NginxReading {
  const problems: FieldProblem[] = [];
  const warnings: string[] = [];
  const raw: Record<string, string> = {};
  if (annotations && typeof annotations === "object" && !Array.isArray(annotations))
    for (const [key, value] of Object.entries(annotations as Record<string, unknown>))
      if (key.startsWith(NGINX_PREFIX)) raw[key.slice(NGINX_PREFIX.length)] = display(value);
  const bad = (name: string, message: string): undefined => {
    problems.push({ path: annotationPath(name), value: truncate(raw[name] ?? ""), message });
    return undefined;
  };
  const has = (name: string): boolean => Object.hasOwn(raw, name);

  for (const name of Object.keys(raw).sort()) {
    const entry = NGINX_ANNOTATIONS[name];
    const at = annotationPath(name);
    if (!entry)
      warnings.push(`${at}: not implemented by the Kengine ingress controller and ignored`);
    else if (entry.support === "refused") bad(name, `is refused: ${entry.becomes}`);
    else if (entry.support === "not yet")
      warnings.push(`${at}: not supported yet and ignored (${entry.becomes})`);
  }

  const bool = (name: string, fallback: boolean): boolean => {
    if (!has(name)) return fallback;
    const v = BOOL[raw[name]!.trim()];
    if (v === undefined) bad(name, 'must be "true" or "false"');
    return v ?? fallback;
  };
  const code = (name: string, fallback: number): number => {
    if (!has(name)) return fallback;
    const n = Number(raw[name]);
    if (!REDIRECT_CODES.includes(n))
      return bad(name, `must be one of ${REDIRECT_CODES.join(", ")}`) ?? fallback;
    return n;
  };
  const path = (name: string, value: string): string | undefined => {
    if (!value.startsWith("/")) return bad(name, 'must be a path starting with "/"');
    const found = checkURLPath(annotationPath(name), value);
    if (found.length > 0) {
      problems.push(...found);
      return undefined;
    }
    return value;
  };
  const redirectTo = (name: string, statusCode: number): RedirectEffect | undefined => {
    const value = raw[name]!.trim();
    if (value.startsWith("/")) {
      const p = path(name, value);
      return p === undefined ? undefined : { path: p, statusCode };
    }
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return bad(name, 'must be an absolute http(s) URL or a path starting with "/"');
    }
    if (url.protocol !== "http:" && url.protocol !== "https:")
      return bad(name, "must be an http or https URL");
    if (url.search || url.hash || url.username || url.password)
      return bad(
        name,
        "a query, fragment or user in the URL cannot be expressed by a RequestRedirect",
      );
    if (!isHostname(url.hostname)) return bad(name, "the URL's host must be a DNS name");
    const p = path(name, url.pathname || "/");
    if (p === undefined) return undefined;
    return {
      scheme: url.protocol === "https:" ? "https" : "http",
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      path: p,
      statusCode,
    };
  };

  const sslRedirect = bool("ssl-redirect", true);
  const force = bool("force-ssl-redirect", false);
  const permanentCode = code("permanent-redirect-code", 301);
  const temporalCode = code("temporal-redirect-code", 302);
  const redirect = has("temporal-redirect")
    ? redirectTo("temporal-redirect", temporalCode)
    : has("permanent-redirect")
      ? redirectTo("permanent-redirect", permanentCode)
      : undefined;
  const appRoot = has("app-root") ? path("app-root", raw["app-root"]!.trim()) : undefined;

  let rewritePath: string | undefined;
  if (has("rewrite-target")) {
    const target = raw["rewrite-target"]!.trim();
    if (/\$\d|\$\{\d/.test(target))
      bad(
        "rewrite-target",
        "capture groups need use-regex paths, which are not supported: use plain paths and a target without $1",
      );
    else rewritePath = path("rewrite-target", target);
  }

  let hostname: string | undefined;
  if (has("upstream-vhost")) {
    const v = raw["upstream-vhost"]!.trim().toLowerCase();
    if (!isHostname(v)) bad("upstream-vhost", "must be a DNS name (no port, no variables)");
    else hostname = v;
  }

  let backendRequest: string | undefined;
  if (has("proxy-read-timeout")) {
    const v = raw["proxy-read-timeout"]!.trim();
    if (!/^[0-9]{1,5}$/.test(v) || Number(v) < 1)
      bad("proxy-read-timeout", "must be a whole number of seconds from 1 to 99999");
    else backendRequest = `${Number(v)}s`;
  }

  for (const name of ["force-ssl-redirect", "rewrite-target", "proxy-read-timeout"])
    if (has(name) && !problems.some(p => p.path === annotationPath(name)))
      warnings.push(
        `${annotationPath(name)}: partly supported: ${NGINX_ANNOTATIONS[name]!.becomes}`,
      );
  if (has("backend-protocol")) {
    const v = raw["backend-protocol"]!.trim().toUpperCase();
    if (v !== "HTTP")
      warnings.push(
        `${annotationPath("backend-protocol")}: ${JSON.stringify(truncate(v))} is not read from the Ingress: ${NGINX_ANNOTATIONS["backend-protocol"]!.becomes}`,
      );
  }
  for (const [name, code] of [
    ["permanent-redirect-code", "permanent-redirect"],
    ["temporal-redirect-code", "temporal-redirect"],
  ] as const)
    if (has(name) && !has(code))
      warnings.push(`${annotationPath(name)}: ignored without ${NGINX_PREFIX}${code}`);
  if (has("temporal-redirect") && has("permanent-redirect"))
    warnings.push(
      `${annotationPath("permanent-redirect")}: ignored: temporal-redirect wins, as in ingress-nginx`,
    );

  const effects: NginxEffects = {
    sslRedirect: sslRedirect || force,
    ...(redirect && { redirect }),
    ...(appRoot !== undefined && { appRoot }),
    ...(rewritePath !== undefined && { rewritePath }),
    ...(hostname !== undefined && { hostname }),
    ...(backendRequest !== undefined && { backendRequest }),
    canary: has("canary") && BOOL[raw["canary"]!.trim()] === true,
  };
  return { effects, problems, warnings };
}

/** Effects of an Ingress whose class does not opt in: nothing is read. */
export const NO_NGINX_EFFECTS: NginxEffects = { sslRedirect: false, canary: false };
