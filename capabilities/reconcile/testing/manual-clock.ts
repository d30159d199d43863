/**
 * A clock tests move by hand, in the snapshot's Clock shape (setTimeout/clearTimeout: batching,
 * provisioning, KengineProxy rechecks): the push engine's ManualClock (proxies/backoff.ts)
 * behind the other timer interface.
 */
import { ManualClock as TimerClock } from "../../proxies/backoff";
import type { Clock } from "../../snapshot";

export class ManualClock implements Clock {
  readonly #clock: TimerClock;

  constructor(start = 0) {
    this.#clock = new TimerClock(start);
  }

  now(): number {
    return this.#clock.now();
  }

  /** The handle is the timer's cancel function. */
  setTimeout(fn: () => void, ms: number): unknown {
    return this.#clock.setTimer(ms, fn);
  }

  clearTimeout(handle: unknown): void {
    if (typeof handle === "function") (handle as () => void)();
  }

  /** Deadlines of the timers set and not yet run, soonest first. */
  pending(): readonly number[] {
    return this.#clock.pending();
  }

  /** Moves time on by `ms`, running each timer due on the way, in deadline order. */
  advance(ms: number): void {
    this.#clock.advance(ms);
  }
}
