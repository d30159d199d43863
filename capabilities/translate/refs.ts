/** ReferenceGrant checks: may an object in one namespace refer to an object in another? */
import { Snapshot } from "../snapshot";

export interface RefFrom {
  readonly group: string;
  readonly kind: string;
  readonly namespace: string;
}

export interface RefTo {
  readonly group: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

/** True when `to` is in `from`'s namespace, or a ReferenceGrant in `to`'s namespace allows it. */
export function refPermitted(s: Snapshot, from: RefFrom, to: RefTo): boolean {
  if (from.namespace === to.namespace) return true;
  for (const grant of s.objects.ReferenceGrant.values()) {
    if (grant.metadata.namespace !== to.namespace) continue;
    const fromOk = (grant.spec?.from ?? []).some(
      f => f.group === from.group && f.kind === from.kind && f.namespace === from.namespace,
    );
    if (!fromOk) continue;
    const toOk = (grant.spec?.to ?? []).some(
      t => (t.group ?? "") === to.group && t.kind === to.kind && (!t.name || t.name === to.name),
    );
    if (toOk) return true;
  }
  return false;
}
