/**
 * Structural equality of JSON-like data, fast enough for the build's hot path: the
 * IR reuse (reconcile/reuse.ts) and the status memo (status/compute.ts) compare each build's
 * results with the previous build's.
 */

/** Deep equality of JSON-like data (objects, arrays, strings, numbers, booleans, null, undefined). */
export function sameData(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameData(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    // key order matters too: rendering follows it, and the bytes must be the same
    if (ka[i] !== kb[i]) return false;
    const k = ka[i]!;
    if (!sameData((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
      return false;
  }
  return true;
}
