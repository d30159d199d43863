/** Retry timing for the push engine: capped exponential back-off with jitter, and an injectable clock. */

export interface BackoffPolicy {
  /** Delay after the first failure. */
  readonly initialMs: number;
  /** Upper bound of any delay. */
  readonly maxMs: number;
  readonly factor: number;
  /** 0..1: the share of each delay that is randomised (0.5 → uniformly between 50 % and 100 %). */
  readonly jitter: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = {
  initialMs: 250,
  maxMs: 30_000,
  factor: 2,
  jitter: 0.5,
};

/** Delay before retry number `attempt` (1 = after the first failure); `random` returns [0, 1). */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number): number {
  const exponent = Math.max(0, attempt - 1);
  const base = Math.min(
    policy.maxMs,
    policy.initialMs * Math.pow(policy.factor, Math.min(exponent, 64)),
  );
  const jitter = Math.min(1, Math.max(0, policy.jitter));
  return Math.round(base * (1 - jitter) + base * jitter * random());
}

/** Time and timers, injected so tests can drive retries without waiting. */
export interface Clock {
  now(): number;
  /** Runs `fn` after `ms`; returns a function that cancels it. */
  setTimer(ms: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer: (ms, fn) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return () => clearTimeout(t);
  },
};

/** A clock that moves only when told to; timers fire in due order inside `advance`. */
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
  setTimer(ms: number, fn: () => void): () => void {
    const id = this.#nextId++;
    this.#timers.push({ at: this.#now + Math.max(0, ms), fn, id });
    return () => {
      this.#timers = this.#timers.filter(t => t.id !== id);
    };
  }
  /** Pending timer deadlines, soonest first. */
  pending(): readonly number[] {
    return this.#timers.map(t => t.at).sort((a, b) => a - b);
  }
  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      const due = this.#timers
        .filter(t => t.at <= until)
        .sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.#timers = this.#timers.filter(t => t.id !== due.id);
      this.#now = due.at;
      due.fn();
    }
    this.#now = until;
  }
}
