/**
 * Hostname semantics of listeners and routes. A wildcard `*.example.com` matches any name
 * with at least one more label (`a.example.com`, `a.b.example.com`), never `example.com`.
 */

const lower = (h: string): string => h.toLowerCase();

export const isWildcard = (h: string): boolean => h.startsWith("*.");

/** Whether the concrete or wildcard hostname `name` is covered by `pattern`. */
export function covers(pattern: string, name: string): boolean {
  const p = lower(pattern);
  const n = lower(name);
  if (!isWildcard(p)) return p === n;
  const suffix = p.slice(1); // ".example.com"
  if (isWildcard(n)) return n.slice(1).endsWith(suffix) && n.length >= p.length;
  return n.endsWith(suffix) && n.length > suffix.length;
}

/**
 * The hostnames a route serves on a listener: the intersection of the listener's hostname
 * and the route's hostnames. `undefined` means "any host" (neither side restricts);
 * an empty array means the route does not match the listener.
 */
export function intersectHostnames(
  listener: string | undefined,
  route: readonly string[] | undefined,
): string[] | undefined {
  const routeHosts = route ?? [];
  if (!listener) return routeHosts.length === 0 ? undefined : dedupe(routeHosts);
  if (routeHosts.length === 0) return [lower(listener)];
  const out: string[] = [];
  for (const r of routeHosts) {
    if (covers(listener, r)) out.push(lower(r));
    else if (covers(r, listener)) out.push(lower(listener));
  }
  return dedupe(out);
}

function dedupe(hosts: readonly string[]): string[] {
  return [...new Set(hosts.map(lower))];
}

const dots = (h: string): number => h.split(".").length - 1;

/**
 * Orders hostnames from most to least specific, as the spec orders listeners: exact names
 * before wildcards, wildcards with more dots right of the `*` first; then longer before
 * shorter, then alphabetically; "any host" (undefined) last.
 */
export function compareHostSpecificity(a: string | undefined, b: string | undefined): number {
  if (a === b) return 0;
  if (a === undefined) return 1;
  if (b === undefined) return -1;
  const wa = isWildcard(a);
  const wb = isWildcard(b);
  if (wa !== wb) return wa ? 1 : -1;
  if (wa && dots(a) !== dots(b)) return dots(b) - dots(a);
  if (a.length !== b.length) return b.length - a.length;
  return a < b ? -1 : 1;
}
