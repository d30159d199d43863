/**
 * Snapshot → one IR per Gateway of our GatewayClasses, plus every status result. Pure: no
 * clock, no I/O, no randomness; the same snapshot gives the same output.
 *
 * translate() is the table of contents: GatewayClasses, then each Gateway's context (its
 * listeners, flavour, egress), then every route attached to its parents (attach.ts), then each
 * Gateway's IR (gateway-ir.ts) and status (gateway-conditions.ts), then policy status. How much
 * of that is recomputed from build to build is decided in incremental/, never here.
 */
import type { GatewayIR } from "../ir";
import { CONTROLLER_NAME, GatewayClass, Snapshot, keyOf } from "../snapshot";
import { isOurClass } from "../ownership";
import { telemetry, withTracing } from "./telemetry";
import { ConditionType, GatewayClassReason, GatewayReason, condition } from "./conditions";
import {
  classEgress,
  gatewayParametersProblem,
  parametersRefProblem,
  resolveSettings,
} from "../provision/parameters";
import { proxyAddresses } from "./egress";
import { supportedFeaturesOf } from "../flavor/proxy-flavor";
import { DEFAULT_LIMITS } from "../validation/limits";
import { listenerSetsOf, resolveListeners } from "./listeners";
import { withHttp01Answers } from "./acme";
import { attachRoutes, stableData, stableEgress } from "./incremental";
import type { StatusEchoes } from "./incremental";
import {
  RefusableObject,
  RefusedObject,
  Refusals,
  refusableObjects,
  withoutRefusedListeners,
} from "./refused";
import { backendClientCertificate } from "./gatewaytls";
import {
  GatewayClassStatusResult,
  GatewayStatusResult,
  ListenerSetStatusResult,
  StatusResults,
  BackendTLSPolicyStatusResult,
} from "./status";
import type { AnyCompiled, GatewayContext } from "./context";
import {
  gatewayConditions,
  gatewayTLSConditions,
  listenerSetResults,
  listenerStatus,
  unsupportedAddressProblem,
} from "./gateway-conditions";
import { buildIR } from "./gateway-ir";
import { backendTLSPolicyStatuses } from "./backendtls-status";

export { unsupportedAddressProblem };
export { redirectIR } from "./gateway-ir";
export { routeDeltas } from "./incremental";

export interface TranslateOptions {
  /** The controllerName whose GatewayClasses we serve; default `kengine.io/gateway-controller`. */
  readonly controllerName?: string;
  /** Objects a Gateway's proxies refused: left out of that Gateway's config (refused.ts). */
  readonly refused?: readonly RefusedObject[];
  /** Also list, per Gateway, the objects in its config that could be refused (`candidates`). */
  readonly candidates?: boolean;
  /** The incremental translator's memory of the last build's Gateways (incremental/status-echo.ts). */
  readonly statusEchoes?: StatusEchoes;
}

export interface TranslateResult {
  readonly gateways: readonly GatewayIR[];
  readonly statuses: StatusResults;
  /** With `options.candidates`: per Gateway (`<namespace>/<name>`), what its config is made of. */
  readonly candidates?: ReadonlyMap<string, readonly RefusableObject[]>;
}

const byKey = <T extends { metadata: { name: string; namespace?: string } }>(a: T, b: T): number =>
  keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0;

export function translate(s: Snapshot, options: TranslateOptions = {}): TranslateResult {
  const controllerName = options.controllerName ?? CONTROLLER_NAME;
  const classes = [...s.objects.GatewayClass.values()]
    .filter(gc => isOurClass(gc, controllerName))
    .sort(byKey);
  const gatewayClasses = classes.map(gc => gatewayClassStatus(s, gc, controllerName));
  const contexts = gatewayContexts(s, classes, options);
  const routes = attachRoutes(s, contexts, listenerSetOwners(contexts), options.refused);
  const built = gatewayResults(s, classes, contexts);
  return {
    ...(options.candidates && { candidates: candidatesOf(contexts) }),
    gateways: built.gateways,
    statuses: {
      gatewayClasses,
      gateways: built.statuses,
      listenerSets: built.listenerSets,
      routes,
      backendTLSPolicies: backendTLSPolicyStatuses(s, contexts),
      ...(built.telemetry.length > 0 && { telemetryPolicies: built.telemetry }),
    },
  };
}

/** A GatewayClass of ours: accepted unless its parametersRef does not resolve. */
function gatewayClassStatus(
  s: Snapshot,
  gc: GatewayClass,
  controllerName: string,
): GatewayClassStatusResult {
  const ref = gc.spec?.parametersRef;
  // The class advertises what its own parameters' flavour delivers.
  const classFlavor = resolveSettings(s, gc, { metadata: {} }).settings.flavor;
  const problem = parametersRefProblem(s, ref, ref?.namespace, "spec.parametersRef");
  return {
    name: gc.metadata.name,
    conditions: [
      problem
        ? condition(
            ConditionType.Accepted,
            false,
            GatewayClassReason.InvalidParameters,
            problem,
            gc.metadata.generation,
          )
        : condition(
            ConditionType.Accepted,
            true,
            GatewayClassReason.Accepted,
            "accepted by " + controllerName,
            gc.metadata.generation,
          ),
    ],
    supportedFeatures: supportedFeaturesOf(classFlavor).map(name => ({ name })),
  };
}

/** Each Gateway of our classes (by key) with its listeners, settings and refusals. */
function gatewayContexts(
  s: Snapshot,
  classes: readonly GatewayClass[],
  options: TranslateOptions,
): Map<string, GatewayContext> {
  const contexts = new Map<string, GatewayContext>();
  const classByName = new Map(classes.map(c => [c.metadata.name, c] as const));
  const ours = [...s.objects.Gateway.values()]
    .filter(g => classByName.has(g.spec?.gatewayClassName))
    .sort(byKey);
  // a Gateway changed only by our status write is translated as the object it was (incremental/status-echo.ts)
  for (const gw of options.statusEchoes ? options.statusEchoes.stable(ours) : ours) {
    const { allowed, refused } = listenerSetsOf(s, gw);
    const gc = classByName.get(gw.spec.gatewayClassName);
    const settings = resolveSettings(s, gc, gw).settings;
    const flavor = settings.flavor;
    const limits = settings.limits ?? DEFAULT_LIMITS;
    const refusals = new Refusals(keyOf(gw), options.refused ?? []);
    const egress = stableEgress(gw, {
      gatewayClass: gw.spec.gatewayClassName,
      gateway: keyOf(gw),
      flavor,
      settings: classEgress(s, gc),
      proxyAddresses: proxyAddresses(s, gw),
    });
    contexts.set(keyOf(gw), {
      gateway: gw,
      listenerSets: allowed,
      refusedListenerSets: refused,
      listeners: stableData(
        gw,
        withoutRefusedListeners(resolveListeners(s, gw, allowed, flavor, limits, egress), refusals),
      ),
      attachments: new Map(),
      flavor,
      limits,
      egress,
      backendClientCertificate: backendClientCertificate(s, gw),
      refusals,
    });
  }
  return contexts;
}

/** The Gateway context owning each ListenerSet (`namespace/name`), allowed or refused. */
function listenerSetOwners(
  contexts: ReadonlyMap<string, GatewayContext>,
): Map<string, GatewayContext> {
  const listenerSetOwner = new Map<string, GatewayContext>();
  for (const ctx of contexts.values())
    for (const ls of [...ctx.listenerSets, ...ctx.refusedListenerSets])
      listenerSetOwner.set(keyOf(ls), ctx);
  return listenerSetOwner;
}

/** Each Gateway's IR and status, its ListenerSets' status, and TelemetryPolicy status. */
function gatewayResults(
  s: Snapshot,
  classes: readonly GatewayClass[],
  contexts: ReadonlyMap<string, GatewayContext>,
): {
  gateways: GatewayIR[];
  statuses: GatewayStatusResult[];
  listenerSets: ListenerSetStatusResult[];
  telemetry: readonly BackendTLSPolicyStatusResult[];
} {
  const classByName = new Map(classes.map(c => [c.metadata.name, c] as const));
  const gateways: GatewayIR[] = [];
  const statuses: GatewayStatusResult[] = [];
  const listenerSets: ListenerSetStatusResult[] = [];
  const tele = telemetry(s, contexts);
  for (const ctx of contexts.values()) {
    const gc = classByName.get(ctx.gateway.spec.gatewayClassName);
    const one = gatewayResult(s, gc, ctx, tele.tracing.get(keyOf(ctx.gateway)));
    if (one.ir) gateways.push(one.ir);
    statuses.push(one.status);
    listenerSets.push(...one.listenerSets);
  }
  listenerSets.sort((a, b) => (`${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1));
  return { gateways, statuses, listenerSets, telemetry: tele.statuses };
}

/**
 * One Gateway's IR (none when it is not accepted or its IR cannot be built), its status and
 * its ListenerSets' status.
 */
function gatewayResult(
  s: Snapshot,
  gc: GatewayClass | undefined,
  ctx: GatewayContext,
  tracing: Parameters<typeof withTracing>[1],
): {
  ir?: GatewayIR;
  status: GatewayStatusResult;
  listenerSets: readonly ListenerSetStatusResult[];
} {
  const gw = ctx.gateway;
  const gen = gw.metadata.generation;
  const own = ctx.listeners.filter(l => l.owner.kind === "Gateway");
  // A Gateway whose parameters do not resolve is not accepted and gets no proxies (spec:
  // Accepted=False, reason InvalidParameters).
  // Parameters that set a platform-owned field the class does not allow: the same answer.
  const badParameters = gatewayParametersProblem(s, gc, gw);
  // An address of a type we cannot request or recognise: not accepted either (spec:
  // Accepted=False, reason UnsupportedAddress).
  const badAddresses = unsupportedAddressProblem(gw.spec?.addresses);
  // An exception while building one Gateway's IR fails that Gateway alone.
  let ir: GatewayIR | undefined;
  let irFailure: string | undefined;
  if (!badParameters && !badAddresses)
    try {
      ir = withTracing(withHttp01Answers(s, gw, ctx.listeners, buildIR(ctx)), tracing);
    } catch (e) {
      irFailure = `cannot translate this Gateway: ${e instanceof Error ? e.message : String(e)}`;
    }
  const refusal = badParameters
    ? ([GatewayReason.InvalidParameters, badParameters, "invalid parameters"] as const)
    : badAddresses
      ? ([GatewayReason.UnsupportedAddress, badAddresses, "unsupported address type"] as const)
      : undefined;
  const conditions = refusal
    ? [
        condition(ConditionType.Accepted, false, refusal[0], refusal[1], gen),
        condition(
          ConditionType.Programmed,
          false,
          GatewayReason.Invalid,
          `not accepted: ${refusal[2]}`,
          gen,
        ),
      ]
    : [...gatewayConditions(own, gen), ...gatewayTLSConditions(ctx, own, gen)].map(c =>
        irFailure && c.type === ConditionType.Programmed
          ? condition(ConditionType.Programmed, false, GatewayReason.Invalid, irFailure, gen)
          : c,
      );
  const sets = listenerSetResults(ctx, conditions[0].status === "True");
  return {
    ...(ir && { ir }),
    status: {
      namespace: gw.metadata.namespace ?? "",
      name: gw.metadata.name,
      conditions,
      listeners: own.map(l => listenerStatus(l, ctx)),
      ...(sets.attached !== undefined && { attachedListenerSets: sets.attached }),
    },
    listenerSets: sets.statuses,
  };
}

/** Per Gateway, the objects its config is made of (culprit candidates; refused.ts). */
function candidatesOf(
  contexts: ReadonlyMap<string, GatewayContext>,
): ReadonlyMap<string, readonly RefusableObject[]> {
  const out = new Map<string, readonly RefusableObject[]>();
  for (const [key, ctx] of contexts) {
    const routes = new Set<AnyCompiled>();
    for (const l of ctx.listeners)
      if (l.served) for (const a of ctx.attachments.get(l.id) ?? []) routes.add(a.route);
    const ordered = [...routes].sort((a, b) => {
      const ka = `${a.kind}/${a.namespace}/${a.name}`;
      const kb = `${b.kind}/${b.namespace}/${b.name}`;
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
    out.set(
      key,
      refusableObjects(
        ctx.listeners,
        ordered.map(r => ({ kind: r.kind, namespace: r.namespace, name: r.name, compiled: r })),
      ),
    );
  }
  return out;
}
