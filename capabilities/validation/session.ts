/**
 * Session persistence (GEP-1619) on an HTTPRoute or GRPCRoute rule: `sessionPersistence` in
 * the v1.7 shape `{type: Cookie|Header, cookie: {name, path, lifetimeType}, header: {name},
 * absoluteTimeout}`. One reading for admission (the problems) and translation (the IR), so
 * both say the same. What the proxy runs: caddy/session.ts.
 *
 * The v1.6 shape (CRDs of v1.6 are still served: their API server prunes `cookie` and `header`)
 * is read too: `sessionName` names the cookie or header when `cookie.name` / `header` are
 * absent, `cookieConfig.lifetimeType` is the lifetime when `cookie.lifetimeType` is.
 *
 * What no proxy can run is refused with the field and the reason: `idleTimeout` (v1.6; the
 * proxy tracks no idle time), a Permanent cookie shorter than a second
 * (Max-Age counts whole seconds), a cookie path or name the Set-Cookie header cannot carry, a
 * header name the proxy would drop from requests, backendRef filters in the same rule (each
 * such backendRef has its own proxy, chosen before the session could be looked at).
 */
import { SessionIR } from "../ir";
import { Collector, items } from "./budget";
import { checkMatchedHeaderName } from "./fields";
import { FieldProblem, display } from "./regex";

/** Gateway API Duration (`1h30m`, `500ms`) in milliseconds; undefined when malformed. */
export function durationMs(v: string | undefined): number | undefined {
  if (v === undefined || !/^([0-9]{1,5}(h|m|s|ms)){1,4}$/.test(v)) return undefined;
  const unit: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };
  let total = 0;
  for (const [, n, u] of v.matchAll(/([0-9]+)(ms|h|m|s)/g)) total += Number(n) * unit[u];
  return total;
}

/** The fields of a rule the reading needs. */
export interface SessionRuleLike {
  readonly sessionPersistence?: unknown;
  readonly backendRefs?: readonly ({ readonly filters?: readonly unknown[] } | null)[];
}

/** Where the rule is (`spec.rules[i]`) and a default, unique cookie name for it. */
export interface SessionSite {
  readonly at: string;
  readonly defaultCookieName: string;
  /** Key of the tokens' HMAC (the route's uid: not guessable from outside the cluster). */
  readonly secret: string;
}

export type SessionReading =
  | { readonly ok: true; readonly value: SessionIR | undefined }
  | { readonly ok: false; readonly problems: readonly FieldProblem[] };

/** Cookie names: an RFC 6265 token (Go's http.SetCookie drops a cookie whose name is not). */
const COOKIE_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Cookie paths: no CTL and no ";" (Go drops such bytes from the Path attribute). */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const BAD_PATH = /[\u0000-\u001f\u007f;]/;

type Obj = Readonly<Record<string, unknown>>;
const obj = (v: unknown): Obj | undefined =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : undefined;
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** Reads a rule's sessionPersistence: its IR, or every problem with it. */
export function readSessionPersistence(rule: SessionRuleLike, site: SessionSite): SessionReading {
  const raw = rule.sessionPersistence;
  if (raw === undefined || raw === null) return { ok: true, value: undefined };
  const at = `${site.at}.sessionPersistence`;
  const problems: FieldProblem[] = [];
  const bad = (path: string, value: unknown, message: string): void => {
    problems.push({ path, value: display(value), message });
  };
  const sp = obj(raw);
  if (!sp)
    return {
      ok: false,
      problems: [{ path: at, value: display(raw), message: "must be an object" }],
    };
  if (sp.idleTimeout !== undefined)
    bad(
      `${at}.idleTimeout`,
      sp.idleTimeout,
      "is not supported: the proxy tracks no idle time, only an absolute one (absoluteTimeout)",
    );
  // v1.6: the name for either type, and the cookie's lifetime.
  const sessionName = str(sp.sessionName);
  const oldLifetime = obj(sp.cookieConfig)?.lifetimeType;
  const type = sp.type ?? "Cookie";
  const cookie = obj(sp.cookie);
  const header = obj(sp.header);
  const timeoutRaw = sp.absoluteTimeout;
  const timeout = timeoutRaw === undefined ? undefined : durationMs(str(timeoutRaw));
  if (timeoutRaw !== undefined && !timeout)
    bad(`${at}.absoluteTimeout`, timeoutRaw, "must be a positive duration such as 30m or 1h");
  items(rule.backendRefs).forEach((b, k) => {
    if (items(obj(b)?.filters as readonly unknown[] | undefined).length > 0)
      bad(
        `${site.at}.backendRefs[${k}].filters`,
        b?.filters,
        "cannot be combined with sessionPersistence: a backendRef with its own filters is chosen before the session is looked at",
      );
  });
  let value: SessionIR | undefined;
  if (type === "Cookie") {
    const name = str(cookie?.name) ?? sessionName ?? site.defaultCookieName;
    if (!COOKIE_NAME.test(name))
      bad(
        cookie?.name !== undefined ? `${at}.cookie.name` : `${at}.sessionName`,
        name,
        "must be a cookie name token (RFC 6265)",
      );
    const path = str(cookie?.path) ?? "/";
    if (!path.startsWith("/") || BAD_PATH.test(path))
      bad(`${at}.cookie.path`, path, 'must start with "/" and hold no ";" or control character');
    const permanent = (cookie?.lifetimeType ?? oldLifetime ?? "Session") === "Permanent";
    if (permanent && timeout === undefined && timeoutRaw === undefined)
      bad(`${at}.absoluteTimeout`, "", "is required for a Permanent cookie (its Max-Age)");
    if (permanent && timeout !== undefined && timeout < 1000)
      bad(`${at}.absoluteTimeout`, timeoutRaw, "must be at least 1s: Max-Age counts whole seconds");
    value = {
      mode: "cookie",
      name,
      ...(path !== "/" && { path }),
      ...(permanent && timeout !== undefined && { maxAgeS: Math.floor(timeout / 1000) }),
      ...(!permanent && timeout !== undefined && { timeoutMs: timeout }),
      secret: site.secret,
    };
  } else if (type === "Header") {
    const name = str(header?.name) ?? sessionName ?? "";
    if (header) problems.push(...checkMatchedHeaderName(`${at}.header.name`, header.name));
    else if (sessionName !== undefined)
      problems.push(...checkMatchedHeaderName(`${at}.sessionName`, sessionName));
    else bad(`${at}.header`, sp.header ?? "", "is required for type Header (its name)");
    value = {
      mode: "header",
      name,
      ...(timeout !== undefined && { timeoutMs: timeout }),
      secret: site.secret,
    };
  } else bad(`${at}.type`, type, "must be Cookie or Header");
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value };
}

/** Admission: the problems of a rule's sessionPersistence (site names for messages only). */
export function sessionPersistenceProblems(c: Collector, at: string, rule: SessionRuleLike): void {
  if (rule.sessionPersistence === undefined || rule.sessionPersistence === null) return;
  if (!c.spend(`${at}.sessionPersistence`)) return;
  const r = readSessionPersistence(rule, { at, defaultCookieName: "x", secret: "" });
  if (!r.ok) c.add(r.problems);
}
