/**
 * Which objects of a refused config the proxy refuses: a pure search over the Gateway's
 * candidates (its listeners, ListenerSets and routes) with an injected validation of "the
 * config without these objects" (the proxy's validation-only endpoint: nothing it serves is
 * touched). Delta debugging in its simplest form: with the culprits found so far left out,
 * binary-search the shortest prefix of the remaining candidates whose exclusion makes the
 * config valid; its last element is a culprit (without it, the prefix before it was not
 * enough). Repeat until the config is valid. k culprits among n candidates cost about
 * k × (log2 n + 1) + 1 validations; the search stops at `maxValidations`.
 *
 * Assumes that leaving objects out never makes a valid config invalid (true of our configs:
 * objects do not depend on each other's presence). The whole config is validated first: a
 * load refused for what validation cannot see (a port in use when the proxy starts its
 * servers) blames no object.
 */
import { Validation } from "../proxies";

export interface CulpritSearchInput<T> {
  readonly candidates: readonly T[];
  /** Would the proxy load the config without `excluded`? (Errors: the search cannot go on.) */
  readonly validate: (
    excluded: readonly T[],
  ) => Promise<{ ok: true; value: Validation } | { ok: false; error: { message: string } }>;
  readonly maxValidations?: number;
}

export interface Culprit<T> {
  readonly object: T;
  /** The proxy's error for the config with this object in and the other culprits out. */
  readonly message: string;
}

export type CulpritResult<T> =
  /** Leaving these out makes the config valid. */
  | {
      readonly kind: "culprits";
      readonly culprits: readonly Culprit<T>[];
      readonly validations: number;
    }
  /** Refused even with every candidate left out: the Gateway's own problem. */
  | { readonly kind: "gateway"; readonly message: string; readonly validations: number }
  /** The whole config validates: what the proxy refused is not in the config alone. */
  | { readonly kind: "accepted"; readonly validations: number }
  /**
   * Validation failed or the budget ran out; `confirmed`: the whole config was refused by
   * validation before that.
   */
  | {
      readonly kind: "unknown";
      readonly message: string;
      readonly validations: number;
      readonly confirmed: boolean;
    };

export const DEFAULT_MAX_VALIDATIONS = 64;

export async function findCulprits<T>(input: CulpritSearchInput<T>): Promise<CulpritResult<T>> {
  const max = input.maxValidations ?? DEFAULT_MAX_VALIDATIONS;
  let validations = 0;
  const culprits: Culprit<T>[] = [];
  class Stop extends Error {}
  /** undefined: valid; otherwise the proxy's error. */
  const check = async (excluded: readonly T[]): Promise<string | undefined> => {
    if (validations >= max) throw new Stop(`gave up after ${validations} validations`);
    validations++;
    const r = await input.validate(excluded);
    if (!r.ok) throw new Stop(`cannot validate: ${r.error.message}`);
    return r.value.accepted ? undefined : r.value.message;
  };
  let confirmed = false;
  try {
    const whole = await check([]);
    if (whole === undefined) return { kind: "accepted", validations };
    confirmed = true;
    const everything = await check(input.candidates);
    if (everything !== undefined) return { kind: "gateway", message: everything, validations };
    let remaining = [...input.candidates];
    let refusal = whole; // of the config with the culprits so far left out
    for (;;) {
      if (remaining.length === 0)
        throw new Stop("refused with every candidate left out, one by one");
      const out = culprits.map(c => c.object);
      // The shortest prefix of `remaining` to leave out (with the culprits) for a valid config:
      // known refused with `lo` left out, valid with `hi` left out.
      let lo = 0;
      let hi = remaining.length;
      let atLo = refusal;
      while (hi - lo > 1) {
        const mid = (lo + hi) >> 1;
        const got = await check([...out, ...remaining.slice(0, mid)]);
        if (got === undefined) hi = mid;
        else [lo, atLo] = [mid, got];
      }
      culprits.push({ object: remaining[hi - 1]!, message: atLo });
      remaining = remaining.filter((_, i) => i !== hi - 1);
      const next = await check(culprits.map(c => c.object));
      if (next === undefined) return { kind: "culprits", culprits, validations };
      refusal = next;
    }
  } catch (e) {
    if (e instanceof Stop) return { kind: "unknown", message: e.message, validations, confirmed };
    throw e;
  }
}
