/** A clock tests move by hand (the snapshot's Clock: batching, provisioning, KengineProxy rechecks). */
import type { Clock } from "../snapshot";

export class ManualClock implements Clock {
  #now: number;
  #timers: { at: number; fn: () => void; id: number }[] = [];
  #nextId = 0;

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.#nextId++;
    this.#timers.push({ at: this.#now + Math.max(0, ms), fn, id });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers = this.#timers.filter(t => t.id !== handle);
  }

  /** Deadlines of the timers set and not yet run, soonest first. */
  pending(): readonly number[] {
    return this.#timers.map(t => t.at).sort((a, b) => a - b);
  }

  /** Moves time on by `ms`, running each timer due on the way, in deadline order. */
  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      const next = [...this.#timers].sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!next || next.at > until) break;
      this.#timers = this.#timers.filter(t => t.id !== next.id);
      this.#now = next.at;
      next.fn();
    }
    this.#now = until;
  }
}
