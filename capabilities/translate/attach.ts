/**
 * Routes → parents: a route object compiled (compileRoute), the parent a parentRef names
 * (parentTarget), and the route attached to that parent's listeners with its status (attach).
 * Pure: the memos that spare this work live in incremental/.
 */
import {
  CONTROLLER_NAME,
  GATEWAY_GROUP,
  ListenerSet,
  ParentReference,
  Snapshot,
  keyOf,
} from "../snapshot";
import { ProxyFlavor, missingCapability } from "../flavor/proxy-flavor";
import { Condition, ConditionType, RouteReason, condition } from "./conditions";
import { egressProblem, ruleTargets } from "./egress";
import { intersectHostnames } from "./hostnames";
import { RouteKind, namespaceAllowed } from "./listeners";
import { RefusedObject, refusalMessage } from "./refused";
import { CompiledRoute, compileGRPCRoute, compileHTTPRoute, ruleNeeds } from "./routes";
import { compileL4Route } from "./routes-l4";
import { ingressOnlyClass } from "../ingress/fleet";
import type { RouteParentStatusResult } from "./status";
import type { AnyCompiled, GatewayContext } from "./context";

export type ParentTarget =
  | { readonly type: "gateway"; readonly ctx: GatewayContext }
  | {
      readonly type: "listenerSet";
      readonly ctx: GatewayContext;
      readonly listenerSet: ListenerSet;
      /** The Gateway does not allow it (allowedListeners): nothing can attach through it. */
      readonly refused: boolean;
    };

export function parentTarget(
  p: ParentReference,
  routeNs: string,
  contexts: ReadonlyMap<string, GatewayContext>,
  listenerSetOwner: ReadonlyMap<string, GatewayContext>,
): ParentTarget | undefined {
  if ((p.group ?? GATEWAY_GROUP) !== GATEWAY_GROUP) return undefined;
  const key = `${p.namespace ?? routeNs}/${p.name}`;
  const kind = p.kind ?? "Gateway";
  if (kind === "Gateway") {
    const ctx = contexts.get(key);
    return ctx ? { type: "gateway", ctx } : undefined;
  }
  if (kind === "ListenerSet") {
    const ctx = listenerSetOwner.get(key);
    if (!ctx) return undefined;
    const listenerSet = ctx.listenerSets.find(ls => keyOf(ls) === key);
    if (listenerSet) return { type: "listenerSet", ctx, listenerSet, refused: false };
    const refused = ctx.refusedListenerSets.find(ls => keyOf(ls) === key);
    return refused && { type: "listenerSet", ctx, listenerSet: refused, refused: true };
  }
  return undefined;
}

export function compileRoute(s: Snapshot, kind: RouteKind, obj: unknown): AnyCompiled {
  if (kind === "HTTPRoute") return { l4: false, ...compileHTTPRoute(s, obj as never) };
  if (kind === "GRPCRoute") return { l4: false, ...compileGRPCRoute(s, obj as never) };
  return { l4: true, ...compileL4Route(s, kind, obj) };
}

export function attach(
  s: Snapshot,
  kind: RouteKind,
  route: AnyCompiled,
  generation: number | undefined,
  parentRef: ParentReference,
  target: ParentTarget,
  refusal?: RefusedObject,
  /** Made from an Ingress by the ingress stage (ingress/fleet.ts isIngressObject). */
  fromIngress = false,
): RouteParentStatusResult {
  const { ctx } = target;
  const owned = ctx.listeners.filter(l =>
    target.type === "gateway"
      ? l.owner.kind === "Gateway"
      : l.owner.kind === "ListenerSet" &&
        l.owner.namespace === target.listenerSet.metadata.namespace &&
        l.owner.name === target.listenerSet.metadata.name,
  );
  const status = (conditions: Condition[]): RouteParentStatusResult => ({
    parentRef: { ...parentRef },
    controllerName: CONTROLLER_NAME,
    conditions,
  });
  // What this Gateway's egress rules leave out (egress.ts) is reported after what does not
  // resolve at all.
  const egressRefused = route.refProblem
    ? undefined
    : egressProblem(ctx.egress, route.l4 ? route.backends : ruleTargets(route.rules));
  const resolved = route.refProblem
    ? condition(
        ConditionType.ResolvedRefs,
        false,
        route.refProblem.reason,
        route.refProblem.message,
        generation,
      )
    : egressRefused
      ? condition(
          ConditionType.ResolvedRefs,
          false,
          RouteReason.RefNotPermitted,
          egressRefused,
          generation,
        )
      : condition(
          ConditionType.ResolvedRefs,
          true,
          RouteReason.ResolvedRefs,
          "all references resolved",
          generation,
        );
  const reject = (reason: string, message: string): RouteParentStatusResult =>
    status([condition(ConditionType.Accepted, false, reason, message, generation), resolved]);

  // Left out: this Gateway's proxies refused what the route contributes.
  if (refusal)
    return reject(
      RouteReason.UnsupportedValue,
      refusalMessage(refusal, "this route's configuration"),
    );
  // An IngressClass's own Gateway serves only its Ingresses (ingress/fleet.ts).
  const ingressClass = ingressOnlyClass(ctx.gateway);
  if (ingressClass !== undefined && !fromIngress)
    return reject(
      RouteReason.NotAllowedByListeners,
      `Gateway ${keyOf(ctx.gateway)} serves only the Ingresses of IngressClass ${ingressClass}`,
    );
  if (target.type === "listenerSet" && target.refused) {
    return reject(
      RouteReason.NoMatchingParent,
      `ListenerSet ${keyOf(target.listenerSet)} is not allowed by Gateway ${keyOf(ctx.gateway)} (spec.allowedListeners)`,
    );
  }
  let candidates = owned;
  if (parentRef.sectionName !== undefined) {
    candidates = candidates.filter(l => l.listener.name === parentRef.sectionName);
    if (candidates.length === 0)
      return reject(RouteReason.NoMatchingParent, `no listener named ${parentRef.sectionName}`);
  }
  if (parentRef.port !== undefined) {
    candidates = candidates.filter(l => l.listener.port === parentRef.port);
    if (candidates.length === 0)
      return reject(RouteReason.NoMatchingParent, `no listener on port ${parentRef.port}`);
  }
  const allowed = candidates.filter(
    l => l.supportedKinds.some(k => k.kind === kind) && namespaceAllowed(s, l, route.namespace),
  );
  if (allowed.length === 0) {
    return reject(
      RouteReason.NotAllowedByListeners,
      `no listener allows ${kind} from namespace ${route.namespace}`,
    );
  }
  let attachedAny = false;
  for (const l of allowed) {
    const hostnames =
      kind === "TCPRoute" || kind === "UDPRoute"
        ? undefined
        : intersectHostnames(l.listener.hostname, route.hostnames);
    if (hostnames && hostnames.length === 0) continue;
    attachedAny = true;
    const list = ctx.attachments.get(l.id) ?? [];
    // Routes attach one after another, so this route can only be the last one attached
    // (another parentRef of it): a scan of the whole list made attachment quadratic.
    if (list[list.length - 1]?.route !== route) list.push({ route, hostnames });
    ctx.attachments.set(l.id, list);
  }
  if (!attachedAny) {
    return reject(
      RouteReason.NoMatchingListenerHostname,
      "no listener hostname intersects the route's hostnames",
    );
  }
  // Rules this Gateway's proxy flavour cannot run are dropped for this parent only.
  const dropped = route.l4
    ? []
    : [...route.dropped, ...unrunnableRules(route, ctx.flavor)].sort((a, b) => a.index - b.index);
  if (
    !route.l4 &&
    dropped.length > 0 &&
    dropped.length === route.rules.length + route.dropped.length
  ) {
    return reject(RouteReason.UnsupportedValue, dropped.map(d => d.message).join("; "));
  }
  const conditions = [
    condition(ConditionType.Accepted, true, RouteReason.Accepted, "route accepted", generation),
    resolved,
  ];
  if (dropped.length > 0) {
    conditions.push(
      condition(
        ConditionType.PartiallyInvalid,
        true,
        RouteReason.UnsupportedValue,
        `Dropped Rule(s): ${dropped.map(d => `rule ${d.index}: ${d.message}`).join("; ")}`,
        generation,
      ),
    );
  }
  return status(conditions);
}

/** The rules of `route` that `flavor`'s proxies cannot run, with the reason. */
function unrunnableRules(
  route: CompiledRoute,
  flavor: ProxyFlavor,
): { readonly index: number; readonly message: string }[] {
  const out: { index: number; message: string }[] = [];
  for (const rule of route.rules) {
    const why = missingCapability(flavor, ruleNeeds(rule));
    if (why) out.push({ index: rule.index, message: why });
  }
  return out;
}
