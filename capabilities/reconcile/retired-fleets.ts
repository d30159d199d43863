/**
 * The proxies of an IngressClass's own fleet (ingress/fleet.ts) that no class wants any more:
 * the class now names another namespace, a Gateway, or nothing usable. What the controller made
 * for a fleet is owned by its IngressClass, so Kubernetes removes it only with the class; while
 * the class lives, this finds the leftovers (the fleet's proxies' Service, owned by an
 * IngressClass, whose Gateway is no current fleet's) and names what provisioning deletes, each
 * only if it carries our managed-by label (docs/ingress.md, "A fleet of its own").
 */
import type { Snapshot } from "../snapshot";
import { GATEWAY_NAME_LABEL, MANAGED_BY, MANAGED_BY_LABEL, proxyNames } from "../provision/names";
import { bootstrapConfigMapName, lastGoodSecretName, managementSecretName } from "../workload";
import type { GatewayPlan } from "./plan";

/** A retired fleet: its Gateway's key and the objects to delete. */
export interface RetiredFleet {
  readonly key: string;
  readonly stale: GatewayPlan["stale"];
}

/** Leftover fleets in `s`, given the keys (`namespace/name`) of the fleets that exist now. */
export function retiredFleets(s: Snapshot, current: ReadonlySet<string>): RetiredFleet[] {
  const found = new Map<string, RetiredFleet>();
  for (const svc of s.objects.Service.values()) {
    const labels = svc.metadata.labels ?? {};
    const gateway = labels[GATEWAY_NAME_LABEL];
    if (labels[MANAGED_BY_LABEL] !== MANAGED_BY || !gateway) continue;
    const owners = (svc.metadata as { ownerReferences?: { kind?: string; apiVersion?: string }[] })
      .ownerReferences;
    const byClass = owners?.some(
      o => o.kind === "IngressClass" && o.apiVersion === "networking.k8s.io/v1",
    );
    const namespace = svc.metadata.namespace ?? "";
    const key = `${namespace}/${gateway}`;
    if (!byClass || current.has(key) || found.has(key)) continue;
    // A real Gateway of that name owns these names now: its own plan provisions them.
    if (s.objects.Gateway.has(key)) continue;
    const names = proxyNames(gateway);
    const of = (apiVersion: string, kind: string, name: string) => ({
      apiVersion,
      kind,
      namespace,
      name,
      onlyIfOurs: true,
    });
    found.set(key, {
      key,
      stale: [
        of("apps/v1", "Deployment", names.proxy),
        of("apps/v1", "DaemonSet", names.proxy),
        of("v1", "Service", names.proxy),
        of("v1", "Service", names.admin),
        of("policy/v1", "PodDisruptionBudget", names.proxy),
        of("networking.k8s.io/v1", "NetworkPolicy", names.proxy),
        of("v1", "Secret", managementSecretName(gateway)),
        of("v1", "Secret", lastGoodSecretName(gateway)),
        of("v1", "ConfigMap", bootstrapConfigMapName(gateway)),
      ],
    });
  }
  return [...found.values()];
}
