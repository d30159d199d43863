/**
 * The build stage: the snapshot translated (reusing each unchanged Gateway's IR, reuse.ts) and
 * every Gateway planned (plan-stage.ts), with the configs the proxies refused kept out
 * (isolation.ts). Its output is what the push and status stages read: the plans, why a Gateway
 * could not be planned, and the translator's status results.
 */
import type { ClientCredentials } from "../proxies";
import type { ManagementSecretData } from "../workload";
import { DEFAULT_CONTROLLER_PEERS } from "../workload";
import { caddySourceMap } from "../caddy";
import { fragmentCounts } from "../caddy/render-memo";
import { DEFAULT_PROXY_FLAVOR } from "../flavor/proxy-flavor";
import type { GatewayIR } from "../ir";
import { fleetMetrics } from "../metrics/fleet";
import { CONTROLLER_NAME } from "../ownership";
import type { Authority } from "../pki/pki";
import type { ProxySettings } from "../provision";
import type { Snapshot } from "../snapshot";
import { RefusedObject, StatusResults, translate } from "../translate";
import type { Isolation, IsolationDeps } from "./isolation";
import type { Logger } from "./logger";
import { GatewayPlan, planGateway, sealedRenders } from "./plan";
import { planStage } from "./plan-stage";
import { IncrementalTranslator } from "./reuse";
import { IngressStage, splitIngressStatuses } from "./ingress-stage";
import { RetiredFleet, retiredFleets } from "./retired-fleets";
import type { FieldProblem } from "../validation/regex";

export interface BuildStageDeps {
  /** Proxy settings before any KengineParameters apply. */
  readonly defaults: ProxySettings;
  /** The controller's namespace (its pods reach the proxies' management port). */
  readonly namespace: string;
  readonly log: Pick<Logger, "warn" | "error">;
  /** Objects the proxies refused: left out of translation, their configs never pushed again. */
  readonly isolation: Pick<Isolation, "refused" | "gate" | "retain">;
  /** Port of the HTTPS listeners made for Ingress `tls` entries (443 when unset). */
  readonly ingressHttpsPort?: number;
}

/** The admin CA as a build reads it. */
export interface BuildCa {
  readonly signing: Authority;
  /** Every CA the proxies must trust for client certificates (a CA rotation: two). */
  readonly trusted: readonly string[];
}

export interface BuildInput {
  readonly snapshot: Snapshot;
  /** Whether anything translation reads changed since the last build (informer.ts). */
  readonly translate: boolean;
  readonly ca: BuildCa;
  readonly now: Date;
  /** Called once the translation is done (the build's phase timings). */
  readonly translated?: () => void;
}

export interface BuildOutput {
  /** The translator's status results (Programmed and addresses are the fleet's: status-stage.ts). */
  readonly statuses: StatusResults;
  /** The snapshot translated: the input with the Ingresses' synthetic objects (ingress-stage.ts). */
  readonly derived: Snapshot;
  /** Each Gateway's plan, in translation order, gated by isolation. */
  readonly plans: GatewayPlan[];
  /** Why a Gateway could not be planned, by `namespace/name`. */
  readonly planFailures: ReadonlyMap<string, string>;
  /** The Secrets the plans read (their data is kept: informer.ts `planned`). */
  readonly secrets: ReadonlySet<string>;
  /** The admin channel of each Gateway with its own proxies' credentials. */
  readonly channels: ReadonlyMap<string, ClientCredentials>;
  /** Gateways translated anew and kept from the last build; sealed configs rendered. */
  readonly counts: {
    readonly translated: number;
    readonly reused: number;
    readonly rendered: number;
  };
  /** Route entries rendered again vs kept from an earlier build (caddy/render-memo.ts). */
  readonly entries: { readonly rendered: number; readonly reused: number };
  /**
   * Each Ingress of our classes (`namespace/name`) with what could not be served of it, with
   * its own field paths (empty: all served); reported on the Ingress as Events.
   */
  readonly ingresses: ReadonlyMap<string, readonly FieldProblem[]>;
  /** The Gateway (`namespace/name`) serving each Ingress of our classes that names one. */
  readonly ingressTargets: ReadonlyMap<string, string>;
  /** Ingresses converted anew by this build (ingress-stage.ts). */
  readonly ingressesConverted: number;
  /** Each of our IngressClasses with what is wrong with its parameters ("": nothing). */
  readonly ingressClasses: ReadonlyMap<string, string>;
  /** Fleets of IngressClasses no class wants any more, to delete (retired-fleets.ts). */
  readonly retiredFleets: readonly RetiredFleet[];
}

export class BuildStage {
  /** Each Gateway's IR kept while its translation is unchanged, so it is not rendered again. */
  readonly #translator = new IncrementalTranslator();
  /**
   * The last translation, reused while no event changed what translate() reads (it never
   * reads status): builds that only follow proxy pushes or our own status writes coming
   * back skip the full translation.
   */
  #translation: ReturnType<typeof translate> | undefined;
  /** Serving data this replica made for a Gateway and has not yet seen in the snapshot. */
  readonly #pendingServing = new Map<string, ManagementSecretData>();
  readonly #ingress: IngressStage;
  #lastDerived: { input: Snapshot; derived: ReturnType<IngressStage["derive"]> } | undefined;
  /** The last retired-fleet search, kept while the Services, Gateways and fleets are the same. */
  #lastRetired:
    | { services: object; gateways: object; fleets: string; found: readonly RetiredFleet[] }
    | undefined;

  constructor(private readonly d: BuildStageDeps) {
    this.#ingress = new IngressStage(d.ingressHttpsPort);
  }

  #retired(s: Snapshot, fleets: ReadonlySet<string>): readonly RetiredFleet[] {
    const key = [...fleets].sort().join(" ");
    const last = this.#lastRetired;
    if (
      last?.services === s.objects.Service &&
      last.gateways === s.objects.Gateway &&
      last.fleets === key
    )
      return last.found;
    const found = retiredFleets(s, fleets);
    this.#lastRetired = {
      services: s.objects.Service,
      gateways: s.objects.Gateway,
      fleets: key,
      found,
    };
    return found;
  }

  /** The snapshot with the Ingresses' synthetic objects (ingress-stage.ts), once per input. */
  #derive(input: Snapshot): ReturnType<IngressStage["derive"]> {
    if (this.#lastDerived?.input !== input)
      this.#lastDerived = { input, derived: this.#ingress.derive(input) };
    return this.#lastDerived.derived;
  }

  run(input: BuildInput): BuildOutput {
    const { ca, now } = input;
    const derived = this.#derive(input.snapshot);
    const snapshot = derived.snapshot;
    const counts = { translated: 0, reused: 0, rendered: 0 };
    if (input.translate || !this.#translation) {
      const started = performance.now();
      // An unchanged Gateway keeps its IR object: its sealed config is reused (plan.ts).
      const t = this.#translator.translate(snapshot, {
        controllerName: CONTROLLER_NAME,
        refused: this.d.isolation.refused(),
      });
      this.#translation = t.result;
      counts.translated = t.translated;
      counts.reused = t.reused;
      fleetMetrics.translated((performance.now() - started) / 1000);
    }
    input.translated?.();
    const rendersBefore = sealedRenders();
    const entriesBefore = fragmentCounts();
    const { gateways } = this.#translation;
    const split = splitIngressStatuses(this.#translation.statuses, snapshot);
    const ingresses = new Map<string, FieldProblem[]>();
    for (const ingress of derived.ours)
      ingresses.set(ingress, [
        ...(derived.problems.get(ingress) ?? []),
        ...(split.problems.get(ingress) ?? []),
      ]);
    // Each Gateway planned on its own; a proxy pod serves one Gateway (plan-stage.ts).
    const { plans, failures } = planStage({
      gateways,
      plan: ir => {
        const key = `${ir.namespace}/${ir.name}`;
        const plan = this.#plan(ir, snapshot, ca, now);
        if (plan.serving) this.#pendingServing.set(key, plan.serving);
        else this.#pendingServing.delete(key);
        return plan;
      },
      createdAt: key => snapshot.objects.Gateway.get(key)?.metadata.creationTimestamp ?? "",
      log: this.d.log,
    });
    for (const key of [...this.#pendingServing.keys()])
      if (!plans.some(p => p.key === key)) this.#pendingServing.delete(key);
    // A config the proxies refused is never pushed again (isolation.ts).
    const isolation = this.d.isolation;
    for (const [i, plan] of plans.entries()) plans[i] = isolation.gate(plan);
    isolation.retain(new Set(plans.map(p => p.key)), r =>
      snapshot.objects[r.kind === "Listener" ? "Gateway" : r.kind].has(`${r.namespace}/${r.name}`),
    );
    counts.rendered = sealedRenders() - rendersBefore;
    const entriesAfter = fragmentCounts();
    return {
      derived: snapshot,
      statuses: split.statuses,
      ingresses,
      ingressesConverted: derived.converted,
      ingressTargets: derived.targets,
      ingressClasses: derived.classProblems,
      retiredFleets: this.#retired(snapshot, derived.fleets),
      plans,
      planFailures: failures,
      secrets: new Set(plans.flatMap(p => p.secrets)),
      channels: new Map(
        plans.flatMap(p => (p.channel ? [[p.channel.key, p.channel.credentials] as const] : [])),
      ),
      counts,
      entries: {
        rendered: entriesAfter.rendered - entriesBefore.rendered,
        reused: entriesAfter.reused - entriesBefore.reused,
      },
    };
  }

  /**
   * A Gateway's sealed config as it would be pushed now, with `refused` left out, and the
   * objects it is made of (for the culprit search; isolation.ts).
   */
  configOf(
    snapshot: Snapshot,
    ca: BuildCa,
    gateway: string,
    refused: readonly RefusedObject[],
  ): ReturnType<IsolationDeps["configOf"]> {
    snapshot = this.#derive(snapshot).snapshot;
    const t = translate(snapshot, { controllerName: CONTROLLER_NAME, refused, candidates: true });
    const ir = t.gateways.find(g => `${g.namespace}/${g.name}` === gateway);
    if (!ir) return undefined;
    const config = this.#plan(ir, snapshot, ca, new Date()).targets[0]?.config;
    return (
      config && {
        hash: config.hash,
        bytes: config.bytes,
        candidates: t.candidates?.get(gateway) ?? [],
        // Which object made what Caddy's errors name (same IR, same layout as the push).
        sources: caddySourceMap(ir),
        validates: (ir.flavor ?? DEFAULT_PROXY_FLAVOR) === "Bundled",
      }
    );
  }

  #plan(ir: GatewayIR, snapshot: Snapshot, ca: BuildCa, now: Date): ReturnType<typeof planGateway> {
    return planGateway({
      ir,
      snapshot,
      ca: ca.signing,
      trustedCaPems: ca.trusted,
      defaults: this.d.defaults,
      now,
      pendingServing: this.#pendingServing.get(`${ir.namespace}/${ir.name}`),
      controller: { ...DEFAULT_CONTROLLER_PEERS, namespace: this.d.namespace },
    });
  }
}
