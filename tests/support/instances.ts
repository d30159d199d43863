/**
 * Starts controller instances (tests/support/controller-instance.ts) as their own processes and
 * follows what they print: started, leader changes, and the push engine's events in order.
 */
import { ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { repoRoot } from "./paths";

export interface Instance {
  readonly identity: string;
  readonly proc: ChildProcess;
  /** The push engine's event types ("pushed", "adopted", …) in the order they happened. */
  readonly fleet: string[];
  /** Automatic HTTPS log lines ({acme: message, name, …}) in order. */
  readonly acme: Record<string, unknown>[];
  leader: boolean;
  started: boolean;
}

/**
 * One process per instance (node --import tsx, not the tsx CLI, which would run the instance in
 * a child process that a SIGKILL of the CLI leaves running). Stop it with SIGTERM (graceful) or
 * SIGKILL (no Lease release); stopInstances waits for every one.
 */
export function startInstance(
  namespace: string,
  identity: string,
  lease: string,
  env: NodeJS.ProcessEnv = {},
): Instance {
  const proc = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      join(repoRoot, "tests", "support", "controller-instance.ts"),
      namespace,
      identity,
      lease,
    ],
    { cwd: repoRoot, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] },
  );
  const inst: Instance = { identity, proc, fleet: [], acme: [], leader: false, started: false };
  let buf = "";
  proc.stdout!.on("data", (d: Buffer) => {
    buf += d.toString("utf8");
    for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        const m = JSON.parse(line) as {
          started?: boolean;
          leader?: boolean;
          fleet?: string;
          acme?: string;
        };
        if (m.acme) inst.acme.push(m);
        if (m.started) inst.started = true;
        if (m.leader !== undefined) inst.leader = m.leader;
        if (m.fleet) inst.fleet.push(m.fleet);
      } catch {
        // not ours
      }
    }
  });
  proc.stderr!.on("data", (d: Buffer) => process.stderr.write(`[${identity}] ${d.toString()}`));
  return inst;
}

const running = (p: ChildProcess) => p.exitCode === null && p.signalCode === null;

/** Ends a process and resolves once it is gone. */
export async function stopInstance(p: ChildProcess, signal: NodeJS.Signals = "SIGTERM") {
  if (!running(p)) return;
  const exited = new Promise(r => p.once("exit", r));
  p.kill(signal);
  await exited;
}

export const stopInstances = (procs: readonly ChildProcess[]): Promise<unknown> =>
  Promise.all(procs.map(p => stopInstance(p)));
