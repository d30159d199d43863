/**
 * Admission: Validate bindings for the Gateway API objects that belong to our GatewayClass,
 * and for our own parameters resource. Registration only; the rules live in validation/
 * (shared with the translator and provisioning), the ownership look-ups in ownership/.
 *
 * Bound kinds are those with a rule the proxy needs: Gateway and ListenerSet (listeners),
 * HTTPRoute and GRPCRoute (matches, filters, rule features), TLSRoute, TCPRoute and UDPRoute
 * (backend weights beyond the layer-4 balancer), KengineParameters (values no proxy fleet can
 * be built from). Not bound, because nothing in them may be refused (docs/admission.md):
 * GatewayClass (a parametersRef that does not resolve, or resolves to bad data, is
 * Accepted=False/InvalidParameters by the spec), ReferenceGrant (belongs to no class; what it
 * grants is read by the routes' status), BackendTLSPolicy (the spec puts an unsupported
 * wellKnownCACertificates in its status; it targets Services that other implementations'
 * routes may use, so its subjectAltNames are reported in its status, validation/
 * backendtlspolicy.ts). A webhook for them could never deny, only add latency and a failure
 * mode for every implementation in the cluster.
 *
 * Each request is judged from the object and cached read-only look-ups alone: no state is
 * kept between requests (Pepr runs two admission replicas). Webhook settings (package.json
 * pepr block): failurePolicy Fail (onError: reject: an object of ours must not slip through
 * unchecked), timeout 5 s; sideEffects None (Pepr's default, true: nothing is written).
 */
import { Capability, K8s, PeprValidateRequest } from "pepr";
import {
  GRPCRoute,
  Gateway,
  GatewayClass,
  HTTPRoute,
  ListenerSet,
  TCPRoute,
  TLSRoute,
  UDPRoute,
} from "./generated";
import {
  OwnershipLookups,
  cached,
  isOurGateway,
  isOurGatewayClass,
  isOurRoute,
  withDeadline,
} from "./ownership";
import { gatewayProblems } from "./validation/gateway";
import { grpcRouteProblems } from "./validation/grpcroute";
import { httpRouteProblems } from "./validation/httproute";
import { l4RouteProblems } from "./validation/l4route";
import { kengineParametersProblems } from "./validation/parameters";
import { KengineParameters } from "./reconcile/watched";
import { denialMessage } from "./validation/message";
import { FieldProblem } from "./validation/regex";

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
    async key =>
      (await get(() => K8s(Gateway).InNamespace(key.namespace).Get(key.name)))?.spec
        ?.gatewayClassName,
    LOOKUP_TTL_MS,
  ),
  listenerSetParent: cached(async key => {
    const ls = await get(() => K8s(ListenerSet).InNamespace(key.namespace).Get(key.name));
    const ref = ls?.spec?.parentRef;
    return ref ? { namespace: ref.namespace ?? key.namespace, name: ref.name } : undefined;
  }, LOOKUP_TTL_MS),
};

interface Meta {
  readonly metadata?: { readonly namespace?: string; readonly name?: string };
}

/** Approve objects that are not ours or have no problem; otherwise deny with every problem. */
async function decide<T extends Meta>(
  req: PeprValidateRequest<T>,
  kind: string,
  ours: (obj: T, namespace: string) => Promise<boolean>,
  problems: (obj: T) => FieldProblem[],
) {
  const obj = req.Raw;
  const namespace = obj.metadata?.namespace ?? "default";
  const owned = await withDeadline(ours(obj, namespace), LOOKUP_DEADLINE_MS);
  if (!owned.ok) {
    // Fail closed, as failurePolicy Fail would, but with a message instead of a timeout.
    return req.Deny(
      `${kind} ${namespace}/${obj.metadata?.name ?? ""}: could not tell whether it belongs to a Kengine GatewayClass (${owned.error}); nothing was stored, retry`,
      503,
    );
  }
  if (!owned.value) return req.Approve();
  const found = problems(obj);
  if (found.length === 0) return req.Approve();
  return req.Deny(denialMessage(kind, namespace, obj.metadata?.name ?? "", found), 422);
}

/**
 * How long the ownership look-ups of one request may take: well inside the webhook's timeout
 * (package.json pepr.webhookTimeout, 5 s), so a slow API server yields a clear denial rather
 * than "context deadline exceeded".
 */
const LOOKUP_DEADLINE_MS = 2_000;

export const validateHTTPRoute = (req: PeprValidateRequest<HTTPRoute>) =>
  decide(
    req,
    "HTTPRoute",
    (r, ns) => isOurRoute(ns, r.spec?.parentRefs, lookups),
    httpRouteProblems,
  );

export const validateGRPCRoute = (req: PeprValidateRequest<GRPCRoute>) =>
  decide(
    req,
    "GRPCRoute",
    (r, ns) => isOurRoute(ns, r.spec?.parentRefs, lookups),
    grpcRouteProblems,
  );

export const validateGateway = (req: PeprValidateRequest<Gateway>) =>
  decide(
    req,
    "Gateway",
    g => isOurGatewayClass(g.spec?.gatewayClassName ?? "", lookups),
    gatewayProblems,
  );

/** A ListenerSet is ours when its parent Gateway is; a parent that does not exist yet is not. */
export const validateListenerSet = (req: PeprValidateRequest<ListenerSet>) =>
  decide(
    req,
    "ListenerSet",
    (ls, ns) => {
      const ref = ls.spec?.parentRef;
      return ref
        ? isOurGateway({ namespace: ref.namespace ?? ns, name: ref.name }, lookups)
        : Promise.resolve(false);
    },
    gatewayProblems,
  );

/** TLSRoute, TCPRoute and UDPRoute: ours through any parentRef, like the HTTP routes. */
const validateL4Route =
  (kind: "TLSRoute" | "TCPRoute" | "UDPRoute") =>
  (req: PeprValidateRequest<TLSRoute | TCPRoute | UDPRoute>) =>
    decide(req, kind, (r, ns) => isOurRoute(ns, r.spec?.parentRefs, lookups), l4RouteProblems);
export const validateTLSRoute = validateL4Route("TLSRoute");
export const validateTCPRoute = validateL4Route("TCPRoute");
export const validateUDPRoute = validateL4Route("UDPRoute");

/** KengineParameters is our own API: every object is ours. */
export const validateKengineParameters = (req: PeprValidateRequest<KengineParameters>) =>
  decide(req, "KengineParameters", () => Promise.resolve(true), kengineParametersProblems);

When(HTTPRoute).IsCreatedOrUpdated().Validate(validateHTTPRoute);
When(GRPCRoute).IsCreatedOrUpdated().Validate(validateGRPCRoute);
When(Gateway).IsCreatedOrUpdated().Validate(validateGateway);
When(ListenerSet).IsCreatedOrUpdated().Validate(validateListenerSet);
When(TLSRoute).IsCreatedOrUpdated().Validate(validateTLSRoute);
When(TCPRoute).IsCreatedOrUpdated().Validate(validateTCPRoute);
When(UDPRoute).IsCreatedOrUpdated().Validate(validateUDPRoute);
When(KengineParameters).IsCreatedOrUpdated().Validate(validateKengineParameters);
