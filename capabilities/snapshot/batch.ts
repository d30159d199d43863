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
 * The decision is pure (`batchNotify`, `batchDeadline`, `batchDue`); `Batcher` is the small
 * timer adapter, with the clock and timers injected so it is testable without real time.
 */

export interface BatchOptions {
  readonly holdOffMs: number;
  readonly maxWaitMs: number;
  /** Build an event after a quiet spell at once (default true). */
  readonly leading?: boolean;
}

export const DEFAULT_BATCH: BatchOptions = { holdOffMs: 50, maxWaitMs: 500, leading: true };

/**
 * Pending burst: when its first and latest relevant events arrived, and whether it is built at
 * once (it began after a quiet spell). Undefined: idle.
 */
export interface BatchState {
  readonly firstAt: number;
  readonly lastAt: number;
  readonly leading?: boolean;
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
): BatchState =>
  state
    ? { ...state, lastAt: now }
    : { firstAt: now, lastAt: now, ...(leading && { leading: true }) };

/** When the pending burst must be built. */
export const batchDeadline = (state: BatchState, o: BatchOptions = DEFAULT_BATCH): number =>
  state.leading ? state.firstAt : Math.min(state.lastAt + o.holdOffMs, state.firstAt + o.maxWaitMs);

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
  notify(): void {
    const now = this.clock.now();
    const leading = !this.state && batchLeads(this.lastActiveAt, now, this.options);
    this.lastActiveAt = now;
    this.state = batchNotify(this.state, now, leading);
    // A leading burst's timer is armed once: the events of the same turn join it.
    if (!(this.state.leading && this.timer !== undefined)) this.arm();
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
