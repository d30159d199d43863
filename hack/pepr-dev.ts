/**
 * Runs the module the way a developer does: `npx pepr dev --host localhost` against the local
 * cluster. Pepr leaves its webhook registration behind when it exits; stop() removes it so a
 * dead webhook (failurePolicy Fail) cannot block later tests.
 */
import { ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  watch,
} from "node:fs";
import { get as httpsGet } from "node:https";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import cfg from "../package.json";

const repoRoot = join(__dirname, "..");

export const webhookName = `pepr-${cfg.pepr.uuid}`;

/**
 * A copy of the module alone, in a new temporary directory (its path returned; the caller
 * removes it): capabilities/ without its tests, pepr.ts, package.json, tsconfig.json, and a
 * link to node_modules. Before it builds, `pepr dev` runs ESLint and Prettier over every
 * TypeScript file under its directory and tsc over tsconfig.json's files: in the repository
 * that is the whole project (hack/ and tests/ too, about 600 files), and Prettier writes each
 * of them back. From this copy it checks the module's 226 files (the copy has no ESLint
 * config, so that step stops at once) and leaves the repository alone.
 */
export function moduleCopy(prefix = "kg-module-", from = repoRoot): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  for (const f of ["capabilities", "pepr.ts", "tsconfig.json", "package.json"])
    cpSync(join(from, f), join(dir, f), { recursive: true, filter: notATest });
  symlinkSync(join(from, "node_modules"), join(dir, "node_modules"));
  return dir;
}

const notATest = (path: string): boolean => !path.endsWith(".test.ts");

/**
 * Keeps a module copy (moduleCopy) in step with the repository while it runs: an edit of
 * pepr.ts or of a file under capabilities/ (tests aside) is copied in, a deletion removed, so
 * that `pepr dev` in the copy rebuilds and restarts the module as it does in the repository
 * (esbuild watches the files it bundled). Returns the function that stops it.
 */
export function mirrorModule(dir: string, from = repoRoot): () => void {
  const sync = (rel: string): void => {
    if (!notATest(rel)) return;
    const source = join(from, rel);
    const target = join(dir, rel);
    try {
      if (!existsSync(source)) rmSync(target, { recursive: true, force: true });
      else if (statSync(source).isDirectory())
        cpSync(source, target, { recursive: true, filter: notATest });
      else if (!existsSync(target) || !readFileSync(target).equals(readFileSync(source))) {
        mkdirSync(dirname(target), { recursive: true });
        copyFileSync(source, target);
      }
    } catch {
      // The file came and went between the event and the copy: its next event brings it.
    }
  };
  // Editors often save by replacing the file, which ends a watch on the file itself: both
  // watches are on directories.
  const watchers = [
    watch(join(from, "capabilities"), { recursive: true }, (_event, name) => {
      if (name) sync(join("capabilities", name.toString()));
    }),
    watch(from, (_event, name) => {
      if (name?.toString() === "pepr.ts") sync("pepr.ts");
    }),
  ];
  return () => {
    for (const w of watchers) w.close();
  };
}

/**
 * Preloaded into every node process `pepr dev` starts; only the module's fork (PEPR_MODE=dev)
 * switches to KG_MODULE_KUBECONFIG, so `pepr dev` itself keeps the admin kubeconfig it needs
 * to register the webhook.
 */
const MODULE_KUBECONFIG_PRELOAD =
  "--import=data:text/javascript,if(process.env.PEPR_MODE==='dev'&&process.env.KG_MODULE_KUBECONFIG)process.env.KUBECONFIG=process.env.KG_MODULE_KUBECONFIG";
/**
 * `pepr dev` forces PEPR_PRETTY_LOGS=true on the module's fork (pino-pretty in a worker thread,
 * which the main thread waits for when it falls behind); a deployed module logs JSON lines.
 */
const PRODUCTION_LOGS_PRELOAD =
  "--import=data:text/javascript,if(process.env.PEPR_MODE==='dev')process.env.PEPR_PRETTY_LOGS='false'";

/**
 * Node flags for the module's fork only (KG_MODULE_EXEC_ARGV, comma-separated), e.g. a heap
 * limit: `pepr dev` runs tsc and ESLint for its build, which NODE_OPTIONS would limit too. Its
 * CLI forks the module with `child_process.fork` and the CLI's own flags; this preload, in the
 * CLI only (no PEPR_MODE), adds the flags to what fork passes.
 */
const MODULE_EXEC_ARGV_PRELOAD =
  "--import=data:text/javascript,((c,a,f)=>{if(a&&!process.env.PEPR_MODE)c.fork=(m,x,o)=>(Array.isArray(x)||(o=x,x=[]),f(m,x,{...o,execArgv:[...process.execArgv,...a.split(',')]}))})(process.getBuiltinModule('child_process'),process.env.KG_MODULE_EXEC_ARGV,process.getBuiltinModule('child_process').fork)";

export interface PeprDev {
  /** Everything the module printed so far. */
  output(): string;
  /** Resolves when the output matches, rejects after timeoutMs. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
  /** SIGKILL, no clean-up: the webhook registration stays behind, as after a crash. */
  kill(): Promise<void>;
  /**
   * Seconds from the spawn to each readiness step: `listening` (pepr dev built the module
   * and its webhook server listens), `healthz` (Pepr bound its endpoints), `synced` (the
   * controller listed every kind). Also printed on stderr as one `pepr dev: ready …` line.
   */
  readonly readySeconds: {
    readonly listening: number;
    readonly healthz: number;
    readonly synced: number;
  };
}

export interface PeprDevOptions {
  /** The cluster's kubeconfig. */
  readonly kubeconfig: string;
  /** kubectl binary, used to remove the webhook registration on stop. */
  readonly kubectl: string;
  /** Copy the module's output to this stream as well (npm start shows it). */
  readonly echo?: NodeJS.WritableStream;
  readonly readyTimeoutMs?: number;
  /**
   * Credentials for the module's own API requests (watches, status, provisioning), e.g. a
   * ServiceAccount token; `pepr dev` itself keeps `kubeconfig` to register its webhook.
   */
  readonly moduleKubeconfig?: string;
  /** Directory of the module to run (default: this repository), e.g. another build of it. */
  readonly moduleDir?: string;
  /**
   * Log as a deployed module does (JSON lines, LOG_LEVEL info unless set) instead of `pepr
   * dev`'s defaults (debug, every request body, pretty-printed in a worker thread): for
   * measurements (npm run bench). Readiness is then read from /healthz and the controller's
   * "snapshot synced" line, since the debug lines waited for otherwise are not printed.
   */
  readonly productionLogs?: boolean;
  /** Node flags for the module's process only (not `pepr dev`'s build), e.g. a heap limit. */
  readonly moduleExecArgv?: readonly string[];
}

/** Waits until the module's webhook server answers GET /healthz with 200 (port 3000). */
async function waitForHealthz(timeoutMs: number, exited: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited()) throw new Error("pepr dev exited before its webhook server answered");
    const ok = await new Promise<boolean>(resolve => {
      const req = httpsGet(
        {
          host: "127.0.0.1",
          port: 3000,
          path: "/healthz",
          rejectUnauthorized: false,
          timeout: 2000,
        },
        res => {
          res.resume();
          resolve(res.statusCode === 200);
        },
      );
      req.on("error", () => resolve(false));
      req.on("timeout", () => req.destroy());
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error("the module's /healthz did not answer 200 in time");
    await new Promise(r => setTimeout(r, 500));
  }
}

export async function startPeprDev(opts: PeprDevOptions): Promise<PeprDev> {
  const { kubeconfig, readyTimeoutMs = 240_000 } = opts;
  const kubectl = (args: string[]) =>
    spawnSync(opts.kubectl, ["--kubeconfig", kubeconfig, ...args], {
      stdio: "ignore",
      timeout: 60_000,
    });
  let out = "";
  const preloads = [
    ...(opts.moduleKubeconfig ? [MODULE_KUBECONFIG_PRELOAD] : []),
    ...(opts.productionLogs ? [PRODUCTION_LOGS_PRELOAD] : []),
    ...(opts.moduleExecArgv?.length ? [MODULE_EXEC_ARGV_PRELOAD] : []),
  ];
  const child: ChildProcess = spawn(
    process.execPath,
    [
      join(repoRoot, "node_modules", "pepr", "dist", "cli.js"),
      "dev",
      "--host",
      "localhost",
      "--yes",
    ],
    {
      cwd: opts.moduleDir ?? repoRoot,
      env: {
        ...process.env,
        KUBECONFIG: kubeconfig,
        ...(opts.moduleKubeconfig ? { KG_MODULE_KUBECONFIG: opts.moduleKubeconfig } : {}),
        ...(opts.productionLogs ? { LOG_LEVEL: process.env.LOG_LEVEL ?? "info" } : {}),
        ...(opts.moduleExecArgv?.length
          ? { KG_MODULE_EXEC_ARGV: opts.moduleExecArgv.join(",") }
          : {}),
        ...(preloads.length > 0
          ? { NODE_OPTIONS: [process.env.NODE_OPTIONS ?? "", ...preloads].join(" ").trim() }
          : {}),
      },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const collect = (d: Buffer) => {
    out += d.toString();
    opts.echo?.write(d);
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const exited = new Promise<void>(resolve => child.once("exit", () => resolve()));

  const waitForOutput = async (pattern: RegExp, timeoutMs = 30_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(out)) {
      if (child.exitCode !== null)
        throw new Error(`pepr dev exited (${child.exitCode}):\n${out.slice(-4000)}`);
      if (Date.now() > deadline)
        throw new Error(
          `timed out waiting for ${pattern} in pepr dev output:\n${out.slice(-4000)}`,
        );
      await new Promise(r => setTimeout(r, 200));
    }
  };

  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null && child.pid) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        /* already gone */
      }
      const killer = setTimeout(() => {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          /* already gone */
        }
      }, 10_000);
      await exited;
      clearTimeout(killer);
    }
    kubectl(["delete", "validatingwebhookconfiguration", webhookName, "--ignore-not-found"]);
    kubectl(["delete", "mutatingwebhookconfiguration", webhookName, "--ignore-not-found"]);
  };

  const kill = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      /* already gone */
    }
    await exited;
  };

  // How long each step takes: every integration suite that runs the module pays it (an
  // instrument for the test suite's length).
  const spawnedAt = Date.now();
  const since = () => Math.round((Date.now() - spawnedAt) / 100) / 10;
  let listening = 0;
  let healthz = 0;
  try {
    if (opts.productionLogs) {
      // The webhook server answers and the controller has listed every kind.
      await waitForHealthz(readyTimeoutMs, () => child.exitCode !== null);
      listening = healthz = since();
      await waitForOutput(/snapshot synced/, 120_000);
    } else {
      // The webhook server is up, Pepr has bound its endpoints (/healthz, /metrics and the
      // admission paths are bound together, once Pepr's store is ready: before that they answer
      // 404) and the controller has listed every kind (its watches start from those lists).
      await waitForOutput(/Server listening on port/, readyTimeoutMs);
      listening = since();
      await waitForHealthz(readyTimeoutMs, () => child.exitCode !== null);
      healthz = since();
      await waitForOutput(/snapshot synced/, 120_000);
    }
  } catch (e) {
    await stop();
    throw e;
  }
  const readySeconds = { listening, healthz, synced: since() };
  process.stderr.write(
    `pepr dev: ready after ${readySeconds.synced} s (listening ${listening} s, healthz ${healthz} s)\n`,
  );
  return { output: () => out, waitForOutput, stop, kill, readySeconds };
}
