/**
 * The routes and ListenerSets the ingress stage made from Ingresses, known by object identity:
 * only they may carry the `x-kengine-*` rule fields (translate/routes.ts) and attach to a
 * class's own Gateway (fleet.ts), and only their conditions are reported on an Ingress
 * (reconcile/ingress-stage.ts). A tenant's object wearing the stage's label or annotations is
 * not one of them.
 */
const made = new WeakSet<object>();

/** Marks an object the ingress stage made from an Ingress. */
export const markIngressObject = (o: object): void => void made.add(o);

/** Whether the ingress stage made this object from an Ingress. */
export const isIngressObject = (o: unknown): boolean =>
  typeof o === "object" && o !== null && made.has(o);
