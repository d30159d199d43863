/**
 * What makes translation incremental, in one place: translation (translate.ts and the files it
 * calls) stays a set of pure per-object functions, and these memos decide only how much of it
 * is recomputed, never what it returns (docs/architecture.md §3). The incremental-equals-full
 * property (reconcile/incremental.test.ts, translate/property.test.ts) guards that.
 *
 * The memos are module state keyed by the snapshot's objects (WeakMaps: an object no snapshot
 * holds is forgotten with it), so every translate() call shares them, whoever calls it:
 * - attachRoutes (routes.ts): every route attached to its parents, patched from the last build
 *   in the same world when only routes changed, else each unchanged route replayed; each
 *   route's compilation kept while what it read is the same (compile.ts); snapshot maps sorted
 *   once per version (order.ts).
 * - stableData, stableEgress (kept.ts): equal inputs keep their identity from build to build,
 *   so the memos keyed by them hit.
 * - keptGroup, rankedGroup, precedenceOrder (kept.ts, listener-routes.ts): a listener's route
 *   entries and their precedence order, patched instead of rebuilt.
 * - StatusEchoes (status-echo.ts): the one explicit memo, held by the controller's
 *   incremental translator (reconcile/reuse.ts) and passed in as an option.
 */
export { attachRoutes, routeDeltas } from "./routes";
export { keptGroup, stableData, stableEgress } from "./kept";
export { precedenceOrder, rankedGroup } from "./listener-routes";
export type { Ranked, RankedGroup } from "./listener-routes";
export { StatusEchoes, onlyStatusChanged } from "./status-echo";
