/**
 * Whether a change of a Namespace can matter to a build: its labels, when a listener or an ACME
 * issuer selects namespaces by label; the start (or end) of its deletion, when it holds an
 * Ingress (an Ingress in a namespace being deleted is served no more, reconcile/ingress-stage.ts).
 */
import { sameLabels } from "./labels";
import type { KubeObject } from "./types";

export function namespaceChangeMatters(
  ingresses: ReadonlyMap<string, KubeObject>,
  namespaceSelectors: boolean,
  before?: KubeObject,
  after?: KubeObject,
): boolean {
  if (namespaceSelectors && !sameLabels(before?.metadata.labels, after?.metadata.labels))
    return true;
  const deleting = (o?: KubeObject) => o?.metadata.deletionTimestamp !== undefined;
  if (deleting(before) === deleting(after)) return false;
  const name = (after ?? before)?.metadata.name;
  for (const o of ingresses.values()) if (o.metadata.namespace === name) return true;
  return false;
}
