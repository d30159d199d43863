/**
 * Batching of relevant events into builds.
 *
 * - Leading edge: an event that comes after a quiet spell (for `holdOffMs` no event, and no
 *   build ended: the owner reports those with `activity()`) is built at once, on the next turn
 *   of the event loop, so a lone change never waits the hold-off. Events of the same turn join
 *   it.
 * - Trailing edge: any other event is part of a burst: it waits `holdOffMs` after the last
 *   event of the burst, but never longer than `maxWaitMs` after its first. (A build's end
 *   counts as activity because the events of a steady stream queue up while a build holds the
 *   event loop and arrive together after it: judged from the previous event alone, the first
 *   of them would lead after every build, one small build after another, and the stream would
 *   settle later.)
 *
 * - Status-only events (an object whose update changed nothing but its status: most often our
 *   own status write coming back) cannot change what a proxy serves. They are built trailing
 *   on their own timings, never lead, and neither start nor prolong a quiet spell's end, so a
 *   stream of them (the echoes of 2,000 route status writes after a bulk create) does not hold
 *   a route change in a burst up to the maximum wait (applying the echoes themselves is
 *   reconcile/echoes.ts). A burst holding both is built at the earlier of the two deadlines.
 *
 * The decision is pure (`batchNotify`, `batchDeadline`, `batchDue`); `Batcher` is the small
 * timer adapter, with the clock and timers injected so it is testable without real time.
 */

/** What an event may change: a proxy's config (and status), or status only. */
export type ChangeKind = "config" | "status";

export interface BatchOptions {
  readonly holdOffMs: number;
  readonly maxWaitMs: number;
  /** Build an event after a quiet spell at once (default true). */
  readonly leading?: boolean;
}

export const DEFAULT_BATCH: BatchOptions = { holdOffMs: 50, maxWaitMs: 500, leading: true };

/**
 * Pending burst: when its first and latest config events arrived, and whether it is built at
 * once (it began after a quiet spell); the same for its status-only events. Undefined: idle.
 */
export interface BatchState {
  readonly firstAt?: number;
  readonly lastAt?: number;
  readonly leading?: boolean;
  readonly statusFirstAt?: number;
  readonly statusLastAt?: number;
}

/**
 * Does an event at `now` begin a burst that is built at once? `lastActiveAt`: the last event or
 * build end, undefined if none yet.
 */
export const batchLeads = (
  lastActiveAt: number | undefined,
  now: number,
  o: BatchOptions = DEFAULT_BATCH,
): boolean =>
  (o.leading ?? true) && (lastActiveAt === undefined || now - lastActiveAt >= o.holdOffMs);

export const batchNotify = (
  state: BatchState | undefined,
  now: number,
  leading = false,
  change: ChangeKind = "config",
): BatchState => {
  if (change === "status")
    return state?.statusFirstAt !== undefined
      ? { ...state, statusLastAt: now }
      : { ...state, statusFirstAt: now, statusLastAt: now };
  return state?.firstAt !== undefined
    ? { ...state, lastAt: now }
    : { ...state, firstAt: now, lastAt: now, ...(leading && { leading: true }) };
};

const trailing = (first: number, last: number, o: BatchOptions): number =>
  Math.min(last + o.holdOffMs, first + o.maxWaitMs);

/** When the pending burst must be built. */
export const batchDeadline = (state: BatchState, o: BatchOptions = DEFAULT_BATCH): number => {
  const config =
    state.firstAt === undefined
      ? Infinity
      : state.leading
        ? state.firstAt
        : trailing(state.firstAt, state.lastAt ?? state.firstAt, o);
  const status =
    state.statusFirstAt === undefined
      ? Infinity
      : trailing(state.statusFirstAt, state.statusLastAt ?? state.statusFirstAt, o);
  return Math.min(config, status);
};

export const batchDue = (
  state: BatchState | undefined,
  now: number,
  o: BatchOptions = DEFAULT_BATCH,
): boolean => state !== undefined && now >= batchDeadline(state, o);

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: h => clearTimeout(h as ReturnType<typeof setTimeout>),
};

/** Calls `flush` once per burst of `notify()` calls, per the batch options. */
export class Batcher {
  private state: BatchState | undefined;
  private timer: unknown;
  private lastActiveAt: number | undefined;

  constructor(
    private readonly flush: () => void,
    private readonly options: BatchOptions = DEFAULT_BATCH,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Records a relevant event and (re)arms the timer. */
  notify(change: ChangeKind = "config"): void {
    const now = this.clock.now();
    if (change === "status") {
      this.state = batchNotify(this.state, now, false, "status");
      this.arm();
      return;
    }
    const leading =
      this.state?.firstAt === undefined && batchLeads(this.lastActiveAt, now, this.options);
    this.lastActiveAt = now;
    const wasLeading = this.state?.leading === true;
    this.state = batchNotify(this.state, now, leading);
    // A leading burst's timer is armed once: the events of the same turn join it.
    if (!(wasLeading && this.timer !== undefined)) this.arm();
  }

  /** Records activity other than an event (a build ended): the next quiet spell starts now. */
  activity(): void {
    this.lastActiveAt = this.clock.now();
  }

  /** Drops any pending burst (e.g. on shutdown). */
  cancel(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.state = undefined;
  }

  get pending(): boolean {
    return this.state !== undefined;
  }

  private arm(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    const state = this.state!;
    const wait = Math.max(0, batchDeadline(state, this.options) - this.clock.now());
    this.timer = this.clock.setTimeout(() => this.fire(), wait);
  }

  private fire(): void {
    this.timer = undefined;
    if (!batchDue(this.state, this.clock.now(), this.options)) {
      if (this.state) this.arm();
      return;
    }
    this.state = undefined;
    this.flush();
  }
}
