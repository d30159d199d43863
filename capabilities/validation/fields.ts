/**
 * Field checks shared by the route and listener rules: header names and values as the
 * proxy (Caddy, Go's net/http) handles them, and URL paths a redirect or rewrite writes.
 * Each returns the problems of one field; an empty array means the proxy runs it as written.
 *
 * What the proxy does with a bad header, proven by tests/integration/header-differential.test.ts:
 * - A name that is not an RFC 7230 token: in a request header set for the backend, Go's
 *   transport refuses to send the request (the client gets 502); in a response header, Go's
 *   server drops the field; in a match, no request can carry it (Go answers 400), so the
 *   match can never be true.
 * - A value with a control character other than HTAB (NUL, CR, LF, 0x01–0x1F, DEL): in a
 *   request header, 502 as above; in a response header, CR and LF become spaces and other
 *   control characters reach the client raw, where a conforming parser refuses the response;
 *   in a match, no request can carry it.
 * - `{…}` in a value is not a problem: Caddy would expand it as a placeholder, but the
 *   translator escapes braces (caddy/config.ts escapePlaceholders), so the value stays literal.
 * - In a match, a name with "_" or "." can never match either: Caddy (≥ 2.11.9, the pinned
 *   test proxy) drops every incoming request header whose name holds an underscore or a dot
 *   (advisories GHSA-f59h-q822-g45g, GHSA-49wc-4hcv-v58q) unless its server lists the name,
 *   which Kengine (Caddy 2.8) would refuse as an unknown field. Found by the differential
 *   test; refused for both flavours so a route means the same on either.
 * - In `remove`, Caddy treats `*` as a wildcard (`*` deletes every header, `X-*` a prefix),
 *   though `*` is a valid token character: such a name cannot be removed literally.
 */
import { FieldProblem, display, truncate } from "./regex";

/** RFC 7230 tchar: "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Go's httpguts.ValidHeaderFieldValue: no CTL except HTAB. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const BAD_VALUE_CHAR = /[\u0000-\u0008\u000a-\u001f\u007f]/;

const describeChar = (c: string): string => {
  const code = c.charCodeAt(0);
  const names: Record<number, string> = { 0: "NUL", 10: "LF", 13: "CR", 127: "DEL" };
  return names[code] ?? `U+${code.toString(16).toUpperCase().padStart(4, "0")}`;
};

/** A header name the proxy can send and match: an RFC 7230 token. */
export function checkHeaderName(path: string, name: unknown): FieldProblem[] {
  if (typeof name !== "string" || name.length === 0)
    return [{ path, value: display(name ?? ""), message: "must be a non-empty header name" }];
  if (TOKEN.test(name)) return [];
  const bad = [...name].find(c => !TOKEN.test(c)) ?? "";
  return [
    {
      path,
      value: truncate(name),
      message: `is not a valid header name (character ${JSON.stringify(bad)}): only letters, digits and !#$%&'*+-.^_\`|~ are accepted`,
    },
  ];
}

/** A header name a request match compares: a token without "_" or "." (see above). */
export function checkMatchedHeaderName(path: string, name: unknown): FieldProblem[] {
  const base = checkHeaderName(path, name);
  if (base.length > 0 || typeof name !== "string" || !/[_.]/.test(name)) return base;
  return [
    {
      path,
      value: truncate(name),
      message:
        'contains "_" or ".": the proxy drops request headers with such names (a CGI-confusion safeguard), so the match could never be true: use "-" instead',
    },
  ];
}

/** A header name in a `remove` list: a token without Caddy's `*` wildcard. */
export function checkRemovedHeaderName(path: string, name: unknown): FieldProblem[] {
  const base = checkHeaderName(path, name);
  if (base.length > 0 || typeof name !== "string" || !name.includes("*")) return base;
  return [
    {
      path,
      value: truncate(name),
      message:
        'contains "*", which the proxy treats as a wildcard ("*" removes every header): name the header literally, without "*"',
    },
  ];
}

/** A header value the proxy can send (modifiers) or a request can carry (matches). */
export function checkHeaderValue(
  path: string,
  value: unknown,
  use: "match" | "modifier",
): FieldProblem[] {
  if (typeof value !== "string")
    return [{ path, value: display(value ?? ""), message: "must be a string" }];
  const m = BAD_VALUE_CHAR.exec(value);
  if (!m) return [];
  const what = describeChar(m[0]);
  return [
    {
      path,
      value: truncate(value),
      message:
        use === "match"
          ? `contains the control character ${what}, which no HTTP request can carry, so the match could never be true: use visible characters, spaces and tabs only`
          : `contains the control character ${what}, which the proxy cannot send in a header: use visible characters, spaces and tabs only`,
    },
  ];
}

/** RFC 3986 path characters, as the CRD requires for Exact and PathPrefix matches. */
const URL_PATH = /^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|%[0-9a-fA-F]{2})*$/;

/** A path a redirect or rewrite writes into the URL: URL path characters, starting with "/". */
export function checkURLPath(path: string, value: unknown): FieldProblem[] {
  if (typeof value !== "string")
    return [{ path, value: display(value ?? ""), message: "must be a string" }];
  if (value !== "" && !value.startsWith("/"))
    return [{ path, value: truncate(value), message: 'must start with "/" to form a URL path' }];
  if (URL_PATH.test(value)) return [];
  return [
    {
      path,
      value: truncate(value),
      message:
        'cannot form a URL path: only letters, digits, -._~!$&\'()*+,;=:@/ and %XX escapes are accepted (no spaces, "?", "#" or braces)',
    },
  ];
}
