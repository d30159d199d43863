/**
 * The Ingresses of our classes fed into translation (docs/ingress.md): before each build the
 * snapshot gains the synthetic HTTPRoutes and ListenerSets each Ingress converts into
 * (ingress/convert.ts), so they are served by the Gateway the IngressClass names with the same
 * isolation as routes. A bad Ingress converts to nothing and its problems are reported on it;
 * its neighbours are untouched. Only a changed Ingress is converted again: each conversion is
 * kept with the Ingress object, its target and the Services it looked up. Status results of
 * synthetic objects are not written (the objects do not exist in the API): their failed
 * conditions become problems of their Ingress. A class whose parameters name KengineParameters
 * gets a Gateway and GatewayClass of its own in the snapshot too (ingress/fleet.ts), and what is
 * wrong with a class's parameters is reported on the IngressClass.
 */
import type { V1Ingress, V1IngressClass, V1Service } from "@kubernetes/client-node";
import { INGRESS_CONTROLLER, classOf, readsNginxAnnotations, servingOf } from "../ingress/classes";
import { FleetObjects, fleetGatewayName, fleetObjects, isFleetObject } from "../ingress/fleet";
import { isIngressObject, markIngressObject } from "../ingress/synthetic";
import { splitCanaryWeights } from "../ingress/canary";
import { Conversion, convertIngress } from "../ingress/convert";
import { sourceIngress } from "../ingress/source";
import { Kind, KubeObject, Snapshot, applyAll, keyOf } from "../snapshot";
import type { StatusResults } from "../translate";
import type { FieldProblem } from "../validation/regex";
import {
  ACME_LISTENERSET_MESSAGE,
  INGRESS_ACME_ANNOTATION,
  acmeIssuerOf,
  markIngressAcmeListener,
} from "../validation/acme";

interface Kept {
  readonly ingress: KubeObject;
  readonly target: string;
  /** Whether the class read the ingress-nginx annotations. */
  readonly nginx: boolean;
  /** The class's ACME issuer annotation (validation/acme.ts INGRESS_ACME_ANNOTATION). */
  readonly acmeIssuer: string | undefined;
  /** The Services the conversion looked up, as they were (undefined: absent). */
  readonly services: ReadonlyMap<string, KubeObject | undefined>;
  readonly conversion: Conversion;
}

export interface IngressDerived {
  /** The snapshot with the synthetic objects added (the input itself when there are none). */
  readonly snapshot: Snapshot;
  /** Problems per Ingress (`namespace/name`) of our classes, with the Ingress's field paths. */
  readonly problems: ReadonlyMap<string, readonly FieldProblem[]>;
  /** Ingresses converted anew by this call (the others were kept). */
  readonly converted: number;
  /** Every Ingress of our classes (`namespace/name`), served or not. */
  readonly ours: ReadonlySet<string>;
  /** The Gateway (`namespace/name`) serving each Ingress whose class names one. */
  readonly targets: ReadonlyMap<string, string>;
  /** Each of our IngressClasses with what is wrong with its parameters ("": nothing). */
  readonly classProblems: ReadonlyMap<string, string>;
  /** The Gateways (`namespace/name`) of the classes' own fleets (ingress/fleet.ts). */
  readonly fleets: ReadonlySet<string>;
}

const SYNTHETIC_KINDS = ["HTTPRoute", "ListenerSet", "Gateway", "GatewayClass"] as const;

/** A class's fleet (ingress/fleet.ts), kept while the class object stays the same. */
interface Fleet {
  readonly cls: KubeObject;
  readonly objects: FleetObjects;
}

/** A creationTimestamp as the API sends it (a Date once a client has parsed it). */
const timestamp = (t: unknown): string => (t instanceof Date ? t.toISOString() : String(t ?? ""));

/**
 * Whether a conversion of `a` holds for `b`: the same object, or the same spec generation and
 * metadata the converter reads (a status-only update, such as our own status.loadBalancer
 * write coming back, converts nothing again).
 */
const sameSource = (a: KubeObject, b: KubeObject): boolean => {
  if (a === b) return true;
  const m = (o: KubeObject) =>
    o.metadata.generation === undefined
      ? undefined
      : JSON.stringify([
          o.metadata.uid,
          o.metadata.generation,
          o.metadata.creationTimestamp,
          o.metadata.annotations ?? {},
        ]);
  const ma = m(a);
  return ma !== undefined && ma === m(b);
};

/**
 * Whether an Ingress is on its way out: its own deletion or its namespace's has begun. Such an
 * Ingress is served no more (as if deleted): its backends are going with it, and while it
 * lingers it would still win precedence over a newer Ingress for the same host or catch-all by
 * age (docs/ingress.md, "Conformance").
 */
const beingDeleted = (s: Snapshot, o: KubeObject): boolean =>
  o.metadata.deletionTimestamp !== undefined ||
  s.objects.Namespace.get(o.metadata.namespace ?? "")?.metadata.deletionTimestamp !== undefined;

export class IngressStage {
  #kept = new Map<string, Kept>();
  /** The derived maps, reused while their inputs are the same objects (translation caches). */
  #derived:
    | {
        readonly base: readonly object[];
        readonly objects: Pick<Snapshot["objects"], (typeof SYNTHETIC_KINDS)[number]>;
        /** Parts left out because a real object has their name, by Ingress. */
        readonly collisions: ReadonlyMap<string, readonly FieldProblem[]>;
      }
    | undefined;

  /** Fleets by IngressClass name (classes served by KengineParameters). */
  #fleets = new Map<string, Fleet>();

  constructor(private readonly httpsPort?: number) {}

  /**
   * The fleets of our classes served by KengineParameters, made anew only for a changed class;
   * a fleet whose Gateway's name a real Gateway has is left out (its Ingresses say so). With
   * them, what is wrong with each of our classes' parameters (`problems`: "" for a class whose
   * parameters resolve), reported on the IngressClass.
   */
  #fleetsOf(s: Snapshot): { fleets: Map<string, Fleet>; problems: Map<string, string> } {
    const fleets = new Map<string, Fleet>();
    const problems = new Map<string, string>();
    for (const object of s.objects.IngressClass.values()) {
      const cls = object as unknown as V1IngressClass;
      if (cls.spec?.controller !== INGRESS_CONTROLLER) continue;
      const name = object.metadata.name;
      const serving = servingOf(cls);
      problems.set(name, serving.kind === "Invalid" ? serving.reason : "");
      if (serving.kind !== "KengineParameters") continue;
      const gateway = `${serving.namespace}/${fleetGatewayName(name)}`;
      if (s.objects.Gateway.has(gateway)) {
        problems.set(
          name,
          `a Gateway ${gateway} already exists, so the class's own proxies cannot be made (rename or delete that Gateway)`,
        );
        continue;
      }
      if (!s.objects.KengineParameters.has(`${serving.namespace}/${serving.name}`))
        problems.set(
          name,
          `spec.parameters: KengineParameters ${serving.namespace}/${serving.name} not found: the class's proxies use the defaults`,
        );
      const before = this.#fleets.get(name);
      fleets.set(
        name,
        before?.cls === object ? before : { cls: object, objects: fleetObjects(cls, serving) },
      );
    }
    return { fleets, problems };
  }

  derive(s: Snapshot): IngressDerived {
    const classes = [...s.objects.IngressClass.values()] as unknown as V1IngressClass[];
    const { fleets, problems: classProblems } = this.#fleetsOf(s);
    const next = new Map<string, Kept>();
    const problems = new Map<string, FieldProblem[]>();
    const ours = new Set<string>();
    const targets = new Map<string, string>();
    let converted = 0;
    for (const object of s.objects.Ingress.values()) {
      if (beingDeleted(s, object)) continue;
      const ingress = object as unknown as V1Ingress;
      const cls = classOf(ingress, classes);
      if (!cls) continue;
      const key = keyOf(object);
      ours.add(key);
      const serving = servingOf(cls);
      if (serving.kind === "Invalid") {
        problems.set(key, [{ path: "spec.ingressClassName", value: "", message: serving.reason }]);
        continue;
      }
      const gateway =
        serving.kind === "Gateway"
          ? serving
          : { namespace: serving.namespace, name: fleetGatewayName(cls.metadata?.name ?? "") };
      if (serving.kind === "KengineParameters" && !fleets.has(cls.metadata?.name ?? "")) {
        const message = `IngressClass ${cls.metadata?.name ?? ""}: a Gateway ${gateway.namespace}/${gateway.name} already exists, so the class's own proxies cannot be made (rename or delete that Gateway)`;
        problems.set(key, [{ path: "spec.ingressClassName", value: "", message }]);
        continue;
      }
      const target = `${gateway.namespace}/${gateway.name}`;
      targets.set(key, target);
      const nginx = readsNginxAnnotations(cls);
      const acmeIssuer = cls.metadata?.annotations?.[INGRESS_ACME_ANNOTATION] || undefined;
      const before = this.#kept.get(key);
      const reusable =
        before !== undefined &&
        sameSource(before.ingress, object) &&
        before.target === target &&
        before.nginx === nginx &&
        before.acmeIssuer === acmeIssuer &&
        [...before.services].every(([k, svc]) => s.objects.Service.get(k) === svc);
      let kept: Kept;
      if (reusable) kept = before;
      else {
        const services = new Map<string, KubeObject | undefined>();
        const conversion = convertIngress(
          ingress,
          {
            gateway: { namespace: gateway.namespace, name: gateway.name },
            httpsPort: this.httpsPort,
            nginxAnnotations: nginx,
            ...(acmeIssuer && { acmeIssuer }),
          },
          (namespace, name) => {
            const k = `${namespace}/${name}`;
            const svc = s.objects.Service.get(k);
            services.set(k, svc);
            return svc as unknown as V1Service | undefined;
          },
        );
        kept = { ingress: object, target, nginx, acmeIssuer, services, conversion };
        converted++;
      }
      next.set(key, kept);
      if (kept.conversion.problems.length > 0) problems.set(key, [...kept.conversion.problems]);
    }
    const changed =
      next.size !== this.#kept.size ||
      [...next].some(([k, v]) => this.#kept.get(k)?.conversion !== v.conversion) ||
      fleets.size !== this.#fleets.size ||
      [...fleets].some(([k, v]) => this.#fleets.get(k) !== v);
    this.#kept = next;
    this.#fleets = fleets;
    if (next.size === 0 && fleets.size === 0) {
      this.#derived = undefined;
      return { snapshot: s, problems, converted, ours, targets, classProblems, fleets: new Set() };
    }
    const base = SYNTHETIC_KINDS.map(k => s.objects[k]);
    if (changed || !this.#derived || this.#derived.base.some((m, i) => m !== base[i])) {
      const collisions = new Map<string, FieldProblem[]>();
      this.#derived = {
        base,
        objects: this.#synthetic(s, next, fleets, collisions),
        collisions,
      };
    }
    for (const [key, found] of this.#derived.collisions)
      problems.set(key, [...(problems.get(key) ?? []), ...found]);
    return {
      snapshot: { ...s, objects: { ...s.objects, ...this.#derived.objects } },
      problems,
      converted,
      ours,
      targets,
      classProblems,
      fleets: new Set([...fleets.values()].map(f => keyOf(f.objects.gateway))),
    };
  }

  /**
   * The HTTPRoute, ListenerSet, Gateway and GatewayClass maps with every conversion and fleet
   * added; a real object wins.
   */
  #synthetic(
    s: Snapshot,
    kept: ReadonlyMap<string, Kept>,
    fleets: ReadonlyMap<string, Fleet>,
    problems: Map<string, FieldProblem[]>,
  ): Pick<Snapshot["objects"], (typeof SYNTHETIC_KINDS)[number]> {
    const events: { type: "upsert"; kind: Kind; object: KubeObject }[] = [];
    for (const { objects } of fleets.values())
      events.push(
        { type: "upsert", kind: "GatewayClass", object: objects.gatewayClass },
        { type: "upsert", kind: "Gateway", object: objects.gateway },
      );
    const split = splitCanaryWeights(
      [...kept].map(([key, { ingress, target, conversion }]) => ({
        key,
        namespace: ingress.metadata.namespace ?? "",
        target,
        createdAt: timestamp(ingress.metadata.creationTimestamp),
        httpRoutes: conversion.httpRoutes,
        canary: conversion.canary === true,
        ...(conversion.canaryWeight && { canaryWeight: conversion.canaryWeight }),
      })),
    );
    for (const [key, found] of split.problems) problems.set(key, [...found]);
    claimAcmeHosts(kept, problems);
    for (const [key, { conversion }] of kept) {
      const objects: [Kind, KubeObject][] = [
        ...conversion.httpRoutes.map(
          o => ["HTTPRoute", split.routes.get(o) ?? o] as [Kind, KubeObject],
        ),
        ...conversion.listenerSets.map(o => ["ListenerSet", o] as [Kind, KubeObject]),
      ];
      for (const [kind, object] of objects) {
        if (s.objects[kind].has(keyOf(object))) {
          const list = problems.get(key) ?? [];
          list.push({
            path: "metadata.name",
            value: object.metadata.name,
            message: `a ${kind} of that name already exists: this part of the Ingress is not served`,
          });
          problems.set(key, list);
          continue;
        }
        markIngressObject(object);
        events.push({ type: "upsert", kind, object });
      }
    }
    const derived = applyAll(s, events).snapshot;
    return {
      HTTPRoute: derived.objects.HTTPRoute,
      ListenerSet: derived.objects.ListenerSet,
      Gateway: derived.objects.Gateway,
      GatewayClass: derived.objects.GatewayClass,
    };
  }
}

/**
 * Which Ingress listeners with an ACME issuer may be ordered for and answered (docs/ingress.md,
 * "Automatic HTTPS"): per Gateway and host, the oldest Ingress (then namespace/name, the
 * precedence routes use) wins; another namespace's Ingress asking for the same host is
 * reported and its listener left unmarked, so it gets neither an order nor an HTTP-01 answer.
 * Ingresses of the winner's namespace share its certificate.
 */
function claimAcmeHosts(
  kept: ReadonlyMap<string, Kept>,
  problems: Map<string, FieldProblem[]>,
): void {
  const ordered = [...kept].sort(([ka, a], [kb, b]) => {
    const ta = timestamp(a.ingress.metadata.creationTimestamp);
    const tb = timestamp(b.ingress.metadata.creationTimestamp);
    return ta !== tb ? (ta < tb ? -1 : 1) : ka < kb ? -1 : ka > kb ? 1 : 0;
  });
  const owner = new Map<string, { namespace: string; key: string }>();
  for (const [key, { ingress, target, conversion }] of ordered) {
    const namespace = ingress.metadata.namespace ?? "";
    for (const ls of conversion.listenerSets)
      for (const l of ls.spec.listeners) {
        if (acmeIssuerOf(l) === undefined || !l.hostname) continue;
        const claim = `${target}\n${l.hostname.toLowerCase()}`;
        const first = owner.get(claim);
        if (first === undefined) owner.set(claim, { namespace, key });
        const granted = first === undefined || first.namespace === namespace;
        markIngressAcmeListener(l, granted);
        if (granted) continue;
        const list = problems.get(key) ?? [];
        list.push({
          path: "spec.tls",
          value: l.hostname,
          message: `host ${l.hostname} already has an automatic certificate for the older Ingress ${first.key}: not ordered for this one`,
        });
        problems.set(key, list);
      }
  }
}

const NEGATIVE_CONDITIONS = new Set(["Conflicted", "OverlappingTLSConfig", "PartiallyInvalid"]);

/**
 * The status results without synthetic objects (nothing to write: they exist only here), and
 * their failed conditions as problems of the Ingress they came from, keyed `namespace/name`.
 */
export function splitIngressStatuses(
  statuses: StatusResults,
  snapshot: Snapshot,
): { statuses: StatusResults; problems: Map<string, FieldProblem[]> } {
  const problems = new Map<string, FieldProblem[]>();
  const report = (o: KubeObject | undefined, at: FieldProblem[]): boolean => {
    // Made by the stage (identity): a tenant's object wearing its label is reported as itself.
    const source = isIngressObject(o) && sourceIngress(o!);
    if (!source) return false;
    const key = `${source.namespace}/${source.name}`;
    problems.set(key, [...(problems.get(key) ?? []), ...at]);
    return true;
  };
  // Conflicted, OverlappingTLSConfig and PartiallyInvalid are negative: "True" is the failure.
  const failed = (
    conditions: readonly { type: string; status: string; reason: string; message: string }[],
  ): FieldProblem[] =>
    conditions
      .filter(c =>
        NEGATIVE_CONDITIONS.has(c.type)
          ? c.status === "True"
          : c.status === "False" && c.type !== "Programmed",
      )
      .map(c => ({ path: "spec", value: c.reason, message: c.message }));
  const routes = statuses.routes.filter(
    r =>
      r.kind !== "HTTPRoute" ||
      !report(
        snapshot.objects.HTTPRoute.get(`${r.namespace}/${r.name}`),
        r.parents.flatMap(p => failed(p.conditions)),
      ),
  );
  const listenerSets = statuses.listenerSets.filter(
    l =>
      !report(snapshot.objects.ListenerSet.get(`${l.namespace}/${l.name}`), [
        ...failed(l.conditions),
        ...l.listeners.flatMap(x =>
          [
            // A listener the stage did not grant its host says so itself ("older Ingress"):
            // the translator's refusal of a ListenerSet's ACME listener would only repeat it.
            ...failed(x.conditions).filter(p => p.message !== ACME_LISTENERSET_MESSAGE),
            // Automatic HTTPS waiting for its certificate (translate/acme.ts): said too.
            ...x.conditions
              .filter(
                c => c.type === "Programmed" && c.status === "False" && c.reason === "Pending",
              )
              .map(c => ({ path: "spec", value: c.reason, message: c.message })),
          ].map(p => ({ ...p, path: `spec.tls (${x.name})` })),
        ),
      ]),
  );
  // A class's own GatewayClass exists only here too (ingress/fleet.ts). Its Gateway's result
  // stays: the status stage decides its addresses (the Ingresses' status.loadBalancer) from
  // it, and writes nothing for an object the API does not have.
  const gatewayClasses = statuses.gatewayClasses.filter(
    c => !isFleetObject(snapshot.objects.GatewayClass.get(c.name)),
  );
  if (
    routes.length === statuses.routes.length &&
    listenerSets.length === statuses.listenerSets.length &&
    gatewayClasses.length === statuses.gatewayClasses.length
  )
    return { statuses, problems };
  return {
    statuses: { ...statuses, routes, listenerSets, gatewayClasses },
    problems,
  };
}
