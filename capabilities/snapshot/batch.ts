/**
 * Batching of relevant events into builds: wait `holdOffMs` after the last relevant event,
 * but never longer than `maxWaitMs` after the first one of a burst. The decision is pure
 * (`batchNotify`, `batchDeadline`, `batchDue`); `Batcher` is the small timer adapter, with
 * the clock and timers injected so it is testable without real time.
 */

export interface BatchOptions {
  readonly holdOffMs: number;
  readonly maxWaitMs: number;
}

export const DEFAULT_BATCH: BatchOptions = { holdOffMs: 50, maxWaitMs: 500 };

/** Pending burst: when its first and latest relevant events arrived. Undefined: idle. */
export interface BatchState {
  readonly firstAt: number;
  readonly lastAt: number;
}

export const batchNotify = (state: BatchState | undefined, now: number): BatchState =>
  state ? { firstAt: state.firstAt, lastAt: now } : { firstAt: now, lastAt: now };

/** When the pending burst must be built. */
export const batchDeadline = (state: BatchState, o: BatchOptions = DEFAULT_BATCH): number =>
  Math.min(state.lastAt + o.holdOffMs, state.firstAt + o.maxWaitMs);

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

  constructor(
    private readonly flush: () => void,
    private readonly options: BatchOptions = DEFAULT_BATCH,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Records a relevant event and (re)arms the timer. */
  notify(): void {
    this.state = batchNotify(this.state, this.clock.now());
    this.arm();
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
