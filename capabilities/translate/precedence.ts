/**
 * Match precedence across all HTTPRoute and GRPCRoute rules attached to one listener, as
 * the Gateway API spec orders it (HTTPRouteRule.matches, HTTPRouteSpec.hostnames):
 *   1. the most specific hostname (exact over wildcard, more labels, longer; none last), then,
 *      when the listener/route intersections are the same, the most specific of the route's
 *      own hostnames (GatewayRouteHostnameIntersectionPrecedence, Gateway API v1.7.0);
 *   2. path: Exact, then RegularExpression (implementation-specific; we rank it between),
 *      then PathPrefix; within a kind, the longer value first;
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

const PATH_RANK = { Exact: 0, RegularExpression: 1, PathPrefix: 2 } as const;

export function comparePrecedence(a: RankedMatch, b: RankedMatch): number {
  const host = compareHostSpecificity(a.match.hostname, b.match.hostname);
  if (host !== 0) return host;
  const origin = compareHostSpecificity(a.origin, b.origin);
  if (origin !== 0) return origin;
  const pa = a.match.path;
  const pb = b.match.path;
  if (pa.type !== pb.type) return PATH_RANK[pa.type] - PATH_RANK[pb.type];
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
