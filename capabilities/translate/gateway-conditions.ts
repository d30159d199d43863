/** The conditions and status of a Gateway, its listeners and the ListenerSets naming it. */
import { keyOf } from "../snapshot";
import { missingCapability } from "../flavor/proxy-flavor";
import { ingressOnlyClass } from "../ingress/fleet";
import { SUPPORTED_ADDRESS_TYPES } from "../provision/addresses";
import {
  Condition,
  ConditionType,
  GatewayReason,
  ListenerSetReason,
  condition,
} from "./conditions";
import { GatewayTLSReason, insecureFrontendValidation } from "./gatewaytls";
import type { ResolvedListener } from "./listeners";
import type { ListenerSetStatusResult, ListenerStatusResult } from "./status";
import type { GatewayContext } from "./context";

/** Why spec.addresses holds a type we do not support (undefined: every type is supported). */
export function unsupportedAddressProblem(
  addresses: readonly { readonly type?: string; readonly value?: string }[] | undefined,
): string | undefined {
  const bad = (addresses ?? []).flatMap((a, i) =>
    a.type && !SUPPORTED_ADDRESS_TYPES.includes(a.type)
      ? [`spec.addresses[${i}].type ${JSON.stringify(a.type)}`]
      : [],
  );
  return bad.length
    ? `${bad.join(", ")}: address type not supported (supported: ${SUPPORTED_ADDRESS_TYPES.join(", ")})`
    : undefined;
}

export function gatewayConditions(
  listeners: readonly ResolvedListener[],
  gen: number | undefined,
): Condition[] {
  const invalid = listeners.filter(l => !l.served);
  const served = listeners.length - invalid.length;
  const names = invalid.map(l => l.listener.name).join(", ");
  const accepted =
    invalid.length === 0
      ? condition(ConditionType.Accepted, true, GatewayReason.Accepted, "accepted", gen)
      : condition(
          ConditionType.Accepted,
          served > 0,
          GatewayReason.ListenersNotValid,
          `listeners not valid: ${names}`,
          gen,
        );
  const programmed =
    served > 0 || listeners.length === 0
      ? condition(
          ConditionType.Programmed,
          true,
          GatewayReason.Programmed,
          "configuration translated for the proxies",
          gen,
        )
      : condition(ConditionType.Programmed, false, GatewayReason.Invalid, "no valid listener", gen);
  return [accepted, programmed];
}

/**
 * Conditions of a Gateway that sets spec.tls: ResolvedRefs (its backend clientCertificateRef,
 * else a summary of its listeners' ResolvedRefs) and, while any frontend validation allows an
 * insecure fallback, InsecureFrontendValidationMode. Gateways without spec.tls have neither.
 */
export function gatewayTLSConditions(
  ctx: GatewayContext,
  listeners: readonly ResolvedListener[],
  gen: number | undefined,
): Condition[] {
  const gw = ctx.gateway;
  if (!gw.spec.tls?.backend && !gw.spec.tls?.frontend) return [];
  const client = ctx.backendClientCertificate;
  const unresolved = listeners.filter(l =>
    l.conditions.some(c => c.type === ConditionType.ResolvedRefs && c.status === "False"),
  );
  const why = client?.ok ? missingCapability(ctx.flavor, ["backendClientCertificate"]) : undefined;
  const resolved =
    client && !client.ok
      ? condition(
          ConditionType.ResolvedRefs,
          false,
          client.reason,
          `${client.message}; backends are reached without a client certificate`,
          gen,
        )
      : why
        ? condition(
            ConditionType.ResolvedRefs,
            false,
            GatewayTLSReason.UnsupportedValue,
            `spec.tls.backend.clientCertificateRef: ${why}; backends are reached without a client certificate`,
            gen,
          )
        : unresolved.length > 0
          ? condition(
              ConditionType.ResolvedRefs,
              false,
              GatewayTLSReason.ListenersNotResolved,
              `listeners with unresolved references: ${unresolved.map(l => l.listener.name).join(", ")}`,
              gen,
            )
          : condition(
              ConditionType.ResolvedRefs,
              true,
              GatewayTLSReason.ResolvedRefs,
              "all references resolved",
              gen,
            );
  return [
    resolved,
    ...(insecureFrontendValidation(gw)
      ? [
          condition(
            ConditionType.InsecureFrontendValidationMode,
            true,
            GatewayTLSReason.ConfigurationChanged,
            "spec.tls.frontend sets mode AllowInsecureFallback: HTTPS clients without a valid client certificate are accepted",
            gen,
          ),
        ]
      : []),
  ];
}

/**
 * Status of the ListenerSets naming this Gateway as parent, and how many are attached (allowed
 * and Accepted: the Gateway's status.attachedListenerSets; undefined when the Gateway neither
 * sets allowedListeners nor has a ListenerSet naming it, so the field is not written).
 */
export function listenerSetResults(
  ctx: GatewayContext,
  parentAccepted: boolean,
): { statuses: ListenerSetStatusResult[]; attached?: number } {
  const gw = ctx.gateway;
  const statuses: ListenerSetStatusResult[] = [];
  let attached = 0;
  for (const ls of ctx.listenerSets) {
    const mine = ctx.listeners.filter(
      l =>
        l.owner.kind === "ListenerSet" &&
        l.owner.namespace === ls.metadata.namespace &&
        l.owner.name === ls.metadata.name,
    );
    const conditions = parentAccepted
      ? listenerSetConditions(mine, ls.metadata.generation)
      : refusedConditions(
          ListenerSetReason.ParentNotAccepted,
          `parent Gateway ${keyOf(gw)} is not accepted`,
          ls.metadata.generation,
        );
    if (conditions[0].status === "True") attached++;
    statuses.push({
      namespace: ls.metadata.namespace ?? "",
      name: ls.metadata.name,
      conditions,
      listeners: mine.map(l => listenerStatus(l, ctx)),
    });
  }
  for (const ls of ctx.refusedListenerSets) {
    const from = gw.spec.allowedListeners?.namespaces?.from ?? "None";
    const ingressClass = ingressOnlyClass(gw);
    statuses.push({
      namespace: ls.metadata.namespace ?? "",
      name: ls.metadata.name,
      conditions: refusedConditions(
        ListenerSetReason.NotAllowed,
        ingressClass !== undefined
          ? `Gateway ${keyOf(gw)} serves only the Ingresses of IngressClass ${ingressClass}`
          : from === "None"
            ? `Gateway ${keyOf(gw)} does not allow ListenerSets (spec.allowedListeners.namespaces.from: None, the default)`
            : `Gateway ${keyOf(gw)} does not allow ListenerSets from namespace ${ls.metadata.namespace} (spec.allowedListeners.namespaces.from: ${from})`,
        ls.metadata.generation,
      ),
      listeners: [],
    });
  }
  const counted =
    gw.spec.allowedListeners !== undefined ||
    ctx.listenerSets.length + ctx.refusedListenerSets.length > 0;
  return { statuses, ...(counted && { attached }) };
}

/** Accepted and Programmed of an attached ListenerSet, from its listeners. */
function listenerSetConditions(
  listeners: readonly ResolvedListener[],
  gen: number | undefined,
): Condition[] {
  const invalid = listeners.filter(l => !l.served);
  if (listeners.length > 0 && invalid.length === listeners.length) {
    const message = `no valid listener: ${invalid.map(l => l.listener.name).join(", ")}`;
    return refusedConditions(ListenerSetReason.ListenersNotValid, message, gen);
  }
  return [
    invalid.length === 0
      ? condition(ConditionType.Accepted, true, ListenerSetReason.Accepted, "accepted", gen)
      : condition(
          ConditionType.Accepted,
          true,
          ListenerSetReason.ListenersNotValid,
          `listeners not valid: ${invalid.map(l => l.listener.name).join(", ")}`,
          gen,
        ),
    condition(
      ConditionType.Programmed,
      true,
      ListenerSetReason.Programmed,
      "configuration translated for the proxies",
      gen,
    ),
  ];
}

/** A ListenerSet not attached: Accepted and Programmed False with the same reason. */
const refusedConditions = (reason: string, message: string, gen: number | undefined) => [
  condition(ConditionType.Accepted, false, reason, message, gen),
  condition(ConditionType.Programmed, false, reason, message, gen),
];

export function listenerStatus(l: ResolvedListener, ctx: GatewayContext): ListenerStatusResult {
  return {
    name: l.listener.name,
    supportedKinds: l.supportedKinds.map(k => ({ group: k.group, kind: k.kind })),
    attachedRoutes: (ctx.attachments.get(l.id) ?? []).length,
    conditions: l.conditions,
  };
}
