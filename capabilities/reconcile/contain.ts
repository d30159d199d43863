/**
 * A failure in one Gateway affects that Gateway alone: planning each Gateway is
 * wrapped on its own, and a proxy pod claimed by two Gateways (two bring-your-own Services
 * that select the same pod) stays with the Gateway that claimed it first; the other is told
 * why. Pure: the reconciler applies the outcome (status, pushes).
 */
import type { GatewayPlan } from "./plan";

export type Outcome<T> =
  | { readonly ok: true; readonly key: string; readonly value: T }
  | { readonly ok: false; readonly key: string; readonly error: string };

/** Runs `fn` for every item on its own: an exception fails that item only. */
export function each<I, T>(
  items: readonly I[],
  keyOf: (item: I) => string,
  fn: (item: I) => T,
): Outcome<T>[] {
  return items.map(item => {
    const key = keyOf(item);
    try {
      return { ok: true, key, value: fn(item) };
    } catch (e) {
      return { ok: false, key, error: e instanceof Error ? e.message : String(e) };
    }
  });
}

/** The message a Gateway whose plan failed shows on Programmed. */
export const planFailure = (error: string): string =>
  `cannot translate this Gateway's configuration: ${error}`;

/** What containment needs of a plan (GatewayPlan has it all). */
export type ClaimingPlan = Pick<GatewayPlan, "key" | "targets" | "proxies" | "configProblem">;

/**
 * Gives every proxy pod to one Gateway: the first claimant in `order` (oldest Gateway first,
 * then by name) keeps it; a later Gateway whose Services select the same pod loses that pod
 * (no push, no KengineProxy) and gets a config problem naming the pod and the Gateway that
 * keeps it. Plans without conflicts come back unchanged (same object).
 */
export function claimProxies<P extends ClaimingPlan>(
  plans: readonly P[],
  order: (key: string) => string,
): P[] {
  const owner = new Map<string, string>();
  const sorted = [...plans].sort((a, b) => {
    const x = order(a.key);
    const y = order(b.key);
    return x < y ? -1 : x > y ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
  });
  const lost = new Map<string, string[]>();
  for (const p of sorted) {
    const names = new Set([...p.targets.map(t => t.endpoint.name), ...p.proxies.map(x => x.name)]);
    for (const name of names) {
      const first = owner.get(name);
      if (first === undefined || first === p.key) owner.set(name, p.key);
      else lost.set(p.key, [...(lost.get(p.key) ?? []), `${name} (kept by Gateway ${first})`]);
    }
  }
  return plans.map(p => {
    const pods = lost.get(p.key);
    if (!pods) return p;
    const mine = (name: string) => owner.get(name) === p.key;
    const problem = `proxy pods selected by another Gateway's Services too: ${pods.join(", ")}; a pod serves one Gateway (change this Gateway's Services' selectors)`;
    return {
      ...p,
      targets: p.targets.filter(t => mine(t.endpoint.name)),
      proxies: p.proxies.filter(x => mine(x.name)),
      configProblem: p.configProblem ? `${p.configProblem}; ${problem}` : problem,
    };
  });
}
