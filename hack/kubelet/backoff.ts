/** Restart back-off like the kubelet's: immediate, then 10s, 20s, 40s … capped at 5 min (pure). */
export const backoffBaseMs = 10_000;
export const backoffMaxMs = 300_000;
/** A container that ran this long without failing starts its back-off afresh. */
export const backoffResetMs = 600_000;

export function restartDelayMs(consecutiveFailures: number): number {
  if (consecutiveFailures <= 1) return 0;
  return Math.min(backoffMaxMs, backoffBaseMs * 2 ** (consecutiveFailures - 2));
}

export type RestartPolicy = "Always" | "OnFailure" | "Never";

export function shouldRestart(policy: RestartPolicy | undefined, exitCode: number): boolean {
  switch (policy ?? "Always") {
    case "Always":
      return true;
    case "OnFailure":
      return exitCode !== 0;
    case "Never":
      return false;
  }
}
