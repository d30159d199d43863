/**
 * One container as a host process inside its pod's network namespace, in a private mount (and
 * UTS) namespace with the pod's volumes bind-mounted at their mountPaths. Handles restarts
 * with back-off, probes, logs and graceful stop.
 */
import { spawn, ChildProcess } from "node:child_process";
import { createWriteStream, mkdirSync, writeFileSync, WriteStream } from "node:fs";
import { join } from "node:path";
import { restartDelayMs, backoffResetMs, shouldRestart, RestartPolicy } from "./backoff";
import { formatLogLine, LineSplitter, nanoTime } from "./logs";
import { probeOnce, probeTimings, ProbeCounter, ProbeTarget } from "./probes";
import type { Container, ContainerState, Probe } from "./types";
import type { EventType } from "./events";
import type { Logger } from "./log";

export interface Mount {
  readonly source: string;
  readonly target: string;
  readonly readOnly: boolean;
}

export interface RunSpec {
  readonly container: Container;
  readonly podName: string;
  readonly podKey: string;
  readonly podUID: string;
  readonly netnsPath: string;
  readonly podIP: string;
  readonly binaryPath: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly mounts: readonly Mount[];
  readonly restartPolicy: RestartPolicy;
  readonly logDir: string;
  readonly scriptDir: string;
  /** Init containers run once to success; they never run probes. */
  readonly init: boolean;
  /** The pod's terminationGracePeriodSeconds, in ms (used for liveness restarts). */
  readonly graceMs: number;
  /** Restarts already counted (a restarted kubelet carries on from the pod's status). */
  readonly restartCount: number;
  /** Records a pod event about this container. */
  readonly event: (type: EventType, reason: string, message: string) => void;
}

/**
 * The bash prelude a container starts through (pure): opens its binary ($1) on fd 9, sets the
 * hostname, bind-mounts the volumes, then execs the binary through that fd under its own name
 * (argv[0] unchanged). Opened before the mounts, the binary stays reachable when a volume is
 * mounted over a directory on its path (e.g. an emptyDir at /tmp over an image unpacked in a
 * peer cache under /tmp). The container process keeps fd 9 (read-only, its own binary).
 */
export function launchScript(hostname: string, mounts: readonly Mount[]): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const lines = ["set -e", 'exec 9<"$1"', `hostname ${q(hostname)} 2>/dev/null || true`];
  for (const m of mounts) {
    lines.push(`mount --bind ${q(m.source)} ${q(m.target)}`);
    if (m.readOnly) lines.push(`mount -o remount,bind,ro ${q(m.target)}`);
  }
  lines.push("bin=$1", "shift", 'exec -a "$bin" /proc/self/fd/9 "$@"');
  return lines.join("\n") + "\n";
}

/**
 * The command line a container runs as (pure): the launch script `script` (launchScript's)
 * in the pod's network namespace and a private mount and UTS namespace, then the binary.
 */
export function containerCommand(
  netnsPath: string,
  script: string,
  binaryPath: string,
  args: readonly string[],
): readonly [string, ...string[]] {
  return [
    "nsenter",
    `--net=${netnsPath}`,
    "--",
    "unshare",
    "--mount",
    "--uts",
    "--propagation",
    "private",
    "--",
    "/bin/bash",
    script,
    binaryPath,
    ...args,
  ];
}

interface Attempt {
  readonly child: ChildProcess;
  readonly startedAt: string;
  readonly log: WriteStream;
  readonly exited: Promise<{ code: number; signal: NodeJS.Signals | null }>;
}

export class ContainerRunner {
  state: ContainerState = { waiting: { reason: "ContainerCreating" } };
  lastState: ContainerState | Record<string, never> = {};
  restartCount = 0;
  ready = false;
  started = false;
  /** Resolves when the container is terminated for good (no restart follows). */
  readonly finished: Promise<number>;
  private resolveFinished!: (code: number) => void;
  private attempt: Attempt | undefined;
  private stopping = false;
  private wake: (() => void) | undefined;
  private probeTimers: NodeJS.Timeout[] = [];
  private livenessKilled = false;

  constructor(
    private readonly spec: RunSpec,
    private readonly onChange: () => void,
    private readonly log: Logger,
  ) {
    this.finished = new Promise(r => (this.resolveFinished = r));
    this.restartCount = spec.restartCount;
    mkdirSync(spec.logDir, { recursive: true });
  }

  get name(): string {
    return this.spec.container.name;
  }

  /** The log file of an attempt (restartCount at its start). */
  logFile(attempt: number): string {
    return join(this.spec.logDir, `${attempt}.log`);
  }

  get running(): boolean {
    return "running" in this.state;
  }

  start(): void {
    void this.loop();
  }

  private async loop(): Promise<void> {
    let failures = 0;
    for (;;) {
      let exit: { code: number; signal: NodeJS.Signals | null; startedAt: string };
      try {
        exit = await this.runOnce();
      } catch (e) {
        this.set({ waiting: { reason: "RunContainerError", message: String(e) } });
        exit = { code: 128, signal: null, startedAt: nanoTime() };
      }
      if (this.stopping) return this.resolveFinished(exit.code);
      const ranMs = Date.now() - new Date(exit.startedAt).getTime();
      const restart = this.livenessKilled
        ? this.spec.restartPolicy !== "Never"
        : shouldRestart(this.spec.restartPolicy, exit.code);
      this.livenessKilled = false;
      if (this.spec.init && exit.code === 0) return this.resolveFinished(0);
      if (!restart) return this.resolveFinished(exit.code);
      failures = ranMs >= backoffResetMs ? 1 : failures + 1;
      const delay = restartDelayMs(failures);
      if (delay > 0) {
        this.lastState = this.state;
        const reason = exit.code === 0 ? "Completed" : "Error";
        this.spec.event(
          "Warning",
          "BackOff",
          `Back-off restarting failed container ${this.name} in pod ${this.spec.podKey}`,
        );
        this.set({
          waiting: {
            reason: "CrashLoopBackOff",
            message: `back-off ${delay / 1000}s restarting failed container=${this.name} pod=${this.spec.podKey} (last exit: ${reason}, code ${exit.code})`,
          },
        });
        await new Promise<void>(r => {
          const t = setTimeout(r, delay);
          this.wake = () => {
            clearTimeout(t);
            r();
          };
        });
        this.wake = undefined;
        if (this.stopping) return this.resolveFinished(exit.code);
      }
      this.restartCount++;
    }
  }

  private set(state: ContainerState): void {
    this.state = state;
    this.onChange();
  }

  private async runOnce(): Promise<{
    code: number;
    signal: NodeJS.Signals | null;
    startedAt: string;
  }> {
    const s = this.spec;
    const script = join(s.scriptDir, `${this.name}.sh`);
    writeFileSync(script, launchScript(s.podName, s.mounts));
    const log = createWriteStream(this.logFile(this.restartCount), { flags: "a" });
    const [cmd, ...argv] = containerCommand(s.netnsPath, script, s.binaryPath, s.args);
    const child = spawn(cmd, argv, {
      env: s.env,
      cwd: s.container.workingDir || "/",
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const startedAt = nanoTime();
    const exited = new Promise<{ code: number; signal: NodeJS.Signals | null }>(resolve => {
      child.once("error", e => {
        log.write(
          formatLogLine({
            time: nanoTime(),
            stream: "stderr",
            text: `kengine-local: ${e.message}`,
          }),
        );
        resolve({ code: 128, signal: null });
      });
      child.once("close", (code, signal) =>
        resolve({ code: code ?? 128 + signalNumber(signal), signal }),
      );
    });
    for (const stream of ["stdout", "stderr"] as const) {
      const split = new LineSplitter();
      const src = child[stream];
      src?.setEncoding("utf8");
      src?.on("data", (chunk: string) => {
        for (const text of split.push(chunk))
          log.write(formatLogLine({ time: nanoTime(), stream, text }));
      });
      src?.on("end", () => {
        for (const text of split.flush())
          log.write(formatLogLine({ time: nanoTime(), stream, text }));
      });
    }
    this.attempt = { child, startedAt, log, exited };
    this.started = !s.container.startupProbe;
    this.set({ running: { startedAt: startedAt.replace(/\.\d+Z$/, "Z") } });
    this.spec.event("Normal", "Started", `Started container ${this.name}`);
    this.log.info(
      `started ${s.podKey}/${this.name} (pid ${child.pid}, restart ${this.restartCount})`,
    );
    if (!s.init) this.startProbes(child.pid ?? 0);
    else this.ready = false;
    if (!s.init && !s.container.readinessProbe && this.started) this.ready = true;
    this.onChange();

    const { code, signal } = await exited;
    this.stopProbes();
    await new Promise<void>(r => log.end(r));
    this.attempt = undefined;
    this.ready = false;
    const finishedAt = nanoTime().replace(/\.\d+Z$/, "Z");
    const reason = this.livenessKilled ? "Error" : code === 0 ? "Completed" : "Error";
    this.log.info(`${s.podKey}/${this.name} exited (code ${code}${signal ? `, ${signal}` : ""})`);
    this.set({
      terminated: {
        exitCode: code,
        ...(signal ? { signal: signalNumber(signal) } : {}),
        reason,
        ...(this.livenessKilled
          ? { message: "container failed its liveness probe and was restarted" }
          : {}),
        startedAt: startedAt.replace(/\.\d+Z$/, "Z"),
        finishedAt,
      },
    });
    return { code, signal, startedAt };
  }

  private startProbes(pid: number): void {
    const c = this.spec.container;
    const target: ProbeTarget = { podIP: this.spec.podIP, ports: c.ports ?? [], pid };
    const loop = (
      kind: string,
      probe: Probe,
      initial: boolean,
      onResult: (ok: boolean, message?: string) => boolean,
    ) => {
      const t = probeTimings(probe);
      const counter = new ProbeCounter(t, initial);
      const tick = async () => {
        if (!this.attempt || this.stopping) return;
        const out = await probeOnce(probe, target, t.timeoutMs);
        if (!this.attempt || this.stopping) return;
        if (!out.ok)
          this.spec.event("Warning", "Unhealthy", `${kind} probe failed: ${out.message}`);
        const result = counter.record(out.ok);
        const goOn = onResult(result, out.ok ? undefined : out.message);
        if (goOn) this.probeTimers.push(setTimeout(() => void tick(), t.periodMs));
      };
      this.probeTimers.push(setTimeout(() => void tick(), t.initialDelayMs));
    };
    const afterStart = () => {
      if (c.readinessProbe) {
        loop("Readiness", c.readinessProbe, false, ok => {
          if (ok !== this.ready) {
            this.ready = ok;
            this.onChange();
          }
          return true;
        });
      } else if (!this.ready) {
        this.ready = true;
        this.onChange();
      }
      if (c.livenessProbe) {
        loop("Liveness", c.livenessProbe, true, (ok, message) => {
          if (ok) return true;
          this.log.warn(
            `${this.spec.podKey}/${this.name} failed liveness: ${message ?? ""}; restarting`,
          );
          this.livenessKilled = true;
          this.spec.event(
            "Normal",
            "Killing",
            `Container ${this.name} failed liveness probe, will be restarted`,
          );
          void this.killAttempt(this.graceMs());
          return false;
        });
      }
    };
    if (c.startupProbe) {
      loop("Startup", c.startupProbe, false, ok => {
        if (ok) {
          this.started = true;
          this.onChange();
          afterStart();
          return false;
        }
        return true;
      });
    } else afterStart();
  }

  private stopProbes(): void {
    this.probeTimers.forEach(clearTimeout);
    this.probeTimers = [];
  }

  private graceMs(): number {
    return this.spec.graceMs;
  }

  /** SIGTERM the attempt's process group, SIGKILL after graceMs. */
  private async killAttempt(graceMs: number): Promise<void> {
    const a = this.attempt;
    if (!a || a.child.pid === undefined) return;
    const pid = a.child.pid;
    signalGroup(pid, "SIGTERM");
    const timer = setTimeout(() => signalGroup(pid, "SIGKILL"), graceMs);
    await a.exited;
    clearTimeout(timer);
  }

  /** Stops the container for good: no more restarts. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.stopProbes();
    this.wake?.();
    if (this.attempt) await this.killAttempt(graceMs);
    else if ("waiting" in this.state) this.resolveFinished(0);
    await this.finished;
  }

  /** pid of the running attempt, if any. */
  get pid(): number | undefined {
    return this.attempt?.child.pid;
  }
}

function signalGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    try {
      process.kill(pid, sig);
    } catch {
      // gone
    }
  }
}

const signals: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGKILL: 9,
  SIGTERM: 15,
};
function signalNumber(s: NodeJS.Signals | null): number {
  return s ? (signals[s] ?? 0) : 0;
}
