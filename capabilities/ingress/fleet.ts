/**
 * A fleet of its own for an IngressClass whose spec.parameters name our KengineParameters
 * (docs/ingress.md, "A fleet of its own"): the ingress stage adds one Gateway, of a GatewayClass
 * whose parametersRef is those parameters, to the snapshot it translates, and the pipeline
 * provisions, programs and addresses it like any managed Gateway. Neither object exists in the
 * API: their status is never written, and what the controller creates for them is owned by the
 * IngressClass, so deleting the class removes its proxies.
 *
 * Such a Gateway serves its class's Ingresses only: a route or ListenerSet a tenant wrote that
 * names it is refused (translate/attach.ts, translate/listeners.ts). What the stage made is told
 * apart by object identity (here and in synthetic.ts), never by labels or names a tenant can
 * copy.
 */
import { createHash } from "node:crypto";
import type { V1IngressClass } from "@kubernetes/client-node";
import { CONTROLLER_NAME, GATEWAY_GROUP, type KubeObject } from "../snapshot";
import { PARAMETERS_GROUP, PARAMETERS_KIND } from "../validation/parametersref";

/** The HTTP port of a fleet's Gateway; its HTTPS listeners come from the Ingresses' `tls`. */
export const FLEET_HTTP_PORT = 80;

/** An owner reference of what the controller creates for a fleet's Gateway: its IngressClass. */
export interface FleetOwner {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

/** Fleet Gateways the stage made, with their IngressClass. */
const fleetGateways = new WeakMap<
  object,
  { readonly className: string; readonly owner: FleetOwner }
>();
/** Fleet GatewayClasses the stage made. */
const fleetClasses = new WeakSet<object>();

/** The IngressClass a fleet Gateway serves, or undefined for any other Gateway. */
export const ingressOnlyClass = (gateway: unknown): string | undefined =>
  typeof gateway === "object" && gateway !== null
    ? fleetGateways.get(gateway)?.className
    : undefined;

/** Whether the stage made this Gateway or GatewayClass for a class's fleet (identity). */
export const isFleetObject = (o: unknown): boolean =>
  typeof o === "object" && o !== null && (fleetGateways.has(o) || fleetClasses.has(o));

/** The owner of what the controller creates for a fleet Gateway (undefined: any other Gateway). */
export const fleetOwner = (gateway: unknown): FleetOwner | undefined =>
  typeof gateway === "object" && gateway !== null ? fleetGateways.get(gateway)?.owner : undefined;

/**
 * The fleet Gateway's name for a class: `ingress-<class>`. Class names are DNS subdomains;
 * the proxies' Service names must be DNS labels, so dots become dashes, with a hash of the
 * class name to keep `a.b` and `a-b` apart.
 */
export function fleetGatewayName(className: string): string {
  if (!className.includes(".")) return `ingress-${className}`;
  const hash = createHash("sha256").update(className).digest("hex").slice(0, 8);
  return `ingress-${className.replace(/\./g, "-")}-${hash}`;
}

/** The synthetic GatewayClass's name: not a valid object name, so no real class can have it. */
export const fleetClassName = (className: string): string => `ingressclass:${className}`;

export interface FleetObjects {
  readonly gatewayClass: KubeObject;
  readonly gateway: KubeObject;
}

/**
 * The GatewayClass and Gateway of a class's fleet, in the parameters' namespace. The Gateway
 * has one HTTP listener and takes routes and ListenerSets from every namespace: the stage's
 * own (every Ingress of the class, wherever it lives); anyone else's are refused by identity.
 */
export function fleetObjects(
  cls: V1IngressClass,
  parameters: { readonly namespace: string; readonly name: string },
): FleetObjects {
  const className = cls.metadata?.name ?? "";
  const created = cls.metadata?.creationTimestamp as unknown;
  const creationTimestamp =
    created instanceof Date && !Number.isNaN(created.getTime())
      ? created.toISOString()
      : typeof created === "string"
        ? created
        : undefined;
  const uid = cls.metadata?.uid ?? "";
  const meta = {
    uid: `ingressclass/${uid}`,
    generation: 1,
    ...(creationTimestamp !== undefined && { creationTimestamp }),
    annotations: { "ingress.kengine.io/ingress-class": className },
  };
  const gatewayClass = {
    apiVersion: `${GATEWAY_GROUP}/v1`,
    kind: "GatewayClass",
    metadata: { ...meta, name: fleetClassName(className) },
    spec: {
      controllerName: CONTROLLER_NAME,
      parametersRef: {
        group: PARAMETERS_GROUP,
        kind: PARAMETERS_KIND,
        namespace: parameters.namespace,
        name: parameters.name,
      },
    },
  } as unknown as KubeObject;
  const gateway = {
    apiVersion: `${GATEWAY_GROUP}/v1`,
    kind: "Gateway",
    metadata: { ...meta, name: fleetGatewayName(className), namespace: parameters.namespace },
    spec: {
      gatewayClassName: fleetClassName(className),
      listeners: [
        {
          name: "http",
          port: FLEET_HTTP_PORT,
          protocol: "HTTP",
          allowedRoutes: { namespaces: { from: "All" } },
        },
      ],
      allowedListeners: { namespaces: { from: "All" } },
    },
  } as unknown as KubeObject;
  fleetClasses.add(gatewayClass);
  fleetGateways.set(gateway, {
    className,
    owner: { apiVersion: "networking.k8s.io/v1", kind: "IngressClass", name: className, uid },
  });
  return { gatewayClass, gateway };
}
