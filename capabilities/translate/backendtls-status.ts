/** BackendTLSPolicy status: one ancestor per Gateway of ours whose routes use the policy. */
import { CONTROLLER_NAME, GATEWAY_GROUP, Snapshot } from "../snapshot";
import { ProxyFlavor, missingCapability } from "../flavor/proxy-flavor";
import { PolicyReason, backendTLSPolicies, subjectAltNames } from "./backendtls";
import { L4_SANS_UNSUPPORTED, reencrypts } from "./l4backendtls";
import { Condition, ConditionType, condition } from "./conditions";
import type { BackendTLSPolicyStatusResult } from "./status";
import type { GatewayContext } from "./context";

/**
 * A policy with subjectAltNames on a Gateway whose flavour cannot verify them, or used there
 * by a TLSRoute that re-encrypts (caddy-l4 cannot verify them on any flavour): not accepted
 * for that ancestor (its Service gets 500 there: runnableBackends; refused connections:
 * l4BackendsIR).
 */
function ancestorConditions(
  s: Snapshot,
  key: string,
  conditions: readonly Condition[],
  flavor: ProxyFlavor,
  l4: boolean,
): readonly Condition[] {
  const missing = missingCapability(flavor, ["backendSANs"]);
  const why = l4 ? L4_SANS_UNSUPPORTED : missing && `spec.validation.subjectAltNames: ${missing}`;
  const policy = s.objects.BackendTLSPolicy.get(key);
  if (!why || !policy || !subjectAltNames(policy)) return conditions;
  return conditions.map(c =>
    c.type === ConditionType.Accepted && c.status === "True"
      ? condition(ConditionType.Accepted, false, PolicyReason.Invalid, why, c.observedGeneration)
      : { ...c },
  );
}

/**
 * Status of every BackendTLSPolicy covering a Service that a route attached to one of our
 * Gateways uses; one ancestor per such Gateway (PolicyAncestorStatus).
 */
export function backendTLSPolicyStatuses(
  s: Snapshot,
  contexts: ReadonlyMap<string, GatewayContext>,
): BackendTLSPolicyStatusResult[] {
  const ancestors = new Map<string, Set<string>>();
  // `<policy> <gateway>` where a TLSRoute re-encrypts with the policy (l4backendtls.ts).
  const l4Uses = new Set<string>();
  for (const [gwKey, ctx] of contexts) {
    for (const [listenerId, list] of ctx.attachments) {
      const l = ctx.listeners.find(x => x.id === listenerId)?.listener;
      const reencrypt = l !== undefined && reencrypts(l.protocol, l.tls?.mode);
      for (const a of list) {
        if (a.route.l4 && !reencrypt) continue;
        for (const p of a.route.backendTLSPolicies) {
          const set = ancestors.get(p) ?? new Set<string>();
          set.add(gwKey);
          ancestors.set(p, set);
          if (a.route.l4) l4Uses.add(`${p} ${gwKey}`);
        }
      }
    }
  }
  const policies = backendTLSPolicies(s);
  return [...ancestors.keys()].sort().map(key => {
    const [namespace, name] = key.split("/");
    return {
      namespace,
      name,
      ancestors: [...ancestors.get(key)!].sort().map(gwKey => {
        const gw = contexts.get(gwKey)!.gateway;
        return {
          ancestorRef: {
            group: GATEWAY_GROUP,
            kind: "Gateway",
            namespace: gw.metadata.namespace ?? "",
            name: gw.metadata.name,
          },
          controllerName: CONTROLLER_NAME,
          conditions: ancestorConditions(
            s,
            key,
            policies.conditions(key),
            contexts.get(gwKey)!.flavor,
            l4Uses.has(`${key} ${gwKey}`),
          ),
        };
      }),
    };
  });
}
