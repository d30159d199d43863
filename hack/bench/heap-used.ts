/** Heap used after full garbage collections, in MiB to one decimal (needs `node --expose-gc`). */
export function heapUsedMiB(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("run with node --expose-gc");
  for (let i = 0; i < 4; i++) gc();
  return Math.round((process.memoryUsage().heapUsed / 2 ** 20) * 10) / 10;
}
