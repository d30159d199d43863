/**
 * The leader-election loop: acquire or renew the Lease every retryPeriod; a leader that has not
 * renewed within renewDeadline stops leading (before its Lease can expire for others); stop()
 * releases the Lease so a successor starts at once.
 */
import { Observation, changed, decide } from "./decide";
import {
  ElectionConfig,
  LeaseRecord,
  LeaseStore,
  LeaseWrite,
  electionConfigProblems,
} from "./types";

export interface ElectorEvents {
  /** This replica became leader: start writing status and pushing config. */
  onStartedLeading(): void;
  /** This replica is no longer leader: stop writing and pushing at once. */
  onStoppedLeading(): void;
  /** Another replica leads (called when the leader's identity changes). */
  onNewLeader?(identity: string): void;
  /** A Lease operation failed (logged by the caller; the loop goes on). */
  onError?(error: unknown): void;
  /** Each try to acquire or renew, timed (metrics: how close a slow API server brings renewDeadline). */
  onAttempt?(attempt: LeaseAttempt): void;
}

/** One try, as `onAttempt` sees it. */
export interface LeaseAttempt {
  /** acquired (created or taken over), renewed, followed (another replica holds it), failed. */
  readonly outcome: "acquired" | "renewed" | "followed" | "failed";
  /** From the read of the Lease to the answer to the write (or the read, when nothing was written). */
  readonly ms: number;
  /**
   * Renewed only: since the previous successful try's start. Nominally retryPeriod plus the
   * round trip; at renewDeadline the replica stops leading.
   */
  readonly sinceLastRenewMs?: number;
}

export interface ElectorClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const realClock: ElectorClock = {
  now: () => Date.now(),
  sleep: ms => new Promise(resolve => setTimeout(resolve, ms).unref?.()),
};

/** Lease times are MicroTime: RFC 3339 with six fractional digits. */
export const microTime = (ms: number): string =>
  new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");

export class LeaderElector {
  #observed: Observation = { record: undefined, observedAt: 0 };
  #leading = false;
  #lastRenew = -Infinity;
  #leader: string | undefined;
  #stopped = false;
  #loop: Promise<void> | undefined;
  /** Resolves when stop() is called: the loop's wait between attempts ends at once. */
  #wake: () => void = () => {};
  readonly #woken = new Promise<void>(resolve => (this.#wake = resolve));

  constructor(
    private readonly store: LeaseStore,
    private readonly cfg: ElectionConfig,
    private readonly events: ElectorEvents,
    private readonly clock: ElectorClock = realClock,
  ) {
    const problems = electionConfigProblems(cfg);
    if (problems.length) throw new Error(`leader election: ${problems.join("; ")}`);
  }

  /** True only while this replica holds a Lease it renewed within renewDeadline. */
  isLeader(): boolean {
    return this.#leading && this.clock.now() - this.#lastRenew < this.cfg.renewDeadlineMs;
  }

  /** The identity of the current leader as last observed. */
  leader(): string | undefined {
    return this.#leader;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Stops the loop; a leader releases its Lease so a successor need not wait for expiry. */
  async stop(): Promise<void> {
    this.#stopped = true;
    // Not after a retry period: the clock's sleep does not hold the process (unref), so a
    // process with nothing else open would end while waiting for it.
    this.#wake();
    await this.#loop;
    if (this.#leading) {
      this.#setLeading(false);
      await this.#release().catch(e => this.events.onError?.(e));
    }
  }

  /** One attempt to acquire or renew; returns whether this replica holds the Lease now. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const now = this.clock.now();
    const attempt = (outcome: LeaseAttempt["outcome"], sinceLastRenewMs?: number) =>
      this.events.onAttempt?.({
        outcome,
        ms: this.clock.now() - now,
        ...(sinceLastRenewMs !== undefined && { sinceLastRenewMs }),
      });
    let current: LeaseRecord | undefined;
    try {
      current = await this.store.get();
    } catch (e) {
      this.events.onError?.(e);
      attempt("failed");
      return false;
    }
    if (changed(this.#observed.record, current))
      this.#observed = { record: current, observedAt: now };
    const d = decide(this.cfg.identity, this.#observed, now);
    const duration = Math.ceil(this.cfg.leaseDurationMs / 1000);
    try {
      let written: LeaseRecord;
      switch (d.op) {
        case "follow":
          this.#noteLeader(d.leader);
          attempt("followed");
          return false;
        case "create":
          written = await this.store.create({
            holderIdentity: this.cfg.identity,
            leaseDurationSeconds: duration,
            acquireTime: microTime(now),
            renewTime: microTime(now),
            leaseTransitions: 0,
          });
          break;
        case "renew":
          written = await this.store.update(
            { ...strip(current!), leaseDurationSeconds: duration, renewTime: microTime(now) },
            current!.resourceVersion,
          );
          break;
        case "takeover":
          written = await this.store.update(
            {
              holderIdentity: this.cfg.identity,
              leaseDurationSeconds: duration,
              acquireTime: microTime(now),
              renewTime: microTime(now),
              leaseTransitions: current!.leaseTransitions + 1,
            },
            current!.resourceVersion,
          );
          break;
      }
      this.#observed = { record: written, observedAt: now };
      if (d.op === "renew")
        attempt("renewed", Number.isFinite(this.#lastRenew) ? now - this.#lastRenew : undefined);
      else attempt("acquired");
      this.#lastRenew = now;
      this.#noteLeader(this.cfg.identity);
      return true;
    } catch (e) {
      this.events.onError?.(e);
      attempt("failed");
      return false;
    }
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const held = await this.tryAcquireOrRenew();
      if (this.#stopped) break;
      if (held && !this.#leading) this.#setLeading(true);
      else if (this.#leading && !this.isLeader()) this.#setLeading(false);
      await Promise.race([this.clock.sleep(this.cfg.retryPeriodMs), this.#woken]);
    }
  }

  #setLeading(leading: boolean): void {
    this.#leading = leading;
    if (leading) this.events.onStartedLeading();
    else this.events.onStoppedLeading();
  }

  #noteLeader(identity: string): void {
    if (identity !== this.#leader) {
      this.#leader = identity;
      if (identity !== this.cfg.identity) this.events.onNewLeader?.(identity);
    }
  }

  async #release(): Promise<void> {
    const current = await this.store.get();
    if (current?.holderIdentity !== this.cfg.identity) return;
    await this.store.update(
      {
        ...strip(current),
        holderIdentity: "",
        leaseDurationSeconds: 1,
        renewTime: microTime(this.clock.now()),
      },
      current.resourceVersion,
    );
  }
}

const strip = ({ resourceVersion: _rv, ...rest }: LeaseRecord): LeaseWrite => rest;
