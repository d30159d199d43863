/**
 * Names and matches of the objects an Ingress converts into (ingress/convert.ts): stable,
 * DNS-safe names from the Ingress's name, Ingress wildcard and path semantics expressed as
 * Gateway API matches. Pure.
 */
/** A Gateway API path match made from an Ingress path. */
export interface SyntheticPath {
  type: "Exact" | "PathPrefix" | "RegularExpression";
  value: string;
}

/* ------------------------------------------------------------------ naming */

/** FNV-1a, 32 bits, as 8 hex digits: short, stable names (collisions only cost a suffix). */
const fnv = (s: string, seed: number): string => {
  let h = seed >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
};
const digest = (s: string): string => fnv(s, 0x811c9dc5) + fnv(s, 0x050c5d1f);

/** `ingress-<name>-<digest>`: a DNS label-safe name within 253 characters. */
export function syntheticName(ingressName: string, part: string): string {
  const base = ingressName.replace(/[^-a-z0-9]/g, "-").slice(0, 200);
  return `ingress-${base}-${digest(`${ingressName}\n${part}`)}`;
}

/* ------------------------------------------------------------------ hosts and paths */

const escapeRE2 = (s: string): string => s.replace(/[\\.+*?()|[\]{}^$]/g, "\\$&");

/**
 * The Host match making a Gateway wildcard behave as an Ingress one: `*.foo.com` in Ingress
 * matches exactly one label, in Gateway API one or more. The proxy matches the Host header
 * (with an optional port) against `^(?:…)$`.
 */
export const singleLabelHostRegex = (host: string): string =>
  `(?i)[^.:]+${escapeRE2(host.slice(1))}(?::[0-9]+)?`;

/** Whether a route host and a listener host can both match a request ("" matches any). */
export function hostsIntersect(a: string, b: string): boolean {
  if (a === "" || b === "" || a === b) return true;
  const covers = (wild: string, other: string): boolean =>
    wild.startsWith("*.") && other.endsWith(wild.slice(1));
  return covers(a, b) || covers(b, a);
}

/** The Gateway API path match of an Ingress path (docs/ingress.md, "Paths"). */
export function pathMatch(
  path: string | undefined,
  pathType: string,
  regex = false,
): SyntheticPath {
  if (pathType === "Exact") return { type: "Exact", value: path ?? "/" };
  // use-regex: from the path's start, anything after it (nginx `^path`); the proxy matches the
  // whole path against `^(?:…)$`. Case-sensitive, unlike nginx's `~*`: a flag group would hide
  // the literal prefix that ranks the expression against Prefix paths (translate/precedence.ts).
  if (regex && path)
    return { type: "RegularExpression", value: path.includes("|") ? `(?:${path}).*` : `${path}.*` };
  // Prefix and ImplementationSpecific: element-wise prefix; "/foo/" and "/foo" are the same.
  const p = !path ? "/" : path.length > 1 ? path.replace(/\/+$/, "") || "/" : path;
  return { type: "PathPrefix", value: p };
}
