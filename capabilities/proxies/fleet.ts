/**
 * The push engine: keeps a set of proxies running their desired (sealed) configs.
 *
 * - `update(targets)` states the whole desired set; proxies not in it are forgotten.
 * - Pushes run concurrently up to `concurrency`; a proxy whose last successful load had the
 *   same hash is skipped.
 * - Failures retry with capped exponential back-off and jitter. A config the proxy rejected
 *   keeps its message verbatim; a changed desired config is tried at once after a rejection
 *   (it may be the fix), but not after a connection failure (no retry storm at a dead pod).
 * - Any connection failure or timeout makes the proxy's running config unknown, so it is
 *   pushed again once reachable. `verify()` asks each programmed proxy (one tiny request)
 *   whether it still runs the hash it was given; a restarted proxy answers no and is
 *   re-programmed. `start(verifyIntervalMs)` runs that check periodically.
 */
import { AdminError, describeAdminError, ProxyEndpoint, RouteTableInfo } from "./admin-client";
import { backoffDelay, BackoffPolicy, Clock, DEFAULT_BACKOFF, systemClock } from "./backoff";
import { isSealed, SealedConfig } from "../caddy/seal";
import { Result } from "../result";
import {
  applyDelta,
  deltaBody,
  deltaRefusal,
  RunningTables,
  runningAfterLoad,
  TableDelta,
  tableDeltas,
} from "../caddy/table-deltas";

/** What the engine needs from the admin client (an `AdminClient`, or a wrapper that counts). */
export interface AdminApi {
  load(endpoint: ProxyEndpoint, config: Buffer, force?: boolean): Promise<Result<void, AdminError>>;
  runsConfig(endpoint: ProxyEndpoint, hash: string): Promise<Result<boolean, AdminError>>;
  /** Route-table deltas (Bundled); without them every change is a `/load`. */
  postRouteTable?(
    endpoint: ProxyEndpoint,
    id: string,
    body: string,
    ifMatch: string,
  ): Promise<Result<RouteTableInfo, AdminError>>;
  routeTables?(endpoint: ProxyEndpoint): Promise<Result<readonly RouteTableInfo[], AdminError>>;
}

/** How a config reached a proxy: a whole `/load`, or route-table deltas. */
export type PushKind = "load" | "delta";

export interface Target {
  readonly endpoint: ProxyEndpoint;
  readonly config: SealedConfig;
}

export interface Applied {
  readonly hash: string;
  /** Epoch milliseconds of the successful load. */
  readonly at: number;
}

/** One proxy's state, for KengineProxy status and the Gateway's Programmed condition. */
export type ProxyState =
  | {
      readonly phase: "Pending";
      readonly desiredHash: string;
      readonly applied: Applied | undefined;
    }
  | {
      readonly phase: "Programmed";
      readonly desiredHash: string;
      readonly hash: string;
      readonly at: number;
      readonly verifiedAt: number | undefined;
    }
  | {
      readonly phase: "Failed";
      readonly desiredHash: string;
      /** What the proxy still runs, if known (a rejected config leaves the previous one running). */
      readonly applied: Applied | undefined;
      readonly error: AdminError;
      /** One line for status: the proxy's own message for a rejection. */
      readonly message: string;
      readonly attempts: number;
      readonly since: number;
      readonly nextAttemptAt: number;
    };

export type FleetEvent =
  | {
      readonly type: "pushed";
      readonly name: string;
      readonly hash: string;
      readonly durationMs: number;
      /** Absent: a load (events made before deltas existed). */
      readonly kind?: PushKind;
      /** Deltas: the table keys sent (changed or removed). */
      readonly hosts?: number;
    }
  | { readonly type: "skipped"; readonly name: string; readonly hash: string }
  | {
      readonly type: "failed";
      readonly name: string;
      readonly hash: string;
      readonly error: AdminError;
      readonly attempts: number;
      readonly retryInMs: number;
    }
  | { readonly type: "drifted"; readonly name: string; readonly hash: string }
  | { readonly type: "adopted"; readonly name: string; readonly hash: string }
  | { readonly type: "forgotten"; readonly name: string }
  /** A push not sent because `mayPush` said no (an ex-leader never pushes). */
  | { readonly type: "withheld"; readonly name: string; readonly hash: string };

export interface FleetOptions {
  readonly client: AdminApi;
  readonly concurrency?: number;
  readonly backoff?: BackoffPolicy;
  readonly clock?: Clock;
  /** [0, 1); injected for deterministic jitter in tests. */
  readonly random?: () => number;
  readonly onEvent?: (event: FleetEvent) => void;
  /**
   * Ask a proxy new to this fleet whether it already runs the desired config before pushing, so a
   * new leader (or a restarted controller) adopts programmed proxies instead of reloading them.
   */
  readonly adoptRunning?: boolean;
  /**
   * Asked right before every POST /load (after any queueing or back-off): false withholds the
   * push (e.g. this replica is no longer the leader); it is asked again after `backoff.initialMs`.
   */
  readonly mayPush?: () => boolean;
}

interface Entry {
  endpoint: ProxyEndpoint;
  desired: SealedConfig;
  applied: Applied | undefined;
  verifiedAt: number | undefined;
  attempts: number;
  lastError: AdminError | undefined;
  failedSince: number;
  nextAttemptAt: number;
  needsVerify: boolean;
  /** New to this fleet: ask whether it already runs the desired config before pushing (a new leader adopts, not reloads). */
  probeFirst: boolean;
  inFlight: boolean;
  /** Hash of the config a push in flight is loading (undefined: none, or only a check). */
  pushing: string | undefined;
  /** The route tables the proxy runs, when known (its config has tables; caddy/table-deltas.ts). */
  running: RunningTables | undefined;
}

const sameEndpoint = (a: ProxyEndpoint, b: ProxyEndpoint): boolean =>
  a.address === b.address &&
  a.port === b.port &&
  a.serverName === b.serverName &&
  a.channel === b.channel;

const unreachable = (e: AdminError): boolean => e.kind === "connect" || e.kind === "timeout";

export class Fleet {
  readonly #client: AdminApi;
  readonly #concurrency: number;
  readonly #backoff: BackoffPolicy;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #onEvent: (event: FleetEvent) => void;
  readonly #mayPush: (() => boolean) | undefined;
  readonly #entries = new Map<string, Entry>();
  readonly #adoptRunning: boolean;
  #running = 0;
  #idleWaiters: (() => void)[] = [];
  #cancelRetryTimer: (() => void) | undefined;
  #retryTimerAt = Infinity;
  #cancelVerifyTimer: (() => void) | undefined;
  #closed = false;

  constructor(options: FleetOptions) {
    this.#client = options.client;
    this.#concurrency = Math.max(1, options.concurrency ?? 16);
    this.#backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
    this.#onEvent = options.onEvent ?? (() => undefined);
    this.#mayPush = options.mayPush;
    this.#adoptRunning = options.adoptRunning ?? false;
  }

  /** States the complete desired set (keyed by endpoint name) and starts pushing what differs. */
  update(targets: readonly Target[]): void {
    if (this.#closed) throw new Error("fleet is closed");
    const names = new Set<string>();
    for (const target of targets) {
      if (!isSealed(target.config))
        throw new Error(
          `config for ${target.endpoint.name} was not produced by sealConfig; refusing to push it`,
        );
      if (names.has(target.endpoint.name))
        throw new Error(`duplicate proxy name ${target.endpoint.name}`);
      names.add(target.endpoint.name);
      this.#upsert(target);
    }
    for (const name of [...this.#entries.keys()]) {
      if (!names.has(name)) {
        this.#entries.delete(name);
        this.#onEvent({ type: "forgotten", name });
      }
    }
    this.#pump();
  }

  #upsert({ endpoint, config }: Target): void {
    const entry = this.#entries.get(endpoint.name);
    if (!entry || !sameEndpoint(entry.endpoint, endpoint)) {
      // a new proxy, or a new pod behind the same name: nothing is known about what it runs
      this.#entries.set(endpoint.name, {
        endpoint,
        desired: config,
        applied: undefined,
        verifiedAt: undefined,
        attempts: 0,
        lastError: undefined,
        failedSince: 0,
        nextAttemptAt: 0,
        needsVerify: false,
        probeFirst: this.#adoptRunning,
        inFlight: false,
        pushing: undefined,
        running: undefined,
      });
      return;
    }
    if (entry.desired.hash === config.hash) {
      if (entry.applied?.hash === config.hash && !entry.inFlight)
        this.#onEvent({ type: "skipped", name: endpoint.name, hash: config.hash });
      entry.desired = config;
      return;
    }
    entry.desired = config;
    // a new config may fix a rejection; after an unreachable proxy, keep to the back-off schedule
    if (entry.lastError && !unreachable(entry.lastError)) {
      entry.attempts = 0;
      entry.nextAttemptAt = 0;
    }
  }

  /** Asks every programmed proxy whether it still runs its hash; re-pushes to those that do not. */
  verify(): Promise<void> {
    for (const entry of this.#entries.values())
      if (entry.applied?.hash === entry.desired.hash) entry.needsVerify = true;
    this.#pump();
    return this.settled();
  }

  /** Runs `verify()` every `intervalMs` until `close()`. */
  start(intervalMs: number): void {
    const tick = (): void => {
      if (this.#closed) return;
      void this.verify();
      this.#cancelVerifyTimer = this.#clock.setTimer(intervalMs, tick);
    };
    this.#cancelVerifyTimer?.();
    this.#cancelVerifyTimer = this.#clock.setTimer(intervalMs, tick);
  }

  /** Resolves once nothing is in flight and nothing is due now (retries may still be scheduled). */
  settled(): Promise<void> {
    if (this.#running === 0 && !this.#hasDueWork()) return Promise.resolve();
    return new Promise(resolve => this.#idleWaiters.push(resolve));
  }

  state(name: string): ProxyState | undefined {
    const entry = this.#entries.get(name);
    return entry && this.#stateOf(entry);
  }

  states(): ReadonlyMap<string, ProxyState> {
    return new Map([...this.#entries].map(([name, entry]) => [name, this.#stateOf(entry)]));
  }

  /** Stops timers and forgets every proxy; pushes in flight finish but their results are dropped. */
  close(): void {
    this.#closed = true;
    this.#cancelRetryTimer?.();
    this.#cancelVerifyTimer?.();
    this.#entries.clear();
    this.#resolveIdle();
  }

  #stateOf(entry: Entry): ProxyState {
    const desiredHash = entry.desired.hash;
    // a check in flight ("do you still run H?") leaves the proxy Programmed; a push does not
    if (entry.pushing === undefined && entry.applied?.hash === desiredHash) {
      return {
        phase: "Programmed",
        desiredHash,
        hash: entry.applied.hash,
        at: entry.applied.at,
        verifiedAt: entry.verifiedAt,
      };
    }
    if (entry.lastError && entry.attempts > 0) {
      return {
        phase: "Failed",
        desiredHash,
        applied: entry.applied,
        error: entry.lastError,
        message: describeAdminError(entry.lastError),
        attempts: entry.attempts,
        since: entry.failedSince,
        nextAttemptAt: entry.nextAttemptAt,
      };
    }
    return { phase: "Pending", desiredHash, applied: entry.applied };
  }

  #due(entry: Entry, now: number): boolean {
    if (entry.inFlight || entry.nextAttemptAt > now) return false;
    return entry.needsVerify || entry.applied?.hash !== entry.desired.hash;
  }

  #hasDueWork(): boolean {
    const now = this.#clock.now();
    for (const entry of this.#entries.values()) if (this.#due(entry, now)) return true;
    return false;
  }

  #pump(): void {
    if (this.#closed) return;
    const now = this.#clock.now();
    for (const entry of this.#entries.values()) {
      if (this.#running >= this.#concurrency) break;
      if (!this.#due(entry, now)) continue;
      this.#running++;
      entry.inFlight = true;
      const work =
        entry.probeFirst || entry.applied?.hash === entry.desired.hash
          ? this.#check(entry)
          : this.#push(entry);
      void work
        .catch((e: unknown) => {
          // the admin client returns errors as data; this is a bug guard, not a path
          if (this.#current(entry))
            this.#fail(
              entry,
              {
                kind: "connect",
                message: `unexpected: ${e instanceof Error ? e.message : String(e)}`,
              },
              this.#clock.now(),
            );
        })
        .finally(() => {
          this.#running--;
          entry.inFlight = false;
          this.#pump();
        });
    }
    this.#scheduleRetry();
    if (this.#running === 0 && !this.#hasDueWork()) this.#resolveIdle();
  }

  #resolveIdle(): void {
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  #scheduleRetry(): void {
    let next = Infinity;
    const now = this.#clock.now();
    for (const entry of this.#entries.values()) {
      if (
        !entry.inFlight &&
        entry.nextAttemptAt > now &&
        (entry.needsVerify || entry.applied?.hash !== entry.desired.hash)
      )
        next = Math.min(next, entry.nextAttemptAt);
    }
    if (next === this.#retryTimerAt) return;
    this.#cancelRetryTimer?.();
    this.#cancelRetryTimer = undefined;
    this.#retryTimerAt = next;
    if (next === Infinity) return;
    this.#cancelRetryTimer = this.#clock.setTimer(next - now, () => {
      this.#retryTimerAt = Infinity;
      this.#cancelRetryTimer = undefined;
      this.#pump();
    });
  }

  #current(entry: Entry): boolean {
    return !this.#closed && this.#entries.get(entry.endpoint.name) === entry;
  }

  async #push(entry: Entry): Promise<void> {
    const config = entry.desired;
    const started = this.#clock.now();
    if (this.#mayPush && !this.#mayPush()) {
      entry.nextAttemptAt = started + this.#backoff.initialMs;
      this.#onEvent({ type: "withheld", name: entry.endpoint.name, hash: config.hash });
      return;
    }
    entry.pushing = config.hash;
    try {
      const deltas =
        entry.running && config.tables && this.#client.postRouteTable
          ? tableDeltas(entry.running, config.tables)
          : undefined;
      if (deltas && (await this.#pushDeltas(entry, config, deltas, started))) return;
      if (!this.#current(entry)) return;
      // After deltas the running config's bytes are not what runs (and after a restart of the
      // controller that is not known): a config with tables is always loaded, never skipped.
      const result = await this.#client.load(
        entry.endpoint,
        config.bytes,
        config.tables ? true : undefined,
      );
      if (!this.#current(entry)) return;
      const now = this.#clock.now();
      entry.needsVerify = false;
      if (result.ok) {
        entry.running = config.tables && runningAfterLoad(config.hash, config.tables);
        this.#succeeded(entry, config.hash, now, started, "load");
        return;
      }
      this.#fail(entry, result.error, now);
    } finally {
      entry.pushing = undefined;
    }
  }

  #succeeded(
    entry: Entry,
    hash: string,
    now: number,
    started: number,
    kind: PushKind,
    hosts?: number,
  ): void {
    entry.probeFirst = false;
    entry.applied = { hash, at: now };
    entry.verifiedAt = now;
    entry.attempts = 0;
    entry.lastError = undefined;
    entry.nextAttemptAt = 0;
    this.#onEvent({
      type: "pushed",
      name: entry.endpoint.name,
      hash,
      durationMs: now - started,
      kind,
      ...(hosts !== undefined && { hosts }),
    });
  }

  /**
   * Takes the proxy to `config` with one delta per changed table, all in parallel. True when
   * done (pushed, or failed: a refused delta is the config's fault, never retried as a load
   * holding it); false to fall back to a `/load` (a table replaced or changed behind our back:
   * 404, 409, 412, an unexpected hash).
   */
  async #pushDeltas(
    entry: Entry,
    config: SealedConfig,
    deltas: readonly TableDelta[],
    started: number,
  ): Promise<boolean> {
    const post = this.#client.postRouteTable!.bind(this.#client);
    const base = entry.running!;
    const label = `${base.base} ${base.skeleton}`;
    const results = await Promise.all(
      deltas.map(d => post(entry.endpoint, d.id, deltaBody(d, label), d.ifMatch)),
    );
    if (!this.#current(entry)) return true;
    const now = this.#clock.now();
    let refused: AdminError | undefined;
    let unreachableError: AdminError | undefined;
    let fallback = false;
    results.forEach((r, i) => {
      const d = deltas[i];
      if (r.ok && r.value.hash === d.expect) entry.running = applyDelta(entry.running!, d);
      else if (r.ok) fallback = true;
      else if (r.error.kind === "rejected" && r.error.status === 400)
        refused ??= {
          kind: "rejected",
          status: 400,
          message: deltaRefusal(config.tables!.tables.get(d.id)!, r.error.message),
        };
      else if (unreachable(r.error)) unreachableError ??= r.error;
      else fallback = true;
    });
    if (unreachableError) {
      entry.running = undefined;
      this.#fail(entry, unreachableError, now);
      return true;
    }
    if (refused) {
      entry.needsVerify = false;
      this.#fail(entry, refused, now);
      return true;
    }
    if (fallback) return false;
    // Every table at the hash expected: the proxy runs exactly the config's tables (the
    // shared object, so its next deltas are computed once for all proxies alike).
    entry.running = runningAfterLoad(base.base, config.tables!);
    entry.needsVerify = false;
    const hosts = deltas.reduce((n, d) => n + d.hosts.size, 0);
    this.#succeeded(entry, config.hash, now, started, "delta", hosts);
    return true;
  }

  async #check(entry: Entry): Promise<void> {
    const hash = entry.desired.hash;
    const result = await this.#runs(entry);
    if (!this.#current(entry)) return;
    const now = this.#clock.now();
    entry.needsVerify = false;
    if (result.ok) entry.probeFirst = false;
    if (result.ok && result.value) {
      if (entry.applied?.hash !== hash) {
        // it already runs what we want (e.g. programmed by the previous leader): adopt it
        entry.applied = { hash, at: now };
        this.#onEvent({ type: "adopted", name: entry.endpoint.name, hash });
      }
      entry.verifiedAt = now;
      entry.attempts = 0;
      entry.lastError = undefined;
      return;
    }
    if (result.ok) {
      // reachable but running something else: restarted from bootstrap, or changed behind our back
      entry.applied = undefined;
      entry.verifiedAt = undefined;
      entry.running = undefined;
      this.#onEvent({ type: "drifted", name: entry.endpoint.name, hash });
      return;
    }
    this.#fail(entry, result.error, now);
  }

  /**
   * Does the proxy run the desired config? Without route tables: the readiness server's `@id`
   * names it. With them, the config last loaded (the `@id`, or the base the tables' label
   * names) must have the desired skeleton, and every table the desired hash (deltas change
   * tables, never the `@id`).
   */
  async #runs(entry: Entry): Promise<Result<boolean, AdminError>> {
    const desired = entry.desired;
    const list = desired.tables && this.#client.routeTables?.bind(this.#client);
    if (!desired.tables || !list) return this.#client.runsConfig(entry.endpoint, desired.hash);
    const tables = await list(entry.endpoint);
    if (!tables.ok) return tables;
    const byId = new Map(tables.value.map(t => [t.id, t]));
    let base = desired.hash;
    for (const [id, want] of desired.tables.tables) {
      const has = byId.get(id);
      if (!has || has.hash !== want.hash) return { ok: true, value: false };
      const [labelBase, skeleton] = (has.label ?? "").split(" ");
      if (labelBase && skeleton) {
        if (skeleton !== desired.tables.skeleton) return { ok: true, value: false };
        base = labelBase;
      }
    }
    const runs = await this.#client.runsConfig(entry.endpoint, base);
    if (runs.ok && runs.value) entry.running = runningAfterLoad(base, desired.tables);
    return runs;
  }

  #fail(entry: Entry, error: AdminError, now: number): void {
    if (unreachable(error)) {
      entry.applied = undefined;
      entry.verifiedAt = undefined;
      entry.running = undefined;
    }
    if (entry.attempts === 0) entry.failedSince = now;
    entry.attempts++;
    entry.lastError = error;
    const retryInMs = backoffDelay(this.#backoff, entry.attempts, this.#random);
    entry.nextAttemptAt = now + retryInMs;
    // after a failed check, the retry is a push (state unknown or different)
    if (!unreachable(error)) entry.needsVerify = false;
    this.#onEvent({
      type: "failed",
      name: entry.endpoint.name,
      hash: entry.desired.hash,
      error,
      attempts: entry.attempts,
      retryInMs,
    });
  }
}
