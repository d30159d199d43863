/**
 * Snapshot → one IR per Gateway of our GatewayClasses, plus every status result. Pure: no
 * clock, no I/O, no randomness; the same snapshot gives the same output.
 */
import {
  BackendIR,
  GatewayIR,
  HTTPListenerIR,
  HTTPRouteEntryIR,
  HTTPServerIR,
  L4RouteIR,
  L4ServerIR,
  RedirectIR,
} from "../ir";
import {
  CONTROLLER_NAME,
  GATEWAY_GROUP,
  Gateway,
  HTTPRequestRedirectFilter,
  ListenerSet,
  ParentReference,
  Snapshot,
  changedKeys,
  earlierVersions,
  keyOf,
} from "../snapshot";
import { isOurClass } from "../ownership";
import { PolicyReason, backendTLSPolicies, subjectAltNames } from "./backendtls";
import { telemetry, withTracing } from "./telemetry";
import { slicesByService } from "./backends";
import { recordServiceReads } from "./reads";
import { L4_SANS_UNSUPPORTED, l4BackendsIR, reencrypts } from "./l4backendtls";
import {
  Condition,
  ConditionType,
  GatewayClassReason,
  GatewayReason,
  RouteReason,
  condition,
} from "./conditions";
import {
  classEgress,
  gatewayParametersProblem,
  parametersRefProblem,
  resolveSettings,
} from "../provision/parameters";
import {
  EgressPolicy,
  egressProblem,
  gatedBackends,
  gatedEndpoints,
  gatedMirrors,
  proxyAddresses,
  ruleTargets,
} from "./egress";
import {
  DEFAULT_PROXY_FLAVOR,
  ProxyFlavor,
  capabilitiesOf,
  missingCapability,
  supportedFeaturesOf,
} from "../flavor/proxy-flavor";
import { DEFAULT_LIMITS, Limits } from "../validation/limits";
import { compareHostSpecificity, intersectHostnames } from "./hostnames";
import {
  ResolvedListener,
  RouteKind,
  listenerSetsOf,
  namespaceAllowed,
  resolveListeners,
} from "./listeners";
import { withHttp01Answers } from "./acme";
import { Ranked, RankedGroup, precedenceOrder, rankedGroup } from "./listener-routes";
import { keptOrMade, stableData } from "./attach-cache";
import type { StatusEchoes } from "./status-echo";
import {
  RefusableObject,
  RefusedObject,
  Refusals,
  fingerprintOf,
  refusableObjects,
  refusalMessage,
  withoutRefusedListeners,
} from "./refused";
import { backendClientCertificate } from "./gatewaytls";
import {
  CompiledRoute,
  CompiledRule,
  compileGRPCRoute,
  compileHTTPRoute,
  pathModifier,
  ruleNeeds,
} from "./routes";
import {
  BackendTLSPolicyStatusResult,
  GatewayClassStatusResult,
  GatewayStatusResult,
  ListenerSetStatusResult,
  RouteParentStatusResult,
  RouteStatusResult,
  StatusResults,
} from "./status";
import { compileL4Route } from "./routes-l4";
import type { AnyCompiled, Attachment, GatewayContext } from "./context";
import {
  gatewayConditions,
  gatewayTLSConditions,
  listenerSetResults,
  listenerStatus,
  unsupportedAddressProblem,
} from "./gateway-conditions";

export { unsupportedAddressProblem };

export interface TranslateOptions {
  /** The controllerName whose GatewayClasses we serve; default `kengine.io/gateway-controller`. */
  readonly controllerName?: string;
  /** Objects a Gateway's proxies refused: left out of that Gateway's config (refused.ts). */
  readonly refused?: readonly RefusedObject[];
  /** Also list, per Gateway, the objects in its config that could be refused (`candidates`). */
  readonly candidates?: boolean;
  /** The incremental translator's memory of the last build's Gateways (status-echo.ts). */
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

/**
 * A snapshot map's objects in key order (`namespace/name`, the map's keys: keyOf), made once
 * per map: from an earlier version's order and the keys changed since (the snapshot's lineage:
 * one changed route costs a binary search and an array copy, not a sort of every key), or by
 * sorting the map's keys.
 */
interface Sorted {
  readonly keys: readonly string[];
  readonly objects: readonly unknown[];
}
const sortedMaps = new WeakMap<ReadonlyMap<string, unknown>, Sorted>();
function sortedByKey(map: ReadonlyMap<string, unknown>): readonly unknown[] {
  let sorted = sortedMaps.get(map);
  if (!sorted) {
    for (const [earlier, changed] of earlierVersions(map)) {
      const before = sortedMaps.get(earlier);
      if (before) {
        sorted = patchedOrder(before, map, changed);
        break;
      }
    }
    if (!sorted) {
      const keys = [...map.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      sorted = { keys, objects: keys.map(k => map.get(k)) };
    }
    sortedMaps.set(map, sorted);
  }
  return sorted.objects;
}

/** `before`'s order with the `changed` keys replaced, removed or inserted as `map` holds them. */
function patchedOrder(
  before: Sorted,
  map: ReadonlyMap<string, unknown>,
  changed: ReadonlySet<string>,
): Sorted {
  const keys = before.keys.slice();
  const objects = before.objects.slice();
  for (const key of changed) {
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keys[mid]! < key) lo = mid + 1;
      else hi = mid;
    }
    const present = keys[lo] === key;
    const o = map.get(key);
    if (o === undefined) {
      if (present) {
        keys.splice(lo, 1);
        objects.splice(lo, 1);
      }
    } else if (present) objects[lo] = o;
    else {
      keys.splice(lo, 0, key);
      objects.splice(lo, 0, o);
    }
  }
  return { keys, objects };
}

/**
 * Per route object, what it contributed to the last build that translated it: kept while the
 * world it attached in (worldOf) is the same and its compilation is the same object. Pure from
 * the caller's view: a replay appends the attachments and status result that attaching again
 * would make, in the same order.
 */
interface Replay {
  readonly world: object;
  readonly compiled: AnyCompiled | undefined;
  /** Gateway key, listener id, attachment. */
  readonly attached: readonly (readonly [string, string, Attachment])[];
  readonly result: RouteStatusResult | undefined;
}
/** Per world, per route object (a route may be translated in several worlds: a full build, a
 * culprit search beside the controller's builds). */
const replayMaps = new WeakMap<object, WeakMap<object, Replay>>();
function replaysIn(world: object): WeakMap<object, Replay> {
  let m = replayMaps.get(world);
  if (!m) replayMaps.set(world, (m = new WeakMap()));
  return m;
}

/**
 * Everything a route's attachment reads besides the route's own compilation: the Gateways of
 * our classes with their resolved listeners, flavour and ListenerSets (which also decide what
 * a parentRef names), the Namespaces (allowedRoutes selectors) and the refused objects. The
 * same object while all of them are the same objects, so one comparison per route suffices.
 */
const worlds: { readonly token: object; readonly parts: readonly unknown[] }[] = [];
/** Worlds remembered (a full build or a culprit search beside the controller's builds). */
const MAX_WORLDS = 4;
const refusedOwner = {};
function worldOf(
  s: Snapshot,
  contexts: ReadonlyMap<string, GatewayContext>,
  refused: readonly RefusedObject[] | undefined,
): object {
  const parts: unknown[] = [s.objects.Namespace, stableData(refusedOwner, refused ?? [])];
  for (const [key, ctx] of contexts)
    parts.push(
      key,
      ctx.gateway,
      ctx.listeners,
      ctx.flavor,
      ctx.egress,
      ctx.listenerSets.length,
      ...ctx.listenerSets,
      ctx.refusedListenerSets.length,
      ...ctx.refusedListenerSets,
    );
  const known = worlds.find(
    w => w.parts.length === parts.length && w.parts.every((p, i) => p === parts[i]),
  );
  if (known) {
    // Most recently used first: the controller's own world is not pushed out by others.
    worlds.splice(worlds.indexOf(known), 1);
    worlds.unshift(known);
    return known.token;
  }
  worlds.unshift({ token: {}, parts });
  worlds.length = Math.min(worlds.length, MAX_WORLDS);
  return worlds[0]!.token;
}

/** Per Gateway object, the owner of its EgressPolicy's stable identity (stableData). */
const egressOwners = new WeakMap<Gateway, object>();
function egressOwner(gw: Gateway): object {
  let o = egressOwners.get(gw);
  if (!o) egressOwners.set(gw, (o = {}));
  return o;
}

export function translate(s: Snapshot, options: TranslateOptions = {}): TranslateResult {
  const controllerName = options.controllerName ?? CONTROLLER_NAME;
  const classes = [...s.objects.GatewayClass.values()]
    .filter(gc => isOurClass(gc, controllerName))
    .sort(byKey);
  const classNames = new Set(classes.map(c => c.metadata.name));
  const gatewayClasses: GatewayClassStatusResult[] = classes.map(gc => {
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
  });

  // Gateways of our classes, with their listeners.
  const contexts = new Map<string, GatewayContext>();
  const classByName = new Map(classes.map(c => [c.metadata.name, c] as const));
  const ours = [...s.objects.Gateway.values()]
    .filter(g => classNames.has(g.spec?.gatewayClassName))
    .sort(byKey);
  // a Gateway changed only by our status write is translated as the object it was (status-echo.ts)
  for (const gw of options.statusEchoes ? options.statusEchoes.stable(ours) : ours) {
    const { allowed, refused } = listenerSetsOf(s, gw);
    const gc = classByName.get(gw.spec.gatewayClassName);
    const settings = resolveSettings(s, gc, gw).settings;
    const flavor = settings.flavor;
    const limits = settings.limits ?? DEFAULT_LIMITS;
    const refusals = new Refusals(keyOf(gw), options.refused ?? []);
    const egress = stableData(egressOwner(gw), {
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
  const listenerSetOwner = new Map<string, GatewayContext>();
  for (const ctx of contexts.values())
    for (const ls of [...ctx.listenerSets, ...ctx.refusedListenerSets])
      listenerSetOwner.set(keyOf(ls), ctx);

  // Routes.
  const world = worldOf(s, contexts, options.refused);
  const routes =
    routesDelta(s, world, contexts, listenerSetOwner) ??
    walkRoutes(s, world, contexts, listenerSetOwner);
  lastRoutes.set(world, {
    maps: ROUTE_KINDS.map(k => s.objects[k]),
    compileMaps: compileMaps(s),
    attachments: new Map([...contexts].map(([key, ctx]) => [key, ctx.attachments])),
    routes,
  });

  // IR and Gateway / ListenerSet status.
  const gateways: GatewayIR[] = [];
  const gatewayStatuses: GatewayStatusResult[] = [];
  const listenerSetStatuses: ListenerSetStatusResult[] = [];
  const tele = telemetry(s, contexts);
  for (const ctx of contexts.values()) {
    const gw = ctx.gateway;
    const gen = gw.metadata.generation;
    const own = ctx.listeners.filter(l => l.owner.kind === "Gateway");
    // A Gateway whose parameters do not resolve is not accepted and gets no proxies (spec:
    // Accepted=False, reason InvalidParameters).
    // Parameters that set a platform-owned field the class does not allow: the same answer.
    const badParameters = gatewayParametersProblem(
      s,
      classByName.get(gw.spec.gatewayClassName),
      gw,
    );
    // An address of a type we cannot request or recognise: not accepted either (spec:
    // Accepted=False, reason UnsupportedAddress).
    const badAddresses = unsupportedAddressProblem(gw.spec?.addresses);
    // An exception while building one Gateway's IR fails that Gateway alone.
    let irFailure: string | undefined;
    if (!badParameters && !badAddresses)
      try {
        gateways.push(
          withTracing(
            withHttp01Answers(s, gw, ctx.listeners, buildIR(ctx)),
            tele.tracing.get(keyOf(gw)),
          ),
        );
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
    listenerSetStatuses.push(...sets.statuses);
    gatewayStatuses.push({
      namespace: gw.metadata.namespace ?? "",
      name: gw.metadata.name,
      conditions,
      listeners: own.map(l => listenerStatus(l, ctx)),
      ...(sets.attached !== undefined && { attachedListenerSets: sets.attached }),
    });
  }
  listenerSetStatuses.sort((a, b) =>
    `${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1,
  );
  return {
    ...(options.candidates && { candidates: candidatesOf(contexts) }),
    gateways,
    statuses: {
      gatewayClasses,
      gateways: gatewayStatuses,
      listenerSets: listenerSetStatuses,
      routes,
      backendTLSPolicies: backendTLSPolicyStatuses(s, contexts),
      ...(tele.statuses.length > 0 && { telemetryPolicies: tele.statuses }),
    },
  };
}

/**
 * Status of every BackendTLSPolicy covering a Service that a route attached to one of our
 * Gateways uses; one ancestor per such Gateway (PolicyAncestorStatus).
 */
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

/** Backends as `flavor` can reach them: one whose TLS needs what it lacks gets HTTP 500. */
function runnableBackends(
  backends: readonly BackendIR[],
  flavor: ProxyFlavor,
): readonly BackendIR[] {
  if (capabilitiesOf(flavor).backendSANs) return backends;
  if (!backends.some(b => b.type === "service" && b.tls?.subjectAltNames)) return backends;
  return backends.map(b =>
    b.type === "service" && b.tls?.subjectAltNames
      ? { type: "invalid", id: b.id, weight: b.weight }
      : b,
  );
}

function backendTLSPolicyStatuses(
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

/* ------------------------------------------------------------------ routes, incrementally */

const ROUTE_KINDS: readonly RouteKind[] = [
  "HTTPRoute",
  "GRPCRoute",
  "TLSRoute",
  "TCPRoute",
  "UDPRoute",
];

/** The last build's routes: what the next one patches when only routes changed (routesDelta). */
interface LastRoutes {
  readonly maps: readonly ReadonlyMap<string, unknown>[];
  readonly compileMaps: readonly unknown[];
  /** Per Gateway key, its listeners' attachments (not changed after the build). */
  readonly attachments: ReadonlyMap<string, ReadonlyMap<string, Attachment[]>>;
  readonly routes: readonly RouteStatusResult[];
}
/** Per world (worldOf), the last build's routes: what the next one patches (routesDelta). */
const lastRoutes = new WeakMap<object, LastRoutes>();
let deltaBuilds = 0;
/** How many translations patched the last one's routes instead of walking them (tests). */
export const routeDeltas = (): number => deltaBuilds;

/** Every route in order (kind, then key), each attached again or replayed (replays). */
function walkRoutes(
  s: Snapshot,
  world: object,
  contexts: ReadonlyMap<string, GatewayContext>,
  listenerSetOwner: ReadonlyMap<string, GatewayContext>,
): RouteStatusResult[] {
  const routes: RouteStatusResult[] = [];
  const replays = replaysIn(world);
  for (const kind of ROUTE_KINDS) {
    for (const obj of sortedByKey(s.objects[kind])) {
      // An unchanged route in an unchanged world attaches as it did: its attachments are
      // appended again and its status result is the same object.
      let replay = replays.get(obj as object);
      if (
        replay === undefined ||
        replay.world !== world ||
        (replay.compiled !== undefined && compileAny(s, kind, obj) !== replay.compiled)
      ) {
        replay = routeOutcome(s, kind, obj, world, contexts, listenerSetOwner);
        replays.set(obj as object, replay);
      } else
        for (const [gw, id, a] of replay.attached) {
          const attachments = contexts.get(gw)!.attachments;
          const list = attachments.get(id);
          if (list) list.push(a);
          else attachments.set(id, [a]);
        }
      if (replay.result) routes.push(replay.result);
    }
  }
  return routes;
}

/** Position of a route (kind, then `namespace/name`) in the walk's order. */
const routeRank = (kind: string, namespace: string, name: string): [number, string] => [
  ROUTE_KINDS.indexOf(kind as RouteKind),
  `${namespace}/${name}`,
];
const beforeRank = (a: [number, string], b: [number, string]): boolean =>
  a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

/** Inserts `item` into `list` (in walk order by `rank`) where the walk would have put it. */
function insertInOrder<T>(list: T[], item: T, rank: (t: T) => [number, string]): void {
  const r = rank(item);
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (beforeRank(rank(list[mid]!), r)) lo = mid + 1;
    else hi = mid;
  }
  list.splice(lo, 0, item);
}

function removeItem<T>(list: T[], item: T): boolean {
  const i = list.lastIndexOf(item);
  if (i < 0) return false;
  list.splice(i, 1);
  return true;
}

/**
 * The routes of this build from the last build's when only routes changed (work
 * proportional to the change): the same world (worldOf), the same maps compilation reads, and
 * each route kind's map a later version of the last one with known changed keys (the
 * snapshot's lineage). Each changed route's old contribution (its replay) is taken out of the
 * listeners' attachment lists and the status results, and its new one put where the walk
 * would put it. Undefined: walk every route instead.
 */
function routesDelta(
  s: Snapshot,
  world: object,
  contexts: ReadonlyMap<string, GatewayContext>,
  listenerSetOwner: ReadonlyMap<string, GatewayContext>,
): RouteStatusResult[] | undefined {
  const last = lastRoutes.get(world);
  if (!last) return undefined;
  const replays = replaysIn(world);
  const maps = compileMaps(s);
  if (!maps.every((m, i) => m === last.compileMaps[i])) return undefined;
  const changes: [RouteKind, unknown, unknown][] = [];
  for (const [i, kind] of ROUTE_KINDS.entries()) {
    const before = last.maps[i]!;
    const keys = changedKeys(before, s.objects[kind]);
    if (!keys) return undefined;
    for (const key of keys) changes.push([kind, before.get(key), s.objects[kind].get(key)]);
  }
  // The old contributions must be known.
  for (const [, before] of changes)
    if (before !== undefined && !replays.has(before as object)) return undefined;
  // Copies of the last build's lists: the last build's result stays as it was.
  const lists = new Map<string, Map<string, Attachment[]>>();
  for (const [gw, byId] of last.attachments)
    lists.set(gw, new Map([...byId].map(([id, l]) => [id, l.slice()])));
  const routes = last.routes.slice();
  for (const [, before] of changes) {
    if (before === undefined) continue;
    const r = replays.get(before as object)!;
    for (const [gw, id, a] of r.attached)
      if (!removeItem(lists.get(gw)?.get(id) ?? [], a)) return undefined;
    if (r.result && !removeItem(routes, r.result)) return undefined;
  }
  // New contributions, made against empty lists, then put in order.
  const scratch = new Map(
    [...contexts].map(([k, ctx]) => [k, { ...ctx, attachments: new Map<string, Attachment[]>() }]),
  );
  const scratchOwner = new Map(
    [...listenerSetOwner].map(([k, ctx]) => [k, scratch.get(keyOf(ctx.gateway))!]),
  );
  for (const [kind, , after] of changes) {
    if (after === undefined) continue;
    const r = routeOutcome(s, kind, after, world, scratch, scratchOwner);
    replays.set(after as object, r);
    for (const [gw, id, a] of r.attached) {
      let byId = lists.get(gw);
      if (!byId) lists.set(gw, (byId = new Map()));
      let list = byId.get(id);
      if (!list) byId.set(id, (list = []));
      insertInOrder(list, a, x => routeRank(x.route.kind, x.route.namespace, x.route.name));
    }
    if (r.result) insertInOrder(routes, r.result, x => routeRank(x.kind, x.namespace, x.name));
  }
  for (const [gw, ctx] of contexts)
    for (const [id, list] of lists.get(gw) ?? [])
      if (list.length > 0) ctx.attachments.set(id, list);
  deltaBuilds++;
  return routes;
}

/** Attaches one route to its parents (appending to the contexts' lists): its Replay. */
function routeOutcome(
  s: Snapshot,
  kind: RouteKind,
  obj: unknown,
  world: object,
  contexts: ReadonlyMap<string, GatewayContext>,
  listenerSetOwner: ReadonlyMap<string, GatewayContext>,
): Replay {
  const route = obj as {
    metadata: { name: string; namespace?: string; generation?: number };
    spec?: { parentRefs?: readonly ParentReference[] };
  };
  const ns = route.metadata.namespace ?? "";
  const parents: RouteParentStatusResult[] = [];
  let compiled: AnyCompiled | undefined;
  const touched: [GatewayContext, string][] = [];
  (route.spec?.parentRefs ?? []).forEach((parentRef, i) => {
    const target = parentTarget(parentRef, ns, contexts, listenerSetOwner);
    if (!target) return;
    const c = (compiled ??= compileAny(s, kind, obj));
    const refusal = target.ctx.refusals.find(
      { kind, namespace: ns, name: route.metadata.name },
      () => fingerprintOf(c),
    );
    // Everything attach() reads (c stands for the route object, so its generation and
    // parentRefs); a refused route is not kept.
    const reads = refusal
      ? [refusal]
      : [
          target.ctx.gateway,
          target.ctx.listeners,
          target.ctx.flavor,
          target.ctx.egress,
          target.type === "listenerSet" ? target.listenerSet : undefined,
          target.type === "listenerSet" && target.refused,
          s.objects.Namespace,
        ];
    const { result, added } = keptOrMade(c, i, reads, () => {
      const before = new Map([...target.ctx.attachments].map(([id, l]) => [id, l.length]));
      const result = attach(s, kind, c, route.metadata.generation, parentRef, target, refusal);
      const added: [string, Attachment][] = [];
      for (const [id, list] of target.ctx.attachments)
        for (const a of list.slice(before.get(id) ?? 0)) added.push([id, a]);
      return { result, added };
    });
    // A hit replays what attach() added; a miss has added it already.
    for (const [id, a] of added) {
      const list = target.ctx.attachments.get(id) ?? [];
      const last = list[list.length - 1];
      if (last !== a && last?.route !== c) list.push(a);
      target.ctx.attachments.set(id, list);
      touched.push([target.ctx, id]);
    }
    parents.push(result);
  });
  const result =
    parents.length > 0
      ? keptOrMade(obj as object, -1, parents, () => ({
          kind,
          namespace: ns,
          name: route.metadata.name,
          parents,
        }))
      : undefined;
  // What this route added: the last attachment of each list it touched (one per list).
  const attached: [string, string, Attachment][] = [];
  for (const [ctx, id] of touched) {
    const list = ctx.attachments.get(id)!;
    const last = list[list.length - 1]!;
    const gw = keyOf(ctx.gateway);
    if (last.route === compiled && !attached.some(([g, i]) => g === gw && i === id))
      attached.push([gw, id, last]);
  }
  return { world, compiled, attached, result };
}

/* ------------------------------------------------------------------ routes → parents */

type ParentTarget =
  | { readonly type: "gateway"; readonly ctx: GatewayContext }
  | {
      readonly type: "listenerSet";
      readonly ctx: GatewayContext;
      readonly listenerSet: ListenerSet;
      /** The Gateway does not allow it (allowedListeners): nothing can attach through it. */
      readonly refused: boolean;
    };

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

function parentTarget(
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

/**
 * Each route's compilation, kept while the route object and everything compilation read are
 * the same objects (a change to one route compiles that route; the snapshot replaces
 * a kind's map when one of its objects changes): the maps of BackendTLSPolicies, ConfigMaps
 * and ReferenceGrants (backendtls.ts, refs.ts), and each Service the compilation looked up
 * (reads.ts) with that Service's EndpointSlices, so an endpoint change compiles only the
 * routes naming that Service. Compilation is pure, so a hit equals compiling again. A new
 * snapshot read during compilation must be named here.
 */
const compiled = new WeakMap<
  object,
  {
    readonly reads: readonly unknown[];
    readonly services: readonly string[];
    readonly c: AnyCompiled;
    /** The maps compilation reads, as last checked: while the same, no read can differ. */
    maps: readonly unknown[];
  }
>();
const compileMaps = (s: Snapshot): readonly unknown[] => [
  s.objects.Service,
  s.objects.EndpointSlice,
  s.objects.BackendTLSPolicy,
  s.objects.ConfigMap,
  s.objects.ClusterTrustBundle,
  s.objects.ReferenceGrant,
  s.objects.XBackend,
];
const compileReads = (s: Snapshot, services: readonly string[]): readonly unknown[] => {
  const reads: unknown[] = [
    s.objects.BackendTLSPolicy,
    s.objects.ConfigMap,
    // BackendTLSPolicy CAs may come from bundles (trustbundle.ts).
    s.objects.ClusterTrustBundle,
    s.objects.ReferenceGrant,
    // backendRefs to XBackends (xbackend.ts); an EndpointSelector looks through every Service.
    s.objects.XBackend,
    ...(s.objects.XBackend.size > 0 ? [s.objects.Service] : []),
  ];
  const slices = services.length > 0 ? slicesByService(s) : undefined;
  for (const key of services) {
    const list = slices?.get(key) ?? [];
    reads.push(s.objects.Service.get(key), list.length, ...list);
  }
  return reads;
};
const sameReads = (a: readonly unknown[], b: readonly unknown[]): boolean =>
  a.length === b.length && a.every((r, i) => r === b[i]);

/**
 * The Services (`namespace/name`) whose object or EndpointSlices differ between the Service and
 * EndpointSlice maps in `from` and the snapshot's (the snapshot's lineage; an EndpointSlice
 * counts for the Service it is labelled with, before and after); undefined: not known. Made
 * once per pair of versions, not per route.
 */
const servicesChangedCache = new WeakMap<
  object,
  {
    readonly from: unknown;
    readonly to: readonly unknown[];
    readonly services: ReadonlySet<string> | undefined;
  }
>();
function servicesChanged(from: readonly unknown[], s: Snapshot): ReadonlySet<string> | undefined {
  const fromServices = from[0] as Snapshot["objects"]["Service"];
  const fromSlices = from[1] as Snapshot["objects"]["EndpointSlice"];
  const cached = servicesChangedCache.get(fromSlices);
  if (
    cached &&
    cached.from === fromServices &&
    cached.to[0] === s.objects.Service &&
    cached.to[1] === s.objects.EndpointSlice
  )
    return cached.services;
  const serviceKeys = changedKeys(fromServices, s.objects.Service);
  const sliceKeys = changedKeys(fromSlices, s.objects.EndpointSlice);
  let services: Set<string> | undefined;
  if (serviceKeys && sliceKeys) {
    services = new Set(serviceKeys);
    for (const k of sliceKeys)
      for (const slice of [fromSlices.get(k), s.objects.EndpointSlice.get(k)]) {
        const name = slice?.metadata.labels?.["kubernetes.io/service-name"];
        if (slice && name !== undefined) services.add(`${slice.metadata.namespace}/${name}`);
      }
  }
  servicesChangedCache.set(fromSlices, {
    from: fromServices,
    to: [s.objects.Service, s.objects.EndpointSlice],
    services,
  });
  return services;
}

function compileAny(s: Snapshot, kind: RouteKind, obj: unknown): AnyCompiled {
  const hit = compiled.get(obj as object);
  if (hit) {
    const m = hit.maps;
    if (
      m[0] === s.objects.Service &&
      m[1] === s.objects.EndpointSlice &&
      m[2] === s.objects.BackendTLSPolicy &&
      m[3] === s.objects.ConfigMap &&
      m[4] === s.objects.ClusterTrustBundle &&
      m[5] === s.objects.ReferenceGrant &&
      m[6] === s.objects.XBackend
    )
      return hit.c;
    // Only Services or EndpointSlices changed, none this route read: no need to list its reads.
    // Not while XBackends exist: an EndpointSelector reads every Service of its namespace (a
    // new Service with its selector is one it never looked up), so its reads hold the whole
    // Service map and are compared instead.
    const changed =
      m[2] === s.objects.BackendTLSPolicy &&
      m[3] === s.objects.ConfigMap &&
      m[4] === s.objects.ClusterTrustBundle &&
      m[5] === s.objects.ReferenceGrant &&
      m[6] === s.objects.XBackend &&
      s.objects.XBackend.size === 0
        ? servicesChanged(m, s)
        : undefined;
    if (
      (changed && !hit.services.some(k => changed.has(k))) ||
      sameReads(hit.reads, compileReads(s, hit.services))
    ) {
      hit.maps = compileMaps(s);
      return hit.c;
    }
  }
  const { value: c, services } = recordServiceReads(() => compileUncached(s, kind, obj));
  compiled.set(obj as object, {
    reads: compileReads(s, services),
    services,
    c,
    maps: compileMaps(s),
  });
  return c;
}

function compileUncached(s: Snapshot, kind: RouteKind, obj: unknown): AnyCompiled {
  if (kind === "HTTPRoute") return { l4: false, ...compileHTTPRoute(s, obj as never) };
  if (kind === "GRPCRoute") return { l4: false, ...compileGRPCRoute(s, obj as never) };
  return { l4: true, ...compileL4Route(s, kind, obj) };
}

function attach(
  s: Snapshot,
  kind: RouteKind,
  route: AnyCompiled,
  generation: number | undefined,
  parentRef: ParentReference,
  target: ParentTarget,
  refusal?: RefusedObject,
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

const runnable = (rule: CompiledRule, flavor: ProxyFlavor): boolean =>
  missingCapability(flavor, ruleNeeds(rule)) === undefined;

/* ------------------------------------------------------------------ IR */

function buildIR(ctx: GatewayContext): GatewayIR {
  const served = ctx.listeners.filter(l => l.served);
  const ports = [...new Set(served.map(l => l.listener.port))].sort((a, b) => a - b);
  const httpServers: HTTPServerIR[] = [];
  const l4Servers: L4ServerIR[] = [];
  for (const port of ports) {
    const onPort = served.filter(l => l.listener.port === port);
    const http = onPort.filter(
      l => l.listener.protocol === "HTTP" || l.listener.protocol === "HTTPS",
    );
    if (http.length > 0) {
      const listeners = http
        .slice()
        .sort(
          (a, b) =>
            compareHostSpecificity(
              a.listener.hostname?.toLowerCase(),
              b.listener.hostname?.toLowerCase(),
            ) || (a.id < b.id ? -1 : 1),
        )
        .map(l =>
          httpListenerIR(l, ctx.attachments.get(l.id) ?? [], ctx.flavor, ctx.egress, ctx.gateway),
        );
      const clientValidation = http.find(l => l.clientValidation)?.clientValidation;
      httpServers.push({
        port,
        protocol: http[0].listener.protocol as "HTTP" | "HTTPS",
        ...(clientValidation && { clientValidation }),
        listeners,
      });
    }
    for (const protocol of ["TLS", "TCP", "UDP"] as const) {
      const ls = onPort.filter(l => l.listener.protocol === protocol);
      if (ls.length === 0) continue;
      const routes: (L4RouteIR & { created: string; origin?: string })[] = [];
      for (const l of ls) {
        for (const a of ctx.attachments.get(l.id) ?? []) {
          if (!a.route.l4) continue;
          const r = a.route;
          const terminate = reencrypts(protocol, l.listener.tls?.mode);
          routes.push({
            route: { kind: r.kind, namespace: r.namespace, name: r.name },
            serverNames: protocol === "TLS" ? a.hostnames : undefined,
            ...(terminate && { terminate: { certificateIds: l.certificates.map(c => c.id) } }),
            backends: l4BackendsIR(
              r.backends.map(b => ({ ...b, endpoints: gatedEndpoints(ctx.egress, b.endpoints) })),
              terminate,
            ),
            created: r.created,
            origin: routeHostnameOf(l.listener.hostname, r.hostnames, a.hostnames?.[0]),
          });
        }
      }
      routes.sort((a, b) => {
        const ha = a.serverNames?.[0];
        const hb = b.serverNames?.[0];
        return (
          compareHostSpecificity(ha, hb) ||
          compareHostSpecificity(a.origin, b.origin) ||
          (a.created !== b.created
            ? a.created < b.created
              ? -1
              : 1
            : `${a.route.namespace}/${a.route.name}` < `${b.route.namespace}/${b.route.name}`
              ? -1
              : 1)
        );
      });
      l4Servers.push({
        port,
        protocol,
        routes: routes.map(({ created: _c, origin: _o, ...r }) => r),
      });
    }
  }
  const certs = new Map(served.flatMap(l => l.certificates).map(c => [c.id, c] as const));
  const client = ctx.backendClientCertificate;
  return {
    namespace: ctx.gateway.metadata.namespace ?? "",
    name: ctx.gateway.metadata.name,
    gatewayClassName: ctx.gateway.spec.gatewayClassName,
    ...(ctx.flavor !== DEFAULT_PROXY_FLAVOR && { flavor: ctx.flavor }),
    ...(!sameTimeouts(ctx.limits, DEFAULT_LIMITS) && {
      limits: {
        requestHeaderTimeout: ctx.limits.requestHeaderTimeout,
        requestBodyTimeout: ctx.limits.requestBodyTimeout,
        idleTimeout: ctx.limits.idleTimeout,
      },
    }),
    httpServers,
    l4Servers,
    certificates: [...certs.values()].sort((a, b) => (a.id < b.id ? -1 : 1)),
    ...(client?.ok &&
      capabilitiesOf(ctx.flavor).backendClientCertificate && {
        backendClientCertificate: {
          id: client.id,
          certificatePem: client.certificatePem,
          keyPem: client.keyPem,
        },
      }),
  };
}

const sameTimeouts = (a: Limits, b: Limits): boolean =>
  a.requestHeaderTimeout === b.requestHeaderTimeout &&
  a.requestBodyTimeout === b.requestBodyTimeout &&
  a.idleTimeout === b.idleTimeout;

/**
 * The most specific of a route's own hostnames whose intersection with the listener's
 * hostname is `served` (undefined when the route names no hostname).
 */
function routeHostnameOf(
  listener: string | undefined,
  route: readonly string[] | undefined,
  served: string | undefined,
): string | undefined {
  if (served === undefined) return undefined;
  return (route ?? [])
    .filter(r => intersectHostnames(listener, [r])?.includes(served))
    .map(r => r.toLowerCase())
    .sort(compareHostSpecificity)[0];
}

/** Each attachment's entry group with the listener key it was made for (an attachment object
 * is replayed from build to build: translate.ts `replays`, attach-cache.ts). */
const groupOfAttachment = new WeakMap<
  Attachment,
  { readonly listenerKey: string; readonly group: RankedGroup }
>();

function httpListenerIR(
  l: ResolvedListener,
  attachments: readonly Attachment[],
  flavor: ProxyFlavor,
  egress: EgressPolicy,
  gateway: Gateway,
): HTTPListenerIR {
  const groups: RankedGroup[] = [];
  // Everything the entries read besides the compiled route (listener-routes.ts): a new input
  // to an entry must be named here too. Hostnames hold no "," and none is empty.
  const listenerKey = JSON.stringify([
    l.listener.hostname,
    l.listener.protocol,
    l.listener.port,
    flavor,
    egress,
  ]);
  for (const a of attachments) {
    if (a.route.l4) continue;
    const kept = groupOfAttachment.get(a);
    if (kept !== undefined && kept.listenerKey === listenerKey) {
      groups.push(kept.group);
      continue;
    }
    const route = a.route;
    const key = `${listenerKey}${a.hostnames ? `[${a.hostnames.join(",")}]` : "*"}`;
    const group = rankedGroup(route, key, () =>
      attachmentEntries(route, a.hostnames, l, flavor, egress),
    );
    groupOfAttachment.set(a, { listenerKey, group });
    groups.push(group);
  }
  return {
    id: l.id,
    ...(l.listener.hostname && { hostname: l.listener.hostname.toLowerCase() }),
    certificateIds: l.certificates.map(c => c.id),
    ...(l.filters.length > 0 && { filters: l.filters }),
    routes: precedenceOrder(gateway, l.id, groups).map(r => r.entry),
  };
}

/** The entries one attached route gives a listener: one per hostname, runnable rule and match. */
function attachmentEntries(
  route: CompiledRoute,
  hostnames: readonly string[] | undefined,
  l: ResolvedListener,
  flavor: ProxyFlavor,
  egress: EgressPolicy,
): Ranked[] {
  const ranked: Ranked[] = [];
  for (const hostname of hostnames ?? [undefined]) {
    const origin = routeHostnameOf(l.listener.hostname, route.hostnames, hostname);
    for (const rule of route.rules) {
      if (!runnable(rule, flavor)) continue;
      const mirrors = gatedMirrors(egress, rule.mirrors);
      rule.matches.forEach((m, j) => {
        const match = { ...m, hostname };
        const ref = {
          kind: route.kind,
          namespace: route.namespace,
          name: route.name,
          rule: rule.index,
          match: j,
        };
        const action: HTTPRouteEntryIR["action"] = rule.redirect
          ? { type: "redirect", redirect: redirectIR(rule.redirect, l) }
          : rule.backends.length === 0
            ? { type: "respond", status: 500, body: "" }
            : {
                type: "forward",
                backends: runnableBackends(gatedBackends(egress, rule.backends), flavor),
                ...(rule.timeouts && { timeouts: rule.timeouts }),
                ...(rule.retry && { retry: rule.retry }),
                ...(rule.session && { session: rule.session }),
              };
        const entry: HTTPRouteEntryIR = {
          route: ref,
          match,
          ...(rule.cors && { cors: rule.cors }),
          ...(rule.requestHeaders && { requestHeaders: rule.requestHeaders }),
          ...(rule.responseHeaders && { responseHeaders: rule.responseHeaders }),
          ...(rule.rewrite && { rewrite: rule.rewrite }),
          ...(mirrors && { mirrors }),
          action,
        };
        ranked.push({ match, route: ref, created: route.created, origin, entry });
      });
    }
  }
  return ranked;
}

/** The spec's redirect defaults: scheme from the listener, port from the scheme or listener. */
export function redirectIR(f: HTTPRequestRedirectFilter, l: ResolvedListener): RedirectIR {
  const listenerScheme = l.listener.protocol === "HTTPS" ? "https" : "http";
  const scheme = (f.scheme ?? listenerScheme) as "http" | "https";
  let port: number | undefined = f.port ?? (f.scheme ? undefined : l.listener.port);
  if ((scheme === "http" && port === 80) || (scheme === "https" && port === 443)) port = undefined;
  return {
    scheme,
    ...(f.hostname && { hostname: f.hostname }),
    ...(port !== undefined && { port }),
    ...(f.path && { path: pathModifier(f.path)! }),
    statusCode: (f.statusCode ?? 302) as RedirectIR["statusCode"],
  };
}
