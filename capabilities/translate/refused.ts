/**
 * Objects a Gateway's proxies refused (reconcile/isolation.ts finds them): the translator
 * leaves each one out of that Gateway's config and reports the proxy's reason on the object
 * itself, so one refused object never takes the rest of the Gateway down.
 *
 * An entry names the object and what was refused (its fingerprint: a hash of what the object
 * contributes to the config, references resolved, endpoints left out). It applies only while
 * the object still contributes the same thing: a fixed object (or a fixed Secret, ConfigMap or
 * policy it uses) has another fingerprint and is tried again.
 */
import { createHash } from "node:crypto";
import { Condition, ConditionType, ListenerReason, condition } from "./conditions";
import type { RefusableKind, RefusableObject, RouteKind } from "../ir/refusable";
import { ResolvedListener } from "./listeners";

export type { RefusableKind, RefusableObject };

export interface RefusedObject extends RefusableObject {
  /** `<namespace>/<name>` of the Gateway whose proxies refused it. */
  readonly gateway: string;
  /** The proxy's own error, verbatim. */
  readonly reason: string;
  /** The field that caused it, when known. */
  readonly field?: string;
}

/** The refusals of one Gateway, looked up by object identity. */
export class Refusals {
  readonly #byId = new Map<string, RefusedObject>();

  constructor(
    readonly gateway: string,
    refused: readonly RefusedObject[],
  ) {
    for (const r of refused) if (r.gateway === gateway) this.#byId.set(identityOf(r), r);
  }

  get size(): number {
    return this.#byId.size;
  }

  /** The refusal of this object if it still contributes what was refused. */
  find(
    object: Omit<RefusableObject, "fingerprint">,
    fingerprint: () => string,
  ): RefusedObject | undefined {
    const r = this.#byId.get(identityOf(object));
    return r && r.fingerprint === fingerprint() ? r : undefined;
  }
}

export const identityOf = (o: Omit<RefusableObject, "fingerprint">): string =>
  `${o.kind}/${o.namespace}/${o.name}${o.listener === undefined ? "" : `/${o.listener}`}`;

/** A short stable hash of `value`; endpoint lists are left out (pods come and go). */
export function fingerprintOf(value: unknown): string {
  const json = JSON.stringify(value, (k, v: unknown) => (k === "endpoints" ? undefined : v));
  return createHash("sha256")
    .update(json ?? "")
    .digest("hex")
    .slice(0, 16);
}

/** What a listener contributes to the config. */
export const listenerFingerprint = (l: ResolvedListener): unknown => ({
  listener: l.listener,
  certificates: l.certificates,
  clientValidation: l.clientValidation,
});

/** What a ListenerSet contributes: its listeners. */
const listenerSetFingerprint = (
  listeners: readonly ResolvedListener[],
  namespace: string,
  name: string,
): string =>
  fingerprintOf(
    listeners
      .filter(
        l =>
          l.owner.kind === "ListenerSet" &&
          l.owner.namespace === namespace &&
          l.owner.name === name,
      )
      .map(listenerFingerprint),
  );

/** The message on the refused object's own status. */
export function refusalMessage(r: RefusedObject, what: string): string {
  const field = r.field ? ` (${r.field})` : "";
  return `the proxies of Gateway ${r.gateway} refused ${what}${field}: ${r.reason}`;
}

/**
 * Listeners of a Gateway with the refused ones (a Gateway's own listener, or every listener
 * of a refused ListenerSet) no longer served: Programmed=False, reason Invalid.
 */
export function withoutRefusedListeners(
  listeners: readonly ResolvedListener[],
  refusals: Refusals,
): readonly ResolvedListener[] {
  if (refusals.size === 0) return listeners;
  const setFingerprints = new Map<string, string>();
  const setFingerprint = (namespace: string, name: string): string => {
    const key = `${namespace}/${name}`;
    let f = setFingerprints.get(key);
    if (f === undefined) {
      f = listenerSetFingerprint(listeners, namespace, name);
      setFingerprints.set(key, f);
    }
    return f;
  };
  return listeners.map(l => {
    if (!l.served) return l;
    const { kind, namespace, name } = l.owner;
    const refusal =
      kind === "ListenerSet"
        ? refusals.find({ kind, namespace, name }, () => setFingerprint(namespace, name))
        : refusals.find({ kind: "Listener", namespace, name, listener: l.listener.name }, () =>
            fingerprintOf(listenerFingerprint(l)),
          );
    if (!refusal) return l;
    const what =
      kind === "ListenerSet" ? `ListenerSet ${namespace}/${name}` : `listener ${l.listener.name}`;
    const programmed = condition(
      ConditionType.Programmed,
      false,
      ListenerReason.Invalid,
      refusalMessage(refusal, `the configuration of ${what}`),
      l.owner.generation,
    );
    const conditions: Condition[] = l.conditions.map(c =>
      c.type === ConditionType.Programmed ? programmed : c,
    );
    return { ...l, served: false, conditions };
  });
}

/**
 * Every object that contributes to a Gateway's config on its own: the routes attached to it,
 * its ListenerSets with a served listener, and its own served listeners; in that order, the
 * most specific first: leaving a listener out also leaves out every route on it, so a culprit
 * search (reconcile/culprits.ts, shortest prefix) must try the routes before their listeners.
 */
export function refusableObjects(
  listeners: readonly ResolvedListener[],
  routes: readonly {
    readonly kind: RouteKind;
    readonly namespace: string;
    readonly name: string;
    readonly compiled: unknown;
  }[],
): readonly RefusableObject[] {
  const out: RefusableObject[] = routes.map(r => ({
    kind: r.kind,
    namespace: r.namespace,
    name: r.name,
    fingerprint: fingerprintOf(r.compiled),
  }));
  const served = listeners.filter(l => l.served);
  const sets = new Map<string, { namespace: string; name: string }>();
  for (const l of served)
    if (l.owner.kind === "ListenerSet") sets.set(`${l.owner.namespace}/${l.owner.name}`, l.owner);
  for (const { namespace, name } of sets.values())
    out.push({
      kind: "ListenerSet",
      namespace,
      name,
      fingerprint: listenerSetFingerprint(listeners, namespace, name),
    });
  for (const l of served.filter(x => x.owner.kind === "Gateway"))
    out.push({
      kind: "Listener",
      namespace: l.owner.namespace,
      name: l.owner.name,
      listener: l.listener.name,
      fingerprint: fingerprintOf(listenerFingerprint(l)),
    });
  return out;
}
