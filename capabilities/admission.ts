/**
 * Admission: Validate bindings for the Gateway API objects that belong to our GatewayClass,
 * and for our own parameters resource. Registration only; the rules live in validation/
 * (shared with the translator and provisioning), the ownership look-ups in ownership/.
 *
 * Bound kinds, and when an object is ours:
 * - GatewayClass: its controllerName is ours (read from the object, no look-up).
 * - Gateway: its class is ours. ListenerSet: its parent Gateway is ours.
 * - HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute: any parentRef reaches a Gateway of ours
 *   (directly or through a ListenerSet).
 * - BackendTLSPolicy: a targetRef Service is a backend of an HTTPRoute or GRPCRoute of ours.
 * - XBackend: it is a backendRef of an HTTPRoute or GRPCRoute of ours.
 * - Ingress (networking.k8s.io/v1): its IngressClass (named, legacy annotation or the default)
 *   is ours (ingress/classes.ts); refused with validation/ingress.ts, warned about annotations
 *   of other controllers.
 * - ReferenceGrant: always (it belongs to no class); KengineParameters: always (our API).
 * GatewayClass and ReferenceGrant have no rule that can refuse what the API server stores (the
 * spec puts every parametersRef problem in status; a grant runs nothing): their validators
 * check shapes only, for direct callers of the webhook (docs/admission.md says why they are
 * bound anyway).
 *
 * A Gateway is also refused when its own parameters (spec.infrastructure.parametersRef) set a
 * platform-owned field (image, command, placement) its class's parameters do not allow.
 *
 * Each request is judged from the object and cached read-only look-ups alone: no state is
 * kept between requests (Pepr runs two admission replicas). Webhook settings (package.json
 * pepr block): failurePolicy Fail (onError: reject: an object of ours must not slip through
 * unchecked), timeout 5 s; sideEffects None (Pepr's default, true: nothing is written).
 */
import { Capability, PeprValidateRequest, a } from "pepr";
import type { V1Ingress, V1IngressClass } from "@kubernetes/client-node";
import { isOurIngress, ourClassOf, readsNginxAnnotations } from "./ingress/classes";
import {
  ingressAnnotationProblems,
  ingressAnnotationWarnings,
  ingressProblems,
} from "./validation";
import { Histogram } from "prom-client";
import { METRIC_PREFIX, registry } from "./metrics";
import {
  BackendTLSPolicy,
  GRPCRoute,
  Gateway,
  GatewayClass,
  HTTPRoute,
  ListenerSet,
  ReferenceGrant,
  TCPRoute,
  TLSRoute,
  UDPRoute,
  XBackend,
  XTelemetryPolicy,
} from "./generated";
import {
  ObjectKey,
  OwnershipLookups,
  backendIndexKey,
  cached,
  indexRoutesByService,
  isOurBackendTLSPolicy,
  isOurClass,
  isOurGateway,
  isOurGatewayClass,
  isOurRoute,
  isOurXBackend,
  withDeadline,
} from "./ownership";
import { xbackendProblems } from "./validation/xbackend";
import { telemetryPolicyProblems } from "./validation/telemetry";
import {
  backendTLSPolicyProblems,
  backendTLSPolicyStatusProblems,
} from "./validation/backendtlspolicy";
import { parametersRefShapeProblem } from "./validation/parametersref";
import { gatewayClassProblems } from "./validation/gatewayclass";
import { referenceGrantProblems } from "./validation/referencegrant";
import { gatewayProblems, gatewayTLSWarnings } from "./validation/gateway";
import {
  ACME_ISSUER_OPTION,
  ingressAcmeWarnings,
  listenerSetAcmeWarnings,
} from "./validation/acme";
import { grpcRouteProblems } from "./validation/grpcroute";
import { httpRouteProblems } from "./validation/httproute";
import { l4RouteProblems } from "./validation/l4route";
import { kengineParametersProblems } from "./validation/parameters";
import { ParametersSpecLike, gatewayOverrideProblems } from "./validation/overrides";
import { externalAuthLimitProblems } from "./validation/listenerfilters";
import { resolveLimits } from "./validation/limits";
import { KengineParameters } from "./snapshot/watched";
import { kindPath } from "./snapshot/kinds";
import { KubeClient, kubeClient, userAgent } from "./kube/client";
import type { Kind } from "./snapshot";
import { denialMessage, problemText } from "./validation/message";
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

/**
 * The API client of the look-ups (kube/client.ts): one connection pool for all of them. Not
 * kubernetes-fluent-client: its 3.11.6 `K8s()` builds a new undici Agent per request with a
 * 10-minute keep-alive that is never closed, so every look-up left a connection and its heap
 * alive for ten minutes (hack/bench/heap-kfc.ts, docs/bench.md).
 */
let client: KubeClient | undefined;
const api = (): KubeClient =>
  (client ??= kubeClient(undefined, { userAgent: userAgent("admission") }));
/** One object of a watched kind, or undefined when it does not exist. */
const read = <T>(kind: Kind, namespace: string | undefined, name: string) =>
  get(() => api().request<T>("GET", kindPath(kind, namespace, name)));
/** A kind's objects, in one namespace or across the cluster. */
const list = async <T>(kind: Kind, namespace?: string): Promise<T[]> =>
  (await api().request<{ items?: T[] }>("GET", kindPath(kind, namespace))).items ?? [];

/**
 * A parent the API server was slow to read again: its last answer, up to a minute old, rather
 * than a request held for seconds or refused: under a burst of route changes the API server can
 * answer these reads slower than admission may wait (docs/bench.md, churn). Only "it exists, of this class" is served stale: a stale "does not exist" would let an
 * object of ours through unchecked. What a minute-old answer can get wrong (a Gateway deleted or
 * moved to another class within that minute) the translator still judges from what is stored.
 */
const slowParent = { maxAgeMs: 60_000, graceMs: 250, keep: (v: unknown) => v !== undefined };
const byKey = (k: unknown) => JSON.stringify(k);

/** API reads for ownership, cached briefly (admission pods hold no snapshot). */
const lookups: OwnershipLookups = {
  gatewayClassController: cached(
    async (name: string) =>
      (await read<GatewayClass>("GatewayClass", undefined, name))?.spec?.controllerName,
    LOOKUP_TTL_MS,
    byKey,
    Date.now,
    1000,
    slowParent,
  ),
  gatewayClassOf: cached(
    async (key: ObjectKey) =>
      (await read<Gateway>("Gateway", key.namespace, key.name))?.spec?.gatewayClassName,
    LOOKUP_TTL_MS,
    byKey,
    Date.now,
    1000,
    slowParent,
  ),
  listenerSetParent: cached(
    async (key: ObjectKey) => {
      const ls = await read<ListenerSet>("ListenerSet", key.namespace, key.name);
      const ref = ls?.spec?.parentRef;
      return ref ? { namespace: ref.namespace ?? key.namespace, name: ref.name } : undefined;
    },
    LOOKUP_TTL_MS,
    byKey,
    Date.now,
    1000,
    slowParent,
  ),
  routesUsingService: async key => (await routesByService("all")).get(backendIndexKey(key)) ?? [],
};

/** A GatewayClass's parametersRef (class-level parameters: what Gateways of it may override). */
const classParametersRef = cached(
  async (name: string) =>
    (await read<GatewayClass>("GatewayClass", undefined, name))?.spec?.parametersRef,
  LOOKUP_TTL_MS,
);

/** The KengineParameters of one namespace by name (a list: admission already may list them). */
const readParametersIn = async (namespace: string) => {
  const items = await list<KengineParameters>("KengineParameters", namespace);
  return new Map(items.map(p => [p.metadata?.name ?? "", p.spec as ParametersSpecLike]));
};
const parametersIn = cached(readParametersIn, LOOKUP_TTL_MS);

/**
 * A Gateway's own parameters that set a platform-owned field its class's parameters do not
 * allow (validation/overrides.ts). Parameters that do not exist yet, or look-ups that fail or
 * time out, refuse nothing: the translator applies the same rule to what is stored
 * (Accepted=False/InvalidParameters, no proxies), so admission is the early answer, not the
 * only guard.
 */
async function gatewayOverrideDenials(g: Gateway, namespace: string): Promise<FieldProblem[]> {
  const ref = g.spec?.infrastructure?.parametersRef;
  const where = "spec.infrastructure.parametersRef";
  if (!ref || parametersRefShapeProblem(ref, namespace, where)) return [];
  /** undefined: the Gateway's parameters are not (yet) there. */
  const judge = async (params: typeof readParametersIn): Promise<FieldProblem[] | undefined> => {
    const own = (await params(namespace)).get(ref.name);
    if (!own) return undefined;
    const classRef = await classParametersRef(g.spec?.gatewayClassName ?? "");
    const classSpec =
      classRef && !parametersRefShapeProblem(classRef, classRef.namespace, where)
        ? (await params(classRef.namespace ?? "")).get(classRef.name)
        : undefined;
    return gatewayOverrideProblems(own, classSpec).map(p => ({
      ...p,
      path: `${where} (KengineParameters ${namespace}/${ref.name} ${p.path})`,
    }));
  };
  const found = await withDeadline(
    (async () => {
      // Approved from cached reads. A denial, or parameters the cache does not have, is
      // judged on a fresh read, so parameters created or fixed a moment ago (and applied with
      // the Gateway) are judged as they are now.
      const cachedProblems = await judge(parametersIn);
      if (cachedProblems?.length === 0) return [];
      return (await judge(readParametersIn)) ?? [];
    })(),
    LOOKUP_DEADLINE_MS,
  );
  return found.ok ? found.value : [];
}

/**
 * ExternalAuth filters of a Gateway's or ListenerSet's listeners that forward more body than the
 * class's spec.limits.externalAuthMaxBodyBytes (default 65536). Look-ups that fail or time out
 * refuse nothing here: the translator applies the same limit to what is stored (the listener
 * Accepted=False/UnsupportedValue, not served), and above 16 MiB is refused without look-ups.
 */
async function externalAuthLimitDenials(
  className: () => Promise<string | undefined>,
  listeners: Parameters<typeof externalAuthLimitProblems>[0],
): Promise<FieldProblem[]> {
  if (!listeners?.some(l => (l.filters?.requests?.length ?? 0) > 0)) return [];
  const found = await withDeadline(
    (async () => {
      const classRef = await classParametersRef((await className()) ?? "");
      const classSpec =
        classRef && !parametersRefShapeProblem(classRef, classRef.namespace, "spec.parametersRef")
          ? (await parametersIn(classRef.namespace ?? "")).get(classRef.name)
          : undefined;
      return externalAuthLimitProblems(
        listeners,
        resolveLimits(classSpec?.limits).externalAuthMaxBodyBytes,
      );
    })(),
    LOOKUP_DEADLINE_MS,
  );
  return found.ok ? found.value : [];
}

/**
 * Every HTTPRoute and GRPCRoute of the cluster indexed by the Services they use: read only when
 * a BackendTLSPolicy is written (rare), at most once per TTL.
 */
const routesByService = cached(async (_all: string) => {
  const [http, grpc] = await Promise.all([
    list<HTTPRoute>("HTTPRoute"),
    list<GRPCRoute>("GRPCRoute"),
  ]);
  return indexRoutesByService([...http, ...grpc]);
}, LOOKUP_TTL_MS);

/**
 * How long admission took to decide on one object (ownership look-ups and rules; Pepr's own
 * request handling excluded), by kind and verdict (admitted, denied, unknown: a look-up
 * failed). On the module's /metrics; `npm run bench` reads it.
 */
const decisionSeconds = new Histogram({
  name: `${METRIC_PREFIX}admission_decision_seconds`,
  help: "Time admission took to decide on one object (ownership look-ups and rules), by kind and verdict.",
  labelNames: ["kind", "verdict"],
  buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5],
  registers: [registry],
});

interface Meta {
  readonly metadata?: { readonly namespace?: string; readonly name?: string };
}

/** Approve objects that are not ours or have no problem; otherwise deny with every problem. */
async function decide<T extends Meta>(
  req: PeprValidateRequest<T>,
  kind: string,
  ours: (obj: T, namespace: string) => Promise<boolean>,
  problems: (obj: T) => FieldProblem[],
  statusOnly: (obj: T, namespace: string) => string[] | Promise<string[]> = () => [],
  lookedUp: (obj: T, namespace: string) => Promise<FieldProblem[]> = () => Promise.resolve([]),
) {
  const started = performance.now();
  const done = (verdict: "admitted" | "denied" | "unknown") =>
    decisionSeconds.observe({ kind, verdict }, (performance.now() - started) / 1000);
  const obj = req.Raw;
  // Cluster-scoped kinds (GatewayClass) have none; the API server sets it on namespaced ones.
  const shown = obj.metadata?.namespace || req.Request?.namespace || undefined;
  const namespace = shown ?? "default";
  const owned = await withDeadline(ours(obj, namespace), LOOKUP_DEADLINE_MS);
  if (!owned.ok) {
    done("unknown");
    // Fail closed, as failurePolicy Fail would, but with a message instead of a timeout.
    return req.Deny(
      `${kind} ${shown ? `${shown}/` : ""}${obj.metadata?.name ?? ""}: could not tell whether it belongs to a Kengine GatewayClass (${owned.error}); nothing was stored, retry`,
      503,
    );
  }
  const found = owned.value ? [...problems(obj), ...(await lookedUp(obj, namespace))] : [];
  // What the spec answers in status: stored, with kubectl showing what the status will say.
  const warnings = owned.value
    ? (await statusOnly(obj, namespace)).map(
        w => `${kind} ${shown ? `${shown}/` : ""}${obj.metadata?.name ?? ""}: ${w}`,
      )
    : [];
  if (found.length === 0) {
    done("admitted");
    return req.Approve(warnings.length > 0 ? warnings : undefined);
  }
  const message = denialMessage(kind, shown, obj.metadata?.name ?? "", found);
  done("denied");
  return req.Deny(message, 422, warnings.length > 0 ? warnings : undefined);
}

/**
 * How long the ownership look-ups of one request may take: inside the webhook's timeout
 * (package.json pepr.webhookTimeout, 5 s) with 1.5 s left for Pepr and the round trip, so a slow
 * API server yields a clear denial rather than "context deadline exceeded", and a loaded one still
 * answers in time (docs/bench.md, "admission").
 */
const LOOKUP_DEADLINE_MS = 3_500;

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
    (g, ns) => [
      ...invalidParameters(
        parametersRefShapeProblem(
          g.spec?.infrastructure?.parametersRef,
          ns,
          "spec.infrastructure.parametersRef",
        ),
      ),
      ...gatewayTLSWarnings(g),
    ],
    async (g, ns) => [
      ...(await gatewayOverrideDenials(g, ns)),
      ...(await externalAuthLimitDenials(
        () => Promise.resolve(g.spec?.gatewayClassName),
        g.spec?.listeners,
      )),
    ],
  );

/** A parametersRef problem as a warning: stored, and what its status will say. */
const invalidParameters = (problem: string | undefined): string[] =>
  problem ? [`${problem}; stored, its status will say Accepted=False/InvalidParameters`] : [];

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
    listenerSetAcmeWarnings,
    (ls, ns) => {
      const ref = ls.spec?.parentRef;
      return externalAuthLimitDenials(
        () =>
          ref
            ? lookups.gatewayClassOf({ namespace: ref.namespace ?? ns, name: ref.name })
            : Promise.resolve(undefined),
        ls.spec?.listeners,
      );
    },
  );

/** IngressClasses, cached briefly like the other parents. */
const ingressClassLookups = {
  named: cached(
    (name: string) => read<V1IngressClass>("IngressClass", undefined, name),
    LOOKUP_TTL_MS,
  ),
  all: cached((_all: string) => list<V1IngressClass>("IngressClass"), LOOKUP_TTL_MS),
};

/** The look-ups of an Ingress's class, through the cache. */
const ingressClasses = {
  named: ingressClassLookups.named,
  all: () => ingressClassLookups.all("all"),
};

/**
 * An Ingress of our class: refused with the converter's own rules, warned about annotations;
 * its ingress-nginx annotations are read when its class opts in.
 */
export const validateIngress = (req: PeprValidateRequest<V1Ingress>) =>
  decide(
    req,
    "Ingress",
    i => isOurIngress(i, ingressClasses),
    ingressProblems,
    async i => {
      const cls = await ourClassOf(i, ingressClasses);
      return [
        ...ingressAnnotationWarnings(i, readsNginxAnnotations(cls)),
        ...ingressAcmeWarnings(i, cls?.metadata?.annotations?.[ACME_ISSUER_OPTION] || undefined),
      ];
    },
    async i =>
      ingressAnnotationProblems(i, readsNginxAnnotations(await ourClassOf(i, ingressClasses))),
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

/** A GatewayClass is ours by its own controllerName. */
export const validateGatewayClass = (req: PeprValidateRequest<GatewayClass>) =>
  decide(
    req,
    "GatewayClass",
    gc => Promise.resolve(isOurClass(gc)),
    gatewayClassProblems,
    gc =>
      invalidParameters(
        parametersRefShapeProblem(
          gc.spec?.parametersRef,
          gc.spec?.parametersRef?.namespace,
          "spec.parametersRef",
        ),
      ),
  );

/** A ReferenceGrant belongs to no class: every one is checked (shapes only). */
export const validateReferenceGrant = (req: PeprValidateRequest<ReferenceGrant>) =>
  decide(req, "ReferenceGrant", () => Promise.resolve(true), referenceGrantProblems);

/** A BackendTLSPolicy is ours when a Service it targets is a backend of a route of ours. */
export const validateBackendTLSPolicy = (req: PeprValidateRequest<BackendTLSPolicy>) =>
  decide(
    req,
    "BackendTLSPolicy",
    (p, ns) => isOurBackendTLSPolicy(ns, p.spec?.targetRefs, lookups),
    backendTLSPolicyProblems,
    p =>
      backendTLSPolicyStatusProblems(p).map(
        pr => `${problemText(pr)}; stored, its status will say Accepted=False/Invalid`,
      ),
  );

/** An XBackend is ours when a route of ours names it (translate/xbackend.ts resolves it). */
export const validateXBackend = (req: PeprValidateRequest<XBackend>) =>
  decide(
    req,
    "XBackend",
    (b, ns) => isOurXBackend(ns, b.metadata?.name ?? "", lookups),
    b => [...xbackendProblems(b as never)],
  );

/** An XTelemetryPolicy is ours when a Gateway it targets is (translate/telemetry.ts). */
export const validateXTelemetryPolicy = (req: PeprValidateRequest<XTelemetryPolicy>) =>
  decide(
    req,
    "XTelemetryPolicy",
    async (p, ns) => {
      for (const t of p.spec?.targetRefs ?? [])
        if (t.group === "gateway.networking.k8s.io" && t.kind === "Gateway")
          if (await isOurGateway({ namespace: ns, name: t.name }, lookups)) return true;
      return false;
    },
    p => telemetryPolicyProblems(p as never),
  );

When(GatewayClass).IsCreatedOrUpdated().Validate(validateGatewayClass);
When(ReferenceGrant).IsCreatedOrUpdated().Validate(validateReferenceGrant);
When(BackendTLSPolicy).IsCreatedOrUpdated().Validate(validateBackendTLSPolicy);
When(XBackend).IsCreatedOrUpdated().Validate(validateXBackend);
When(XTelemetryPolicy).IsCreatedOrUpdated().Validate(validateXTelemetryPolicy);
When(HTTPRoute).IsCreatedOrUpdated().Validate(validateHTTPRoute);
When(GRPCRoute).IsCreatedOrUpdated().Validate(validateGRPCRoute);
When(Gateway).IsCreatedOrUpdated().Validate(validateGateway);
When(ListenerSet).IsCreatedOrUpdated().Validate(validateListenerSet);
When(TLSRoute).IsCreatedOrUpdated().Validate(validateTLSRoute);
When(TCPRoute).IsCreatedOrUpdated().Validate(validateTCPRoute);
When(UDPRoute).IsCreatedOrUpdated().Validate(validateUDPRoute);
When(KengineParameters).IsCreatedOrUpdated().Validate(validateKengineParameters);
When(a.Ingress).IsCreatedOrUpdated().Validate(validateIngress);
