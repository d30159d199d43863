/**
 * Rendered route fragments kept per IR entry, and the counts of fragments rendered and reused:
 * the memo both render-memo.ts and listener-memo.ts read, below either of them.
 */
import type { HTTPRouteEntryIR } from "../ir";
import type { CaddyHandler, CaddyRoute } from "./types";

/** A backend set an entry's route names (shared dispatch): its reverse_proxy by its JSON. */
export interface DispatchUse {
  readonly key: string;
  readonly id: string;
  readonly handler: CaddyHandler;
}

/** An entry's rendered route and what rendering it did besides. */
export interface EntryFragment {
  /** The rendering context it was made in (entryContext in config.ts). */
  readonly context: string;
  readonly route: CaddyRoute;
  readonly uses: readonly DispatchUse[];
  readonly needsErrorServer: boolean;
}

const fragments = new WeakMap<HTTPRouteEntryIR, EntryFragment>();
/** The fragment each rendered route comes from (listener-memo.ts takes a removed one's uses). */
const byRoute = new WeakMap<CaddyRoute, EntryFragment>();
let fragmentsRendered = 0;
let fragmentsReused = 0;

/** The entry's fragment, if it was rendered in `context`. */
export function fragmentOf(e: HTTPRouteEntryIR, context: string): EntryFragment | undefined {
  const f = fragments.get(e);
  if (f?.context !== context) return undefined;
  fragmentsReused++;
  return f;
}

export function keepFragment(e: HTTPRouteEntryIR, f: EntryFragment): void {
  fragmentsRendered++;
  fragments.set(e, f);
  byRoute.set(f.route, f);
}

/** The fragment a rendered route comes from, if it was rendered with a memo. */
export const fragmentOfRoute = (r: CaddyRoute): EntryFragment | undefined => byRoute.get(r);

/** `n` entries kept with their fragments without looking them up (listener-memo.ts). */
export function countReused(n: number): void {
  fragmentsReused += n;
}

/** Route entries rendered and reused so far (build-timings and the bench report the difference). */
export const fragmentCounts = (): { readonly rendered: number; readonly reused: number } => ({
  rendered: fragmentsRendered,
  reused: fragmentsReused,
});
