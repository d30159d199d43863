/**
 * The plugin's picture of the cluster and its local translation. Translation is a pure
 * function of the snapshot (docs/architecture.md §2), so the plugin lists what the controller
 * watches and runs the same translator over it: it gets the IR and statuses the controller
 * computes. What only the controller knows, the objects a proxy refused, it reads back from
 * the status the controller wrote (the refusal message names the Gateway and the proxy's words)
 * and passes to the translator as the controller does.
 */
import { CONTROLLER_NAME, KINDS, snapshotOf } from "../capabilities/snapshot";
import type { Kind, KubeObject } from "../capabilities/snapshot";
import { identityOf, translate } from "../capabilities/translate";
import type { RefusedObject, TranslateResult } from "../capabilities/translate";

export const KENGINE_PROXIES_PATH = "/apis/gateway.kengine.io/v1alpha1/kengineproxies";

export interface StoredCondition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
  readonly lastTransitionTime?: string;
}

/** One proxy pod as the controller records it (deploy/crds KengineProxy). */
export interface KengineProxy extends KubeObject {
  readonly spec?: { readonly gateway?: string; readonly pod?: string; readonly address?: string };
  readonly status?: {
    readonly desiredHash?: string;
    readonly appliedHash?: string;
    readonly lastSyncTime?: string;
    readonly lastError?: string;
    readonly attempts?: number;
    readonly channel?: { readonly state?: string; readonly serverCertificateNotAfter?: string };
    readonly conditions?: readonly StoredCondition[];
  };
}

/** A proxy pod as far as the plugin reads it: whether it exists and is not being deleted. */
export interface PodLike {
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly deletionTimestamp?: string;
  };
}

/**
 * The KengineProxy objects of pods that still run: a record outlives its pod until the garbage
 * collector removes it (its owner is the pod), and a terminating pod is no longer one of the
 * Gateway's proxies (the controller counts the same way in Programmed).
 */
export function liveProxies(
  proxies: readonly KengineProxy[],
  pods: readonly PodLike[],
): KengineProxy[] {
  const running = new Set(
    pods
      .filter(p => !p.metadata.deletionTimestamp)
      .map(p => `${p.metadata.namespace ?? ""}/${p.metadata.name}`),
  );
  return proxies.filter(x => {
    const pod = x.spec?.pod ?? x.metadata.name;
    return running.has(`${x.metadata.namespace ?? ""}/${pod}`);
  });
}

/** Everything the commands read: the watched kinds' objects, our proxies, what could not be read. */
export interface ClusterView {
  readonly objects: readonly KubeObject[];
  readonly proxies: readonly KengineProxy[];
  /** Kinds the user may not list: treated as empty, so results that depend on them may differ. */
  readonly unreadable: readonly string[];
}

/** A route's or Gateway's stored status, as the types the commands read. */
export interface StoredParentStatus {
  readonly parentRef: {
    readonly name: string;
    readonly namespace?: string;
    readonly kind?: string;
    readonly sectionName?: string;
    readonly port?: number;
  };
  readonly controllerName?: string;
  readonly conditions?: readonly StoredCondition[];
}
export interface StoredListenerStatus {
  readonly name: string;
  readonly attachedRoutes?: number;
  readonly conditions?: readonly StoredCondition[];
}
export type WithStatus = KubeObject & {
  readonly spec?: Record<string, unknown>;
  readonly status?: {
    readonly conditions?: readonly StoredCondition[];
    readonly parents?: readonly StoredParentStatus[];
    readonly listeners?: readonly StoredListenerStatus[];
  };
};

export const ROUTE_KINDS = ["HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute"] as const;
export type RouteKindName = (typeof ROUTE_KINDS)[number];

export const keyOf = (o: KubeObject): string => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

export const conditionOf = (
  conditions: readonly StoredCondition[] | undefined,
  type: string,
): StoredCondition | undefined => conditions?.find(c => c.type === type);

/** The Gateway key (`namespace/name`) a KengineProxy serves. */
export const proxyGateway = (p: KengineProxy): string =>
  `${p.metadata.namespace ?? ""}/${p.spec?.gateway ?? ""}`;

/** Whether the proxy runs its Gateway's current config (its Synced condition). */
export const proxySynced = (p: KengineProxy): boolean =>
  conditionOf(p.status?.conditions, "Synced")?.status === "True" ||
  (p.status?.appliedHash !== undefined && p.status.appliedHash === p.status.desiredHash);

/** The Gateways of our classes (their class names a GatewayClass with our controllerName). */
export function ourGateways(view: ClusterView): WithStatus[] {
  const classes = new Set(
    view.objects
      .filter(
        o =>
          o.kind === "GatewayClass" &&
          (o as WithStatus).spec?.["controllerName"] === CONTROLLER_NAME,
      )
      .map(o => o.metadata.name),
  );
  return view.objects
    .filter(
      o =>
        o.kind === "Gateway" && classes.has(String((o as WithStatus).spec?.["gatewayClassName"])),
    )
    .sort((a, b) => keyOf(a).localeCompare(keyOf(b))) as WithStatus[];
}

const REFUSAL =
  /^the proxies of Gateway (\S+) refused (?:this route's configuration|the configuration of (?:listener (\S+)|ListenerSet \S+))(?: \((.+?)\))?: ([\s\S]*)$/;

/** What the controller's status says a proxy refused (the message translate/refused.ts writes). */
export function storedRefusals(
  objects: readonly KubeObject[],
): Omit<RefusedObject, "fingerprint">[] {
  const out: Omit<RefusedObject, "fingerprint">[] = [];
  const push = (
    m: RegExpExecArray | null,
    o: KubeObject,
    kind: RefusedObject["kind"],
    listener?: string,
  ): void => {
    if (!m) return;
    const namespace = o.metadata.namespace ?? "";
    out.push({
      kind,
      namespace,
      name: o.metadata.name,
      ...(listener !== undefined && { listener }),
      gateway: m[1]!,
      reason: m[4]!,
      ...(m[3] !== undefined && { field: m[3] }),
    });
  };
  for (const o of objects as readonly WithStatus[]) {
    if ((ROUTE_KINDS as readonly string[]).includes(o.kind ?? ""))
      for (const p of o.status?.parents ?? [])
        if (p.controllerName === CONTROLLER_NAME)
          for (const c of p.conditions ?? [])
            if (c.status === "False")
              push(REFUSAL.exec(c.message ?? ""), o, o.kind as RefusedObject["kind"]);
    if (o.kind === "Gateway")
      for (const l of o.status?.listeners ?? [])
        for (const c of l.conditions ?? [])
          if (c.status === "False") push(REFUSAL.exec(c.message ?? ""), o, "Listener", l.name);
    if (o.kind === "ListenerSet")
      for (const l of o.status?.listeners ?? [])
        for (const c of l.conditions ?? [])
          if (c.status === "False") push(REFUSAL.exec(c.message ?? ""), o, "ListenerSet");
  }
  const seen = new Set<string>();
  return out.filter(r => {
    const id = `${r.gateway} ${identityOf(r)}`;
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/** The controller's translation of the cluster, computed here: same snapshot, same refusals. */
export function localTranslation(view: ClusterView): TranslateResult {
  const kinds = new Set<string>(KINDS);
  const snapshot = snapshotOf(view.objects.filter(o => kinds.has(o.kind as Kind)));
  const wanted = storedRefusals(view.objects);
  if (wanted.length === 0) return translate(snapshot);
  const candidates = translate(snapshot, { candidates: true }).candidates;
  const refused: RefusedObject[] = wanted.flatMap(r => {
    const found = candidates?.get(r.gateway)?.find(c => identityOf(c) === identityOf(r));
    return found ? [{ ...r, fingerprint: found.fingerprint }] : [];
  });
  return translate(snapshot, { refused });
}
