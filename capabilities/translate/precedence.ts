/**
 * Match precedence across all HTTPRoute and GRPCRoute rules attached to one listener, as
 * the Gateway API spec orders it (HTTPRouteRule.matches, HTTPRouteSpec.hostnames):
 *   1. the most specific hostname (exact over wildcard, more labels, longer; none last), then,
 *      when the listener/route intersections are the same, the most specific of the route's
 *      own hostnames (GatewayRouteHostnameIntersectionPrecedence, Gateway API v1.7.0);
 *   2. path: Exact first, the longer value first; then PathPrefix and RegularExpression
 *      together, the longer prefix first, where a regular expression counts as its literal
 *      prefix (what every path it matches begins with: `/api/v` for `/api/v[0-9]+/.*`, `/` for
 *      `/.*`), and at equal length the PathPrefix first (a GRPCRoute's expression first: a
 *      method match outranks the catch-all, as the GRPCRoute spec orders them); then the longer
 *      expression. The spec orders Exact and PathPrefix and leaves RegularExpression
 *      implementation-specific: ranked this way a regular expression never outranks a
 *      PathPrefix at least as long as its literal prefix, so it takes no more than a PathPrefix
 *      could (a tenant's `/.*` on a shared listener takes none of an older route's prefixes of
 *      the same hostname, `/` included);
 *   3. a method match; 4. more header matches; 5. more query-param matches;
 *   6. the oldest route (creationTimestamp); 7. `namespace/name` alphabetically;
 *   8. rule order, then match order within the route.
 * The first entry in this order that matches a request wins.
 */
import { HTTPMatchIR, RouteRef } from "../ir";
import { compareHostSpecificity } from "./hostnames";

export interface RankedMatch {
  readonly match: HTTPMatchIR;
  readonly route: RouteRef;
  /** The route's creationTimestamp (RFC 3339; compares as text). */
  readonly created: string;
  /** The route's own hostname that gave `match.hostname` (undefined: the route names none). */
  readonly origin?: string;
}

/**
 * The literal text every path matching `re` (anchored at both ends, caddy/config.ts) begins
 * with; shorter when unsure (an alternation anywhere, a flag group, a class escape): a shorter
 * prefix only ranks the expression lower.
 */
export function literalPrefix(re: string): string {
  if (re.includes("|")) return "";
  let out = "";
  for (let i = 0; i < re.length; ) {
    let ch = re[i]!;
    let next = i + 1;
    if (ch === "\\") {
      const n = re[i + 1];
      if (n === undefined || /[A-Za-z0-9]/.test(n)) break;
      ch = n;
      next = i + 2;
    } else if (".[](){}*+?^$".includes(ch)) break;
    const q = re[next];
    if (q === "*" || q === "?" || q === "{") break; // optional or counted: not certain
    out += ch;
    if (q === "+") break;
    i = next;
  }
  return out;
}

const prefixCache = new Map<string, number>();
/** The length that ranks a non-Exact path: the prefix, or the expression's literal prefix. */
function rankLength(p: HTTPMatchIR["path"]): number {
  if (p.type !== "RegularExpression") return p.value.length;
  let n = prefixCache.get(p.value);
  if (n === undefined) {
    if (prefixCache.size >= 10_000) prefixCache.clear();
    prefixCache.set(p.value, (n = literalPrefix(p.value).length));
  }
  return n;
}

const tieRank = (m: HTTPMatchIR): number =>
  m.path.type !== "RegularExpression" ? 1 : m.grpc ? 0 : 2;

export function comparePrecedence(a: RankedMatch, b: RankedMatch): number {
  const host = compareHostSpecificity(a.match.hostname, b.match.hostname);
  if (host !== 0) return host;
  const origin = compareHostSpecificity(a.origin, b.origin);
  if (origin !== 0) return origin;
  const pa = a.match.path;
  const pb = b.match.path;
  if ((pa.type === "Exact") !== (pb.type === "Exact")) return pa.type === "Exact" ? -1 : 1;
  const la = rankLength(pa);
  const lb = rankLength(pb);
  if (la !== lb) return lb - la;
  // Equal lengths: the PathPrefix first, but a GRPCRoute method match before its catch-all.
  const ra = tieRank(a.match);
  const rb = tieRank(b.match);
  if (ra !== rb) return ra - rb;
  if (pa.value.length !== pb.value.length) return pb.value.length - pa.value.length;
  const ma = a.match.method ? 1 : 0;
  const mb = b.match.method ? 1 : 0;
  if (ma !== mb) return mb - ma;
  if (a.match.headers.length !== b.match.headers.length)
    return b.match.headers.length - a.match.headers.length;
  if (a.match.queryParams.length !== b.match.queryParams.length)
    return b.match.queryParams.length - a.match.queryParams.length;
  const ga = a.match.grpc ? 1 : 0;
  const gb = b.match.grpc ? 1 : 0;
  if (ga !== gb) return gb - ga;
  if (a.created !== b.created) return a.created < b.created ? -1 : 1;
  const ka = `${a.route.namespace}/${a.route.name}`;
  const kb = `${b.route.namespace}/${b.route.name}`;
  if (ka !== kb) return ka < kb ? -1 : 1;
  if (a.route.kind !== b.route.kind) return a.route.kind < b.route.kind ? -1 : 1;
  if (a.route.rule !== b.route.rule) return a.route.rule - b.route.rule;
  if (a.route.match !== b.route.match) return a.route.match - b.route.match;
  // Same match in different host/path text: keep a total order for determinism.
  const ta = JSON.stringify(a.match);
  const tb = JSON.stringify(b.match);
  return ta < tb ? -1 : ta > tb ? 1 : 0;
}
