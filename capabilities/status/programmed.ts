/**
 * What the proxies really run decides a Gateway's Programmed condition and its addresses: pure
 * functions over the translator's intent, the proxies' states and the data-plane Service.
 * `fleetResults` is the build's status step: the translator's results with Programmed,
 * addresses and the supported-version condition decided.
 */
import type {
  Condition,
  GatewayStatusResult,
  ListenerSetStatusResult,
  StatusResults,
} from "../translate";
import type { GatewayAddress } from "./compute";
import { supportedVersionCondition } from "./supported-version";
import { ConditionType } from "../translate/conditions";

/** What Programmed reads of one proxy's state (the push engine's ProxyState has it all). */
export type ProxyState =
  | { readonly phase: "Pending"; readonly applied: { readonly hash: string } | undefined }
  | { readonly phase: "Programmed"; readonly hash: string }
  | { readonly phase: "Failed"; readonly message: string };

interface ServiceLike {
  readonly spec?: { readonly type?: string; readonly clusterIP?: string };
  readonly status?: {
    readonly loadBalancer?: {
      readonly ingress?: readonly { readonly ip?: string; readonly hostname?: string }[];
    };
  };
}

/** Addresses of the proxies' Service: load-balancer ingress, or the cluster IP for ClusterIP. */
export function serviceAddresses(svc: ServiceLike | undefined): GatewayAddress[] {
  if (!svc) return [];
  const ingress = svc.status?.loadBalancer?.ingress ?? [];
  const fromLb = ingress.flatMap(i =>
    i.ip
      ? [{ type: "IPAddress", value: i.ip }]
      : i.hostname
        ? [{ type: "Hostname", value: i.hostname }]
        : [],
  );
  if (fromLb.length || svc.spec?.type === "LoadBalancer") return fromLb;
  return svc.spec?.clusterIP && svc.spec.clusterIP !== "None"
    ? [{ type: "IPAddress", value: svc.spec.clusterIP }]
    : [];
}

export interface FleetView {
  /** Proxy pods found for the Gateway (named: the message names the failing ones). */
  readonly proxies: readonly (ProxyState & { readonly name?: string })[];
  /** Hash of the config the Gateway's proxies should run (undefined when none could be made). */
  readonly desiredHash: string | undefined;
  /** Why no config could be made, if so. */
  readonly configProblem?: string;
  /** Whether the proxies' Service exists. */
  readonly serviceExists: boolean;
  /** What to say when it does not (default: the managed Service's wording). */
  readonly noServiceMessage?: string;
  /** Why the requested static addresses are not (yet) the Gateway's. */
  readonly addressProblem?: { readonly reason: string; readonly message: string };
  /** GEP-5093's AddressesAssigned (provision/routability.ts); omitted while undecided. */
  readonly addressAssignment?: {
    readonly status: "True" | "False";
    readonly reason: string;
    readonly message: string;
  };
  /** The Programmed condition as stored now: kept while no proxy's state is known yet (a new leader). */
  readonly stored?: Condition;
}

const programmed = (
  ok: boolean,
  reason: string,
  message: string,
  generation?: number,
): Condition => ({
  type: "Programmed",
  status: ok ? "True" : "False",
  reason,
  message,
  ...(generation !== undefined ? { observedGeneration: generation } : {}),
});

/** The failing proxies, grouped by message: "pod-a, pod-b: <the proxy's message>; pod-c: …". */
function failingText(proxies: FleetView["proxies"]): string {
  const byMessage = new Map<string, string[]>();
  for (const p of proxies) {
    if (p.phase !== "Failed") continue;
    const names = byMessage.get(p.message) ?? [];
    if (p.name) names.push(p.name);
    byMessage.set(p.message, names);
  }
  return [...byMessage]
    .map(([message, names]) => (names.length ? `${names.join(", ")}: ${message}` : message))
    .join("; ");
}

/** The Gateway's Programmed condition given the fleet and its addresses. */
export function programmedCondition(
  translated: Condition | undefined,
  view: FleetView,
  addresses: readonly GatewayAddress[],
  generation?: number,
): Condition {
  if (translated && translated.status === "False") return translated;
  if (view.configProblem) return programmed(false, "Invalid", view.configProblem, generation);
  if (!view.serviceExists)
    return programmed(
      false,
      "AddressNotAssigned",
      view.noServiceMessage ?? "the proxies' Service does not exist (yet)",
      generation,
    );
  if (view.addressProblem)
    return programmed(false, view.addressProblem.reason, view.addressProblem.message, generation);
  if (addresses.length === 0)
    return programmed(
      false,
      "AddressNotAssigned",
      "waiting for the proxies' Service to get an address",
      generation,
    );
  const total = view.proxies.length;
  const unknown =
    total > 0 && view.proxies.every(p => p.phase === "Pending" && p.applied === undefined);
  // A new leader keeps a stored Programmed=True of this generation until it knows the proxies
  // (no flap on handover); anything older or False is decided afresh (never written back with
  // an older observedGeneration).
  if (
    unknown &&
    view.stored?.status === "True" &&
    (generation === undefined || view.stored.observedGeneration === generation)
  )
    return view.stored;
  const actual = fleetCondition(view, false, generation);
  // A route change starts a rollout: every proxy is briefly Pending while it loads the new
  // config. That is not a state to show (it would flap Programmed and rewrite the Gateway on
  // every change, once per proxy result): while the stored condition already says what the
  // condition will say once the rollout completes, it stays. Failures and new pods show at once.
  const rolling = view.proxies.some(p => p.phase === "Pending" && p.applied !== undefined);
  if (rolling && view.stored) {
    const done = fleetCondition(view, true, generation);
    const s = view.stored;
    if (s.status === done.status && s.reason === done.reason && s.message === done.message)
      return done;
  }
  return actual;
}

/**
 * The condition from the proxies' states; `rollingAsCurrent` counts a proxy that runs an earlier
 * config while a newer one is pushed to it as running the current one.
 */
function fleetCondition(view: FleetView, rollingAsCurrent: boolean, generation?: number) {
  const total = view.proxies.length;
  const current = view.proxies.filter(
    p =>
      (p.phase === "Programmed" && p.hash === view.desiredHash) ||
      (rollingAsCurrent && p.phase === "Pending" && p.applied !== undefined),
  ).length;
  if (total === 0) return programmed(false, "Pending", "no proxy pods are running yet", generation);
  if (current === 0) {
    const failing = failingText(view.proxies);
    const why = failing ? `: ${failing}` : "";
    return programmed(
      false,
      "Pending",
      `0/${total} proxies run the current configuration${why}`,
      generation,
    );
  }
  const failing = failingText(view.proxies);
  const named = failing ? `; failing: ${failing}` : "";
  return programmed(
    true,
    "Programmed",
    `${current}/${total} proxies run the current configuration${named}`,
    generation,
  );
}

/** The Gateway's status result with Programmed (Gateway and listeners) decided by the fleet. */
export function withFleet(
  result: GatewayStatusResult,
  view: FleetView,
  addresses: readonly GatewayAddress[],
  generation?: number,
): GatewayStatusResult {
  const translated = result.conditions.find(c => c.type === "Programmed");
  const gw = programmedCondition(
    translated,
    view,
    addresses,
    generation ?? translated?.observedGeneration,
  );
  const assigned = view.addressAssignment;
  const conditions = [
    ...result.conditions.filter(c => c.type !== "Programmed"),
    gw,
    ...(assigned
      ? [
          {
            type: ConditionType.AddressesAssigned,
            ...assigned,
            ...(gw.observedGeneration !== undefined && {
              observedGeneration: gw.observedGeneration,
            }),
          },
        ]
      : []),
  ];
  const listeners = result.listeners.map(l => {
    const lp = l.conditions.find(c => c.type === "Programmed");
    if (!lp || lp.status === "False" || gw.status === "True") return l;
    return {
      ...l,
      // Listeners have no AddressNotAssigned reason: they are Pending until the Gateway is programmed.
      conditions: l.conditions.map(c =>
        c.type === "Programmed"
          ? { ...gw, reason: "Pending", observedGeneration: lp.observedGeneration }
          : c,
      ),
    };
  });
  return { ...result, conditions, listeners };
}

/**
 * A ListenerSet's status with Programmed following its parent Gateway's (decided by the fleet):
 * while the Gateway is not programmed, an attached ListenerSet is Programmed=False
 * (ParentNotProgrammed) and its programmed listeners Pending, as the Gateway's own listeners.
 */
export function listenerSetWithParent(
  result: ListenerSetStatusResult,
  parent: GatewayStatusResult | undefined,
): ListenerSetStatusResult {
  const gw = parent?.conditions.find(c => c.type === "Programmed");
  const own = result.conditions.find(c => c.type === "Programmed");
  if (!gw || gw.status === "True" || !own || own.status !== "True") return result;
  const message = `parent Gateway ${parent!.namespace}/${parent!.name} is not programmed: ${gw.message}`;
  const notYet = (c: Condition, reason: string): Condition => ({
    type: "Programmed",
    status: "False",
    reason,
    message,
    ...(c.observedGeneration !== undefined ? { observedGeneration: c.observedGeneration } : {}),
  });
  return {
    ...result,
    conditions: result.conditions.map(c =>
      c.type === "Programmed" ? notYet(c, "ParentNotProgrammed") : c,
    ),
    listeners: result.listeners.map(l => ({
      ...l,
      conditions: l.conditions.map(c =>
        c.type === "Programmed" && c.status === "True" ? notYet(c, "Pending") : c,
      ),
    })),
  };
}

/** Every ListenerSet result with Programmed following its parent Gateway's (`parentOf`: its key). */
export function withListenerSetParents(
  results: StatusResults,
  parentOf: (ls: ListenerSetStatusResult) => string | undefined,
): StatusResults {
  const gateways = new Map<string, GatewayStatusResult>(
    results.gateways.map(g => [`${g.namespace}/${g.name}`, g]),
  );
  return {
    ...results,
    listenerSets: results.listenerSets.map(ls => {
      const key = parentOf(ls);
      return listenerSetWithParent(ls, key === undefined ? undefined : gateways.get(key));
    }),
  };
}

/** One planned Gateway as its status sees it. */
export interface PlannedGateway {
  readonly view: FleetView;
  readonly addresses: readonly GatewayAddress[];
}

export interface FleetResultsInput {
  /** The translator's results. */
  readonly statuses: StatusResults;
  /** The installed Gateway API CRDs' bundle-version (undefined: could not be read). */
  readonly bundleVersion: string | undefined;
  /** Kinds the API server does not serve. */
  readonly missingKinds: readonly string[];
  /** Each planned Gateway by `namespace/name`. */
  readonly planned: ReadonlyMap<string, PlannedGateway>;
  /** Why a Gateway could not be planned, by `namespace/name` (the condition's message). */
  readonly planFailures: ReadonlyMap<string, string>;
  /** A ListenerSet's parent Gateway as `namespace/name`. */
  readonly parentOf: (ls: ListenerSetStatusResult) => string | undefined;
}

export interface FleetResults {
  readonly results: StatusResults;
  /** Each planned Gateway's addresses, in status order. */
  readonly addresses: Map<string, readonly GatewayAddress[]>;
}

/** The status to write: Programmed and addresses decided by the fleet, ListenerSets by their parent. */
export function fleetResults(input: FleetResultsInput): FleetResults {
  const { statuses } = input;
  const addresses = new Map<string, readonly GatewayAddress[]>();
  const fleet: StatusResults = {
    ...statuses,
    gatewayClasses: statuses.gatewayClasses.map(c => {
      const accepted = c.conditions.find(x => x.type === "Accepted");
      const v = supportedVersionCondition(
        input.bundleVersion,
        accepted?.observedGeneration,
        input.missingKinds,
      );
      return v ? { ...c, conditions: [...c.conditions, v] } : c;
    }),
    gateways: statuses.gateways.map(g => {
      const key = `${g.namespace}/${g.name}`;
      const plan = input.planned.get(key);
      const failure = input.planFailures.get(key);
      if (!plan && failure !== undefined)
        return withFleet(
          g,
          { proxies: [], desiredHash: undefined, configProblem: failure, serviceExists: true },
          [],
        );
      if (!plan) return g;
      addresses.set(key, plan.addresses);
      return withFleet(g, plan.view, plan.addresses);
    }),
  };
  return { results: withListenerSetParents(fleet, input.parentOf), addresses };
}
