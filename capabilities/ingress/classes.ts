/**
 * Which Ingresses are ours and what serves them (docs/ingress.md, "The class"). An Ingress is
 * ours when its class is an IngressClass whose spec.controller is ours: named by
 * spec.ingressClassName, else by the legacy `kubernetes.io/ingress.class` annotation, else,
 * with neither, the cluster's default class (the `is-default-class` annotation) when that is
 * ours. The class's spec.parameters say which proxies serve it: a Gateway (its proxies and
 * listeners) or our KengineParameters (a managed fleet of its own).
 */
import type { V1Ingress, V1IngressClass } from "@kubernetes/client-node";
import { PARAMETERS_GROUP, PARAMETERS_KIND } from "../validation/parametersref";

/** The spec.controller of our IngressClasses. */
export const INGRESS_CONTROLLER = "kengine.io/ingress-controller";
/** Marks the class used by Ingresses that name none. */
export const DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class";
/** The class name as Ingresses gave it before spec.ingressClassName existed. */
export const LEGACY_CLASS_ANNOTATION = "kubernetes.io/ingress.class";
export const GATEWAY_GROUP = "gateway.networking.k8s.io";
/**
 * On our IngressClass, "true" makes its Ingresses' `nginx.ingress.kubernetes.io/*`
 * annotations read (validation/nginx-annotations.ts); otherwise they are ignored with a warning.
 */
export const NGINX_ANNOTATIONS_OPT_IN = "kengine.io/ingress-nginx-annotations";

/** Whether a class reads the ingress-nginx annotations of its Ingresses. */
export const readsNginxAnnotations = (cls: V1IngressClass | undefined): boolean =>
  cls?.metadata?.annotations?.[NGINX_ANNOTATIONS_OPT_IN] === "true";

const isOurs = (c: V1IngressClass): boolean => c.spec?.controller === INGRESS_CONTROLLER;

const isDefault = (c: V1IngressClass): boolean =>
  c.metadata?.annotations?.[DEFAULT_CLASS_ANNOTATION] === "true";

const created = (c: V1IngressClass): number => {
  const t = c.metadata?.creationTimestamp as unknown;
  const ms = t instanceof Date ? t.getTime() : typeof t === "string" ? Date.parse(t) : NaN;
  return Number.isNaN(ms) ? 0 : ms;
};

/**
 * The cluster's default IngressClass, of any controller: with several marked default, the
 * newest (then the first by name), as Kubernetes picks among several default StorageClasses.
 */
export function defaultClass(classes: readonly V1IngressClass[]): V1IngressClass | undefined {
  return classes
    .filter(isDefault)
    .sort(
      (a, b) =>
        created(b) - created(a) ||
        (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? "", "en"),
    )[0];
}

/** The name of the class an Ingress asks for, or undefined when it asks for none. */
export function requestedClassName(ingress: V1Ingress): string | undefined {
  const named = ingress.spec?.ingressClassName;
  if (named) return named;
  const legacy = ingress.metadata?.annotations?.[LEGACY_CLASS_ANNOTATION];
  return legacy ? legacy : undefined;
}

/** Our IngressClass serving this Ingress, or undefined when the Ingress is not ours. */
export function classOf(
  ingress: V1Ingress,
  classes: readonly V1IngressClass[],
): V1IngressClass | undefined {
  const name = requestedClassName(ingress);
  const cls =
    name === undefined ? defaultClass(classes) : classes.find(c => c.metadata?.name === name);
  return cls && isOurs(cls) ? cls : undefined;
}

/** The Ingresses of one of our classes, each with its class, in a stable order. */
export function ourIngresses(
  ingresses: readonly V1Ingress[],
  classes: readonly V1IngressClass[],
): { ingress: V1Ingress; cls: V1IngressClass }[] {
  return ingresses
    .flatMap(ingress => {
      const cls = classOf(ingress, classes);
      return cls ? [{ ingress, cls }] : [];
    })
    .sort((a, b) => key(a.ingress).localeCompare(key(b.ingress), "en"));
}

const key = (o: V1Ingress): string => `${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;

/** What serves a class: a Gateway, or a fleet of its own described by KengineParameters. */
export type Serving =
  | { readonly kind: "Gateway"; readonly namespace: string; readonly name: string }
  | { readonly kind: "KengineParameters"; readonly namespace: string; readonly name: string }
  | { readonly kind: "Invalid"; readonly reason: string };

/**
 * Reads spec.parameters of our IngressClass. Both targets are namespaced, so the reference must
 * have scope Namespace and a namespace.
 */
export function servingOf(cls: V1IngressClass): Serving {
  const p = cls.spec?.parameters;
  const at = `IngressClass ${cls.metadata?.name ?? ""} spec.parameters`;
  if (!p) return { kind: "Invalid", reason: `${at}: must name a Gateway or KengineParameters` };
  const group = p.apiGroup ?? "";
  const supported =
    (group === GATEWAY_GROUP && p.kind === "Gateway") ||
    (group === PARAMETERS_GROUP && p.kind === PARAMETERS_KIND);
  if (!supported)
    return {
      kind: "Invalid",
      reason: `${at}: ${group || "core"}/${p.kind} is not supported (use ${GATEWAY_GROUP}/Gateway or ${PARAMETERS_GROUP}/${PARAMETERS_KIND})`,
    };
  if (p.scope !== "Namespace" || !p.namespace)
    return {
      kind: "Invalid",
      reason: `${at}: ${p.kind} is namespaced: set scope: Namespace and a namespace`,
    };
  if (!p.name) return { kind: "Invalid", reason: `${at}: name is required` };
  return { kind: p.kind as "Gateway" | "KengineParameters", namespace: p.namespace, name: p.name };
}

/** Read-only look-ups of IngressClasses (admission holds no snapshot). */
export interface ClassLookups {
  /** One IngressClass by name, or undefined when it does not exist. */
  readonly named: (name: string) => Promise<V1IngressClass | undefined>;
  /** Every IngressClass (only read for an Ingress that names no class). */
  readonly all: () => Promise<V1IngressClass[]>;
}

/**
 * Our IngressClass of an Ingress, read through look-ups: the named class (field or legacy
 * annotation), else the cluster's default class. The same rule as `classOf`.
 */
export async function ourClassOf(
  ingress: V1Ingress,
  lookups: ClassLookups,
): Promise<V1IngressClass | undefined> {
  const name = requestedClassName(ingress);
  if (name !== undefined) {
    const cls = await lookups.named(name);
    return cls === undefined ? undefined : classOf(ingress, [cls]);
  }
  return classOf(ingress, await lookups.all());
}

/** Whether an Ingress is of one of our classes, read through look-ups (`ourClassOf`). */
export async function isOurIngress(ingress: V1Ingress, lookups: ClassLookups): Promise<boolean> {
  return (await ourClassOf(ingress, lookups)) !== undefined;
}
