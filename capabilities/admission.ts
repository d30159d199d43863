/**
 * Admission: Validate bindings for the Gateway API objects that belong to our GatewayClass.
 * Registration only; the rules live in validation/, the ownership look-ups in ownership/.
 */
import { Capability, K8s, PeprValidateRequest } from "pepr";
import { Gateway, GatewayClass, HTTPRoute, ListenerSet } from "./generated";
import { OwnershipLookups, cached, isOurRoute } from "./ownership";
import { httpRouteProblems } from "./validation/httproute";
import { denialMessage } from "./validation/message";

export const Admission = new Capability({
  name: "kengine-admission",
  description: "Rejects Gateway API objects of the Kengine GatewayClass that the proxy cannot run.",
});

const { When } = Admission;

const LOOKUP_TTL_MS = 5_000;
const get = async <T>(read: () => Promise<T>): Promise<T | undefined> => {
  try {
    return await read();
  } catch (e) {
    if ((e as { status?: number }).status === 404) return undefined;
    throw e;
  }
};

/** API reads for ownership, cached briefly (admission pods hold no snapshot). */
const lookups: OwnershipLookups = {
  gatewayClassController: cached(
    async (name: string) => (await get(() => K8s(GatewayClass).Get(name)))?.spec?.controllerName,
    LOOKUP_TTL_MS,
  ),
  gatewayClassOf: cached(
    async key => (await get(() => K8s(Gateway).InNamespace(key.namespace).Get(key.name)))?.spec?.gatewayClassName,
    LOOKUP_TTL_MS,
  ),
  listenerSetParent: cached(async key => {
    const ls = await get(() => K8s(ListenerSet).InNamespace(key.namespace).Get(key.name));
    const ref = ls?.spec?.parentRef;
    return ref ? { namespace: ref.namespace ?? key.namespace, name: ref.name } : undefined;
  }, LOOKUP_TTL_MS),
};

export async function validateHTTPRoute(req: PeprValidateRequest<HTTPRoute>) {
  const route = req.Raw;
  const namespace = route.metadata?.namespace ?? "default";
  if (!(await isOurRoute(namespace, route.spec?.parentRefs, lookups))) return req.Approve();
  const problems = httpRouteProblems(route);
  if (problems.length === 0) return req.Approve();
  return req.Deny(denialMessage("HTTPRoute", namespace, route.metadata?.name ?? "", problems), 422);
}

When(HTTPRoute).IsCreatedOrUpdated().Validate(validateHTTPRoute);
