/**
 * `npm run conformance -- --ingress`: the upstream Ingress conformance suite
 * (hack/ingress-conformance/run.ts) beside the Gateway API suite, against the same controller
 * and cluster. Both suites spend most of their time waiting (the Ingress suite polls every 5 s,
 * docs/ingress.md), so running them together saves the shorter one's time and one cluster and
 * controller start. Neither suite's objects overlap: the Ingress suite has its own Gateway
 * (`kengine-ingress/ingress`), IngressClass and namespaces.
 *
 * The child gets KG_CONTROLLER=external (the controller this run started or deployed) and its
 * output is passed through (its lines start with `conformance:ingress:`). The caller awaits it
 * before its own cleanup removes the controller.
 */
import { ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { hack, root, say } from "./conformance-cluster";

export interface BesideRun {
  /** The Ingress run's exit code: 0 completed, 1 a scenario failed (with --strict), 2 could not complete. */
  readonly done: Promise<number>;
  /** Stops it (an interrupted run). */
  stop(): void;
}

/** The arguments of the Ingress run: --strict passes through. */
export const ingressArgs = (strict: boolean): string[] => [
  join(hack, "ingress-conformance", "run.ts"),
  ...(strict ? ["--strict"] : []),
];

export function startIngressBeside(strict: boolean): BesideRun {
  say(`ingress: starting the Ingress conformance suite beside this one (KG_CONTROLLER=external)`);
  const t0 = Date.now();
  const child: ChildProcess = spawn(
    join(root, "node_modules", ".bin", "tsx"),
    ingressArgs(strict),
    {
      cwd: root,
      env: { ...process.env, KG_CONTROLLER: "external" },
      stdio: ["ignore", "inherit", "inherit"],
    },
  );
  const done = new Promise<number>(resolve => {
    child.on("error", e => {
      say(`ingress: could not start: ${e.message}`);
      resolve(2);
    });
    child.on("close", (code, signal) => {
      say(`ingress: exited ${code ?? signal} after ${Math.round((Date.now() - t0) / 1000)} s`);
      resolve(code ?? 2);
    });
  });
  return { done, stop: () => child.kill("SIGTERM") };
}
