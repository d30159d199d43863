/**
 * The ingress-nginx annotations (`nginx.ingress.kubernetes.io/*`) read for an Ingress whose
 * class opts in (docs/ingress.md, "ingress-nginx annotations"): for each one, how far it is
 * supported and what it becomes in the converted HTTPRoutes. Admission (validation/ingress.ts)
 * warns and refuses from this table, and the converter (ingress/convert.ts) applies the
 * effects read here, so the two never disagree.
 *
 * Pure; annotation values come from raw JSON and are read as possibly of any type.
 */
import { isIP } from "node:net";
import { checkMatchedHeaderName, checkURLPath } from "./fields";
import { FieldProblem, display, truncate } from "./field-problem";
import { checkRegex, quoteRE2 } from "./regex";
import { NGINX_ANNOTATIONS } from "./nginx-table";
import { AuthEffect, readAuth } from "./nginx-auth";

export { NGINX_ANNOTATIONS };
export type { AnnotationEntry, Support } from "./nginx-table";

export const NGINX_PREFIX = "nginx.ingress.kubernetes.io/";

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
  /** proxy-connect-timeout and proxy-send-timeout, in seconds: the backend connection's. */
  readonly proxyTimeouts?: { readonly connect?: number; readonly send?: number };
  /**
   * canary: "true": the header matches that send a request to this Ingress (each one alone);
   * empty when nothing selects the canary, and then the Ingress is not served.
   */
  readonly canary?: readonly CanaryMatch[];
  /** canary-weight: the share of the main Ingress's requests for this canary. */
  readonly canaryWeight?: { readonly weight: number; readonly total: number };
  /** enable-cors: the HTTPRoute CORS filter of every path. */
  readonly cors?: CorsEffect;
  /** affinity: cookie: the sessionPersistence of every forwarding path. */
  readonly affinity?: AffinityEffect;
  /** whitelist-source-range / denylist-source-range: CIDRs. */
  readonly sourceRanges?: { readonly allow?: readonly string[]; readonly deny?: readonly string[] };
  /** proxy-body-size: the largest request body in bytes (none: no limit). */
  readonly maxBodyBytes?: number;
  /** server-alias: more hosts served with the paths of the Ingress's named hosts. */
  readonly aliases?: readonly string[];
  /** auth-url (nginx-auth.ts): every request is authorized by this Service first. */
  readonly auth?: AuthEffect;
}

/** A header match selecting a canary Ingress's rules. */
export interface CanaryMatch {
  readonly type: "Exact" | "RegularExpression";
  readonly name: string;
  readonly value: string;
}

/** The HTTPRoute CORS filter's fields (Gateway API HTTPCORSFilter). */
export interface CorsEffect {
  readonly allowOrigins: string[];
  readonly allowMethods: string[];
  readonly allowHeaders: string[];
  readonly exposeHeaders: string[];
  readonly allowCredentials: boolean;
  readonly maxAge: number;
}

/** A session cookie (Gateway API sessionPersistence of type Cookie). */
export interface AffinityEffect {
  readonly cookieName: string;
  readonly path?: string;
  /** A Permanent cookie's Max-Age; none: a browser-session cookie. */
  readonly maxAgeS?: number;
  /** session-cookie-samesite; None comes with Secure. */
  readonly sameSite?: SameSite;
}

export type SameSite = "None" | "Lax" | "Strict";
const SAME_SITE: readonly SameSite[] = ["None", "Lax", "Strict"];

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
/** An RFC 7230 token: header and cookie names (the Gateway API CRDs' pattern). */
const TOKEN = /^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/;
/** A CORS origin as the HTTPRoute CRD accepts it. */
const ORIGIN =
  /(^\*$)|(^(http(s)?):\/\/(((\*\.)?([a-zA-Z0-9-]+\.)*[a-zA-Z0-9-]+|\*)(:([0-9]{1,5}))?)$)/;
const METHODS = [
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "DELETE",
  "CONNECT",
  "OPTIONS",
  "TRACE",
  "PATCH",
  "*",
];
/** ingress-nginx's defaults for cors-allow-methods and cors-allow-headers. */
const CORS_METHODS = ["GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"];
const CORS_HEADERS = [
  "DNT",
  "Keep-Alive",
  "User-Agent",
  "X-Requested-With",
  "If-Modified-Since",
  "Cache-Control",
  "Content-Type",
  "Authorization",
];
/** The longest proxy-connect-timeout and proxy-send-timeout: an hour. */
const MAX_PROXY_TIMEOUT_S = 3600;
const LABEL = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;

/** An IPv4 or IPv6 address or CIDR, in canonical CIDR form; undefined when it is none. */
function cidr(v: string): string | undefined {
  const [address = "", bits, extra] = v.split("/");
  if (extra !== undefined) return undefined;
  const family = isIP(address);
  if (family === 0 || address.includes("%")) return undefined;
  const max = family === 4 ? 32 : 128;
  if (bits !== undefined && !/^[0-9]{1,3}$/.test(bits)) return undefined;
  const n = bits === undefined ? max : Number(bits);
  if (n > max) return undefined;
  // IPv4-mapped IPv6 and zones are left out: Caddy would read them differently
  if (family === 6 && address.includes(".")) return undefined;
  return `${address.toLowerCase()}/${n}`;
}

const isHostname = (h: string): boolean =>
  h.length > 0 && h.length <= 253 && h.split(".").every(l => LABEL.test(l));

/**
 * Reads the `nginx.ingress.kubernetes.io/*` annotations of an Ingress whose class opts in.
 * Never throws; a value the proxy cannot run is a problem, never silently dropped. `namespace`:
 * the Ingress's, for an `auth-url` naming a Service by its name alone.
 */
export function readNginxAnnotations(annotations: unknown, namespace = ""): NginxReading {
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
        "capture groups are not supported, with or without use-regex: use a target without $1",
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

  // proxy-connect-timeout, proxy-send-timeout: nginx's seconds, an optional "s" allowed.
  const proxySeconds = (name: string): number | undefined => {
    if (!has(name)) return undefined;
    const m = /^([0-9]{1,10})s?$/.exec(raw[name]!.trim());
    const n = m ? Number(m[1]) : NaN;
    if (!(n >= 1 && n <= MAX_PROXY_TIMEOUT_S))
      return bad(
        name,
        `must be a whole number of seconds from 1 to ${MAX_PROXY_TIMEOUT_S} (an hour), such as "15" or "15s"`,
      );
    return n;
  };
  const connect = proxySeconds("proxy-connect-timeout");
  const send = proxySeconds("proxy-send-timeout");
  const proxyTimeouts =
    connect !== undefined || send !== undefined
      ? { ...(connect !== undefined && { connect }), ...(send !== undefined && { send }) }
      : undefined;

  const list = (name: string): string[] =>
    raw[name]!.split(",")
      .map(v => v.trim())
      .filter(v => v !== "");
  const tokens = (name: string, fallback: readonly string[]): string[] => {
    if (!has(name)) return [...fallback];
    const values = [...new Set(list(name))];
    for (const v of values)
      if (!TOKEN.test(v) || v.length > 256)
        bad(name, `${JSON.stringify(truncate(v))} is not a header name`);
    if (values.length > 64) bad(name, "may list at most 64 names");
    if (values.includes("*") && values.length > 1) bad(name, "cannot list * beside other names");
    return values;
  };
  const whole = (name: string, min: number, max: number): number | undefined => {
    const v = raw[name]!.trim();
    if (!/^[0-9]{1,7}$/.test(v) || Number(v) < min || Number(v) > max)
      return bad(name, `must be a whole number from ${min} to ${max}`);
    return Number(v);
  };
  const seconds = (name: string, max: number): number | undefined => {
    const v = raw[name]!.trim();
    if (!/^[0-9]{1,10}$/.test(v) || Number(v) < 1 || Number(v) > max)
      return bad(name, `must be a whole number of seconds from 1 to ${max}`);
    return Number(v);
  };

  let cors: CorsEffect | undefined;
  if (bool("enable-cors", false)) {
    const origins = has("cors-allow-origin") ? [...new Set(list("cors-allow-origin"))] : ["*"];
    for (const o of origins)
      if (!ORIGIN.test(o) || o.length > 253)
        bad(
          "cors-allow-origin",
          `${JSON.stringify(truncate(o))} is not an origin: use *, or scheme://host[:port] with an optional leading "*." label`,
        );
    if (origins.length === 0 || origins.length > 64)
      bad("cors-allow-origin", "must list from 1 to 64 origins");
    if (origins.includes("*") && origins.length > 1)
      bad("cors-allow-origin", "cannot list * beside other origins");
    const methods = has("cors-allow-methods")
      ? [...new Set(list("cors-allow-methods").map(m => m.toUpperCase()))]
      : [...CORS_METHODS];
    for (const m of methods)
      if (!METHODS.includes(m))
        bad(
          "cors-allow-methods",
          `${JSON.stringify(truncate(m))} is not one of ${METHODS.join(", ")}`,
        );
    if (methods.includes("*") && methods.length > 1)
      bad("cors-allow-methods", "cannot list * beside other methods");
    const maxAge = has("cors-max-age") ? seconds("cors-max-age", 2_147_483_647) : 1_728_000;
    cors = {
      allowOrigins: origins,
      allowMethods: methods,
      allowHeaders: tokens("cors-allow-headers", CORS_HEADERS),
      exposeHeaders: tokens("cors-expose-headers", []),
      allowCredentials: bool("cors-allow-credentials", true),
      maxAge: maxAge ?? 1_728_000,
    };
  } else
    for (const name of Object.keys(raw))
      if (name.startsWith("cors-"))
        warnings.push(
          `${annotationPath(name)}: ignored without ${NGINX_PREFIX}enable-cors: "true"`,
        );

  let affinity: AffinityEffect | undefined;
  if (has("affinity")) {
    if (raw["affinity"]!.trim() !== "cookie") bad("affinity", 'must be "cookie", the only kind');
    else {
      const cookieName = has("session-cookie-name")
        ? raw["session-cookie-name"]!.trim()
        : "INGRESSCOOKIE";
      if (!TOKEN.test(cookieName) || cookieName.length > 256)
        bad("session-cookie-name", "must be a cookie name token (RFC 6265)");
      let cookiePath: string | undefined;
      if (has("session-cookie-path")) {
        const v = raw["session-cookie-path"]!.trim();
        // eslint-disable-next-line no-control-regex -- matching control characters is the point
        if (!v.startsWith("/") || /[\u0000-\u001f\u007f;]/.test(v) || v.length > 1024)
          bad("session-cookie-path", 'must start with "/" and hold no ";" or control character');
        else if (v !== "/") cookiePath = v;
      }
      const lifetime = has("session-cookie-max-age")
        ? "session-cookie-max-age"
        : has("session-cookie-expires")
          ? "session-cookie-expires"
          : undefined;
      // absoluteTimeout holds up to 4 groups of 5 digits: 99999h is the longest.
      const maxAgeS = lifetime ? seconds(lifetime, 99_999 * 3600) : undefined;
      let sameSite: SameSite | undefined;
      if (has("session-cookie-samesite")) {
        const v = raw["session-cookie-samesite"]!.trim().toLowerCase();
        sameSite = SAME_SITE.find(m => m.toLowerCase() === v);
        if (!sameSite) bad("session-cookie-samesite", 'must be "None", "Lax" or "Strict"');
      }
      affinity = {
        cookieName,
        ...(cookiePath !== undefined && { path: cookiePath }),
        ...(maxAgeS !== undefined && { maxAgeS }),
        ...(sameSite && { sameSite }),
      };
    }
  } else
    for (const name of Object.keys(raw))
      if (name.startsWith("session-cookie-") || name === "affinity-mode")
        warnings.push(`${annotationPath(name)}: ignored without ${NGINX_PREFIX}affinity: "cookie"`);

  let canary: CanaryMatch[] | undefined;
  let canaryWeight: { weight: number; total: number } | undefined;
  if (has("canary") && BOOL[raw["canary"]!.trim()] === true) {
    canary = [];
    if (has("canary-weight")) {
      const total = has("canary-weight-total") ? whole("canary-weight-total", 1, 1_000_000) : 100;
      const weight = whole("canary-weight", 0, total ?? 1_000_000);
      if (weight !== undefined && total !== undefined) canaryWeight = { weight, total };
    }
    if (has("canary-by-header")) {
      const name = raw["canary-by-header"]!.trim();
      const found = checkMatchedHeaderName(annotationPath("canary-by-header"), name);
      if (found.length > 0) problems.push(...found);
      else if (name.toLowerCase() === "host")
        bad("canary-by-header", "cannot be Host: the Host header chooses the rule, not a canary");
      else if (has("canary-by-header-value")) {
        const value = raw["canary-by-header-value"]!.trim();
        if (value === "" || value.length > 4096 || !/^[\x20-\x7e]+$/.test(value))
          bad("canary-by-header-value", "must be printable ASCII, 1 to 4096 characters");
        else canary.push({ type: "Exact", name, value });
      } else if (has("canary-by-header-pattern")) {
        const pattern = raw["canary-by-header-pattern"]!.trim();
        const wrong = checkRegex(annotationPath("canary-by-header-pattern"), pattern);
        if (pattern === "") bad("canary-by-header-pattern", "must not be empty");
        else if (wrong.length > 0) problems.push(...wrong);
        else canary.push({ type: "RegularExpression", name, value: pattern });
      } else canary.push({ type: "Exact", name, value: "always" });
    }
    if (has("canary-by-cookie")) {
      const name = raw["canary-by-cookie"]!.trim();
      if (!TOKEN.test(name) || name.length > 256)
        bad("canary-by-cookie", "must be a cookie name token (RFC 6265)");
      else
        canary.push({
          type: "RegularExpression",
          name: "Cookie",
          value: `(?:.*;)?\\s*${quoteRE2(name)}=always\\s*(?:;.*)?`,
        });
    }
  }

  if (canary === undefined)
    for (const name of Object.keys(raw))
      if (name.startsWith("canary-"))
        warnings.push(`${annotationPath(name)}: ignored without ${NGINX_PREFIX}canary: "true"`);

  const ranges = (name: string): string[] | undefined => {
    if (!has(name)) return undefined;
    const out: string[] = [];
    for (const v of list(name)) {
      const c = cidr(v);
      if (c === undefined) bad(name, `${JSON.stringify(truncate(v))} is not an IP address or CIDR`);
      else out.push(c);
    }
    if (out.length === 0 || out.length > 256) return bad(name, "must list from 1 to 256 ranges");
    return [...new Set(out)];
  };
  const allow = ranges("whitelist-source-range");
  const deny = ranges("denylist-source-range");

  let maxBodyBytes: number | undefined;
  if (has("proxy-body-size")) {
    // nginx's size syntax: a number, optionally k/K, m/M or g/G (powers of 1024).
    const m = /^([0-9]{1,12})([kKmMgG]?)$/.exec(raw["proxy-body-size"]!.trim());
    const unit: Record<string, number> = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };
    const bytes = m ? Number(m[1]) * unit[m[2]!.toLowerCase()]! : NaN;
    if (!Number.isSafeInteger(bytes))
      bad("proxy-body-size", 'must be a size such as 1048576, 512k, 8m or 1g ("0": no limit)');
    else if (bytes > 0) maxBodyBytes = bytes;
  }

  let aliases: string[] | undefined;
  if (has("server-alias")) {
    aliases = [...new Set(list("server-alias").map(a => a.toLowerCase()))];
    for (const a of aliases)
      if (!isHostname(a))
        bad(
          "server-alias",
          `${JSON.stringify(truncate(a))} is not a DNS name (no wildcard, no port)`,
        );
    if (aliases.length === 0 || aliases.length > 16)
      bad("server-alias", "must list from 1 to 16 names");
  }

  for (const name of [
    "force-ssl-redirect",
    "rewrite-target",
    "proxy-read-timeout",
    "use-regex",
    "canary",
    "canary-by-header",
    "canary-by-cookie",
    "affinity-mode",
    "session-cookie-expires",
    "auth-url",
    "auth-signin",
  ])
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

  const auth = readAuth(raw, namespace, bad, problems, annotationPath);
  if (has("auth-response-headers") && !has("auth-url"))
    warnings.push(
      `${annotationPath("auth-response-headers")}: ignored without ${NGINX_PREFIX}auth-url`,
    );

  const effects: NginxEffects = {
    sslRedirect: sslRedirect || force,
    ...(redirect && { redirect }),
    ...(appRoot !== undefined && { appRoot }),
    ...(rewritePath !== undefined && { rewritePath }),
    ...(hostname !== undefined && { hostname }),
    ...(backendRequest !== undefined && { backendRequest }),
    ...(proxyTimeouts && { proxyTimeouts }),
    ...(canary && { canary }),
    ...(canaryWeight && { canaryWeight }),
    ...(cors && { cors }),
    ...(affinity && { affinity }),
    ...(aliases && { aliases }),
    ...(auth && { auth }),
    ...(maxBodyBytes !== undefined && { maxBodyBytes }),
    ...((allow || deny) && {
      sourceRanges: { ...(allow && { allow }), ...(deny && { deny }) },
    }),
  };
  return { effects, problems, warnings };
}

/** Effects of an Ingress whose class does not opt in: nothing is read. */
export const NO_NGINX_EFFECTS: NginxEffects = { sslRedirect: false };
