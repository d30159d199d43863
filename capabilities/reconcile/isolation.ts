/**
 * Failure isolation: when a Gateway's proxies refuse its config, find the objects they refuse
 * and leave only those out (translate(snapshot, { refused })), so the rest of the Gateway is
 * programmed and each refused object says why in its own status.
 *
 * - A push the proxy refused (HTTP 400 from /load) queues one culprit search for that config
 *   hash; searches run one at a time, off the build path. First the proxy's error is traced
 *   through the config's source map (caddy/load-errors.ts, caddy/config.ts caddySourceMap) to the
 *   object(s) that made the part it names.
 * - Stock Caddy and Kengine (no validation route): the traced objects are the culprits. Caddy's
 *   /load is all or nothing (the proxy keeps running its old config), so the config without
 *   them is simply pushed next; if that is refused too, its error is traced the same way, at
 *   most MAX_TRACES times in a row before a push is accepted. An error traced to no object
 *   stays the Gateway's (Programmed=False with the proxy's error; the push engine retries).
 * - Bundled proxies validate with our validation-only admin route (nothing they serve
 *   changes): the config without the traced objects must validate (one validation per traced
 *   error); when the error maps to no object, or that validation fails, the culprits are
 *   found by bisection (culprits.ts).
 * - A refusal traced to objects, or one the validation confirms (the whole config is refused
 *   without being started), marks the config hash refused: it is never pushed again; the Gateway's proxies keep (and
 *   new proxies get) the last config one of them accepted, and the Gateway says why. A refusal
 *   validation does not confirm (a port in use when the proxy starts its servers) is not the
 *   config's fault: nothing is marked and the push engine retries as before.
 * - Refusals of objects that are deleted (or whose Gateway is) are dropped; a changed object
 *   has another fingerprint, so the translator no longer leaves it out (refused.ts).
 */
import { AdminError, FleetEvent, ProxyEndpoint, Result, Target, Validation } from "../proxies";
import type { CaddySourceMap, SealedConfig } from "../caddy";
import { RefusableObject, RefusedObject, identityOf } from "../translate";
import { CulpritResult, DEFAULT_MAX_VALIDATIONS, findCulprits } from "./culprits";
import { sourcesOfError } from "../caddy/load-errors";

/** What a search needs from the rest of the controller, for one Gateway. */
export interface IsolationDeps {
  /**
   * The Gateway's current config with `refused` left out (sealed bytes as pushed) and what it
   * is made of; undefined when the Gateway has no config any more.
   */
  readonly configOf: (
    gateway: string,
    refused: readonly RefusedObject[],
  ) =>
    | {
        readonly hash: string;
        readonly bytes: Buffer;
        readonly candidates: readonly RefusableObject[];
        /** Who made which part of the config (caddy/config.ts caddySourceMap). */
        readonly sources?: CaddySourceMap;
        /** The proxies have the validation-only route (Bundled flavour); default true. */
        readonly validates?: boolean;
      }
    | undefined;
  readonly validate: (
    endpoint: ProxyEndpoint,
    config: Buffer,
  ) => Promise<Result<Validation, AdminError>>;
  /** Refusals changed: translate again. */
  readonly onChange: () => void;
  readonly log: (message: string, meta: Record<string, unknown>) => void;
  readonly maxValidations?: number;
}

/** What the stage changes in a Gateway's plan. */
export interface GatedPlan {
  readonly key: string;
  readonly targets: readonly Target[];
  readonly desiredHash: string | undefined;
  readonly configProblem: string | undefined;
}

/** Refused config hashes remembered per Gateway (oldest forgotten first). */
const REFUSED_HASHES_KEPT = 32;

/** Refusals traced without validation in a row, per Gateway, before one push is accepted. */
export const MAX_TRACES = 16;

interface Search {
  readonly gateway: string;
  readonly hash: string;
  readonly message: string;
  readonly endpoint: ProxyEndpoint;
}

export class Isolation {
  readonly #refused = new Map<string, readonly RefusedObject[]>();
  /** Per Gateway: config hash → the proxy's error, for refusals validation confirmed. */
  readonly #refusedHashes = new Map<string, Map<string, string>>();
  /** Per Gateway: config hashes searched or queued (one search per refused config). */
  readonly #searched = new Map<string, Set<string>>();
  /** Per Gateway: the configs handed to the fleet lately, by hash, and the last one accepted. */
  readonly #offered = new Map<string, Map<string, SealedConfig>>();
  readonly #lastGood = new Map<string, SealedConfig>();
  /** Per Gateway: the outcome of its last search, for the Gateway's message. */
  readonly #verdict = new Map<string, string>();
  /** Per Gateway: refusals traced without validation since a push was last accepted. */
  readonly #traces = new Map<string, number>();
  readonly #queue: Search[] = [];
  #running: Promise<void> | undefined;
  #stopped = false;

  constructor(private readonly deps: IsolationDeps) {}

  /** Every refusal, for translate(). */
  refused(): readonly RefusedObject[] {
    return [...this.#refused.values()].flat();
  }

  /**
   * The plan as pushed: a config known to be refused is replaced by the last one the proxies
   * accepted (or by nothing new, if none), and the Gateway says why.
   */
  gate<P extends GatedPlan>(plan: P): P {
    const refusal = plan.desiredHash && this.#refusedHashes.get(plan.key)?.get(plan.desiredHash);
    if (!refusal) {
      const offered = this.#offered.get(plan.key) ?? new Map<string, SealedConfig>();
      for (const t of plan.targets) offered.set(t.config.hash, t.config);
      while (offered.size > 4) offered.delete(offered.keys().next().value!);
      this.#offered.set(plan.key, offered);
      return plan;
    }
    const good = this.#lastGood.get(plan.key);
    const verdict = this.#verdict.get(plan.key);
    return {
      ...plan,
      targets: good ? plan.targets.map(t => ({ ...t, config: good })) : [],
      configProblem: `the proxies refused the configuration${verdict ? ` (${verdict})` : ""}: ${refusal}`,
    };
  }

  /** Sees every push-engine event with the proxy's Gateway ("namespace/name"). */
  observe(e: FleetEvent, gateway: string | undefined, endpoint: ProxyEndpoint | undefined): void {
    if (!gateway || this.#stopped) return;
    if (e.type === "pushed" || e.type === "adopted") {
      const config = this.#offered.get(gateway)?.get(e.hash);
      if (config) this.#lastGood.set(gateway, config);
      this.#traces.delete(gateway);
      return;
    }
    if (e.type !== "failed" || e.error.kind !== "rejected" || e.error.status !== 400) return;
    const searched = this.#searched.get(gateway) ?? new Set<string>();
    // known: another proxy of the Gateway said the same, or a retry of the same config
    if (searched.has(e.hash) || !endpoint) return;
    searched.add(e.hash);
    while (searched.size > REFUSED_HASHES_KEPT) searched.delete(searched.values().next().value!);
    this.#searched.set(gateway, searched);
    this.#queue.push({ gateway, hash: e.hash, message: e.error.message, endpoint });
    this.#next();
  }

  /** Drops what belongs to Gateways and objects that no longer exist. */
  retain(gateways: ReadonlySet<string>, exists: (o: RefusedObject) => boolean): void {
    for (const map of [
      this.#refusedHashes,
      this.#searched,
      this.#offered,
      this.#lastGood,
      this.#verdict,
      this.#traces,
    ])
      for (const key of [...map.keys()]) if (!gateways.has(key)) map.delete(key);
    let changed = false;
    for (const [key, list] of [...this.#refused]) {
      const kept = gateways.has(key) ? list.filter(exists) : [];
      if (kept.length === list.length) continue;
      changed = true;
      if (kept.length) this.#refused.set(key, kept);
      else this.#refused.delete(key);
    }
    if (changed) this.deps.onChange();
  }

  /** Resolves when no search runs or waits. */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  stop(): Promise<void> {
    this.#stopped = true;
    this.#queue.length = 0;
    return this.idle();
  }

  #next(): void {
    if (this.#running || this.#stopped) return;
    const job = this.#queue.shift();
    if (!job) return;
    this.#running = this.#search(job)
      .catch(e =>
        this.deps.log("culprit search failed", { gateway: job.gateway, error: String(e) }),
      )
      .finally(() => {
        this.#running = undefined;
        this.#next();
      });
  }

  async #search(job: Search): Promise<void> {
    const before = this.#refused.get(job.gateway) ?? [];
    const current = this.deps.configOf(job.gateway, before);
    if (!current) return;
    const byId = new Map(current.candidates.map(c => [identityOf(c), c]));
    // The source map describes the refused config only if that is the current one.
    const first = current.hash === job.hash ? tracedIn(current, job.message) : [];
    let result: CulpritResult<RefusableObject>;
    if (current.validates === false) {
      const count = this.#traces.get(job.gateway) ?? 0;
      if (first.length === 0 || count >= MAX_TRACES) {
        this.deps.log("culprit search", {
          gateway: job.gateway,
          result: "untraced",
          ...(count >= MAX_TRACES && { traces: count }),
          message: job.message,
        });
        return;
      }
      this.#traces.set(job.gateway, count + 1);
      result = {
        kind: "culprits",
        culprits: first.map(object => ({ object, message: job.message })),
        validations: 0,
      };
    } else {
      const without = (excluded: readonly RefusableObject[]) => {
        const config = this.deps.configOf(job.gateway, [
          ...before,
          ...excluded.map(c => refusalOf(job.gateway, c, "")),
        ]);
        return config
          ? this.deps.validate(job.endpoint, config.bytes)
          : Promise.resolve({
              ok: false as const,
              error: { message: "the Gateway has no config any more" },
            });
      };
      result =
        (first.length > 0 && (await this.#confirm(job, before, first))) ||
        (await findCulprits({
          candidates: current.candidates,
          maxValidations: this.deps.maxValidations,
          validate: without,
        }));
    }
    if (this.#stopped) return;
    this.deps.log("culprit search", {
      gateway: job.gateway,
      result: result.kind,
      validations: result.validations,
      ...(result.kind === "culprits"
        ? { culprits: result.culprits.map(c => identityOf(c.object)) }
        : result.kind !== "accepted" && { message: result.message }),
    });
    if (result.kind === "accepted" || (result.kind === "unknown" && !result.confirmed)) return;
    // Confirmed: neither this config nor the one it was searched in is pushed again.
    const hashes = this.#refusedHashes.get(job.gateway) ?? new Map<string, string>();
    for (const hash of new Set([job.hash, current.hash])) hashes.set(hash, job.message);
    while (hashes.size > REFUSED_HASHES_KEPT) hashes.delete(hashes.keys().next().value!);
    this.#refusedHashes.set(job.gateway, hashes);
    if (result.kind !== "culprits") {
      this.#verdict.set(
        job.gateway,
        result.kind === "gateway"
          ? "also with every route, ListenerSet and listener left out"
          : `no culprit found: ${result.message}`,
      );
      this.deps.onChange();
      return;
    }
    const found = result.culprits.flatMap(c => {
      const candidate = byId.get(identityOf(c.object));
      return candidate ? [refusalOf(job.gateway, candidate, c.message)] : [];
    });
    const ids = new Set(found.map(identityOf));
    this.#refused.set(job.gateway, [...before.filter(r => !ids.has(identityOf(r))), ...found]);
    this.deps.onChange();
  }

  /**
   * Bundled: the traced objects are the culprits if the config validates without them; a
   * refusal of that config traced to more objects adds them. Undefined: bisect instead.
   */
  async #confirm(
    job: Search,
    before: readonly RefusedObject[],
    traced: readonly RefusableObject[],
  ): Promise<CulpritResult<RefusableObject> | undefined> {
    const culprits = traced.map(object => ({ object, message: job.message }));
    const max = this.deps.maxValidations ?? DEFAULT_MAX_VALIDATIONS;
    for (let validations = 1; validations <= max; validations++) {
      const config = this.deps.configOf(job.gateway, [
        ...before,
        ...culprits.map(c => refusalOf(job.gateway, c.object, "")),
      ]);
      if (!config) return undefined;
      const r = await this.deps.validate(job.endpoint, config.bytes);
      if (!r.ok) return undefined;
      if (r.value.accepted) return { kind: "culprits", culprits, validations };
      const known = new Set(culprits.map(c => identityOf(c.object)));
      const message = r.value.message;
      const more = tracedIn(config, message).filter(o => !known.has(identityOf(o)));
      if (more.length === 0) return undefined;
      culprits.push(...more.map(object => ({ object, message })));
    }
    return undefined;
  }
}

/** The candidates of `config` that made the part Caddy's `message` names. */
function tracedIn(
  config: { readonly candidates: readonly RefusableObject[]; readonly sources?: CaddySourceMap },
  message: string,
): RefusableObject[] {
  if (!config.sources) return [];
  const byId = new Map(config.candidates.map(c => [identityOf(c), c]));
  return sourcesOfError(config.sources, message).flatMap(o => byId.get(identityOf(o)) ?? []);
}

const refusalOf = (gateway: string, c: RefusableObject, reason: string): RefusedObject => ({
  ...c,
  gateway,
  reason,
});
