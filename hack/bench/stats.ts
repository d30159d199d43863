/** Small statistics for benchmark samples (milliseconds). */

export function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return NaN;
  const s = [...samples].sort((a, b) => a - b);
  // Nearest rank: the smallest sample with at least q of the samples at or below it.
  const rank = Math.max(1, Math.ceil(q * s.length));
  return s[rank - 1];
}

export const median = (samples: readonly number[]): number => quantile(samples, 0.5);

/** Rounds to 0.1 ms (reports stay readable; the machines are far noisier than that). */
export const round = (ms: number): number => Math.round(ms * 10) / 10;

export const now = (): number => performance.now();

/** Times fn once, in milliseconds. */
export async function timeIt(fn: () => unknown): Promise<number> {
  const t = now();
  await fn();
  return now() - t;
}

export const sleep = (ms: number): Promise<void> => new Promise(r => setTimeout(r, ms));
