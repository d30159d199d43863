/** Label selectors and label sets, as the snapshot's relevance and the translator read them. */
import type { LabelSelector } from "./types";

/** Whether two label sets are equal. */
export function sameLabels(
  a?: Readonly<Record<string, string>>,
  b?: Readonly<Record<string, string>>,
): boolean {
  const ka = Object.keys(a ?? {});
  const kb = Object.keys(b ?? {});
  return ka.length === kb.length && ka.every(k => (a ?? {})[k] === (b ?? {})[k]);
}

/** Whether labels satisfy a Kubernetes label selector (an empty selector selects everything). */
export function selectorMatches(
  selector: LabelSelector | undefined,
  labels: Readonly<Record<string, string>> = {},
): boolean {
  if (!selector) return true;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {}))
    if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    const vals = e.values ?? [];
    switch (e.operator) {
      case "In":
        if (!has || !vals.includes(labels[e.key])) return false;
        break;
      case "NotIn":
        if (has && vals.includes(labels[e.key])) return false;
        break;
      case "Exists":
        if (!has) return false;
        break;
      case "DoesNotExist":
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}
