/**
 * npm run conformance — the official Gateway API conformance suite against the local cluster
 * with the controller running. --version picks the suite's release: v1.6.1 (the default,
 * pinned in hack/go.mod) or v1.7.0 (pinned in hack/peers/conformance/go.mod, a module of its
 * own: it needs Go 1.27 and the Kubernetes 0.37 modules; see suiteVersions). The Gateway API
 * CRDs the cluster installs are v1.7.0's whichever suite runs.
 *
 *   1. hack/cluster.sh up (remembers whether the cluster was already running)
 *   2. npx pepr dev (hack/pepr-dev.ts) unless KG_CONTROLLER=external; with --deployed the
 *      module as `npx pepr deploy` installs it instead (hack/deployed.ts: dist/, rebuilt unless
 *      fresh, applied; Pepr's admission and watcher pods on the node, no pepr dev)
 *   3. GatewayClass `kengine` (controllerName kengine.io/gateway-controller); waits for
 *      Accepted=True (current generation) and a non-empty status.supportedFeatures
 *   4. builds the suite (hack/conformance/conformance_test.go, go test -c in the version's
 *      module) once into the peers cache, runs it; the output goes
 *      to reports/conformance.log, progress lines to stdout
 *      (with --ingress the Ingress conformance suite runs beside it: hack/conformance-ingress.ts)
 *   5. copies the suite's report to reports/conformance-report.yaml and prints a summary
 *   6. stops the controller (deployed: saves the pods' logs, removes what it applied);
 *      removes the GatewayClass if it created it; brings the cluster down only if it brought
 *      it up (KG_KEEP_CLUSTER=1 keeps it)
 *
 * Exit code: 0 when the suite completed and wrote its report (whatever the results), 1 with
 * --strict when any test failed, 2 when the run could not complete (cluster, controller,
 * GatewayClass, build, the suite stopped before writing a report, or another pepr dev
 * disturbed the run).
 *
 * Flags: --version=v1.6.1|v1.7.0  --profiles=GATEWAY-HTTP,GATEWAY-GRPC,GATEWAY-TLS  --deployed  --ingress
 *        --run-test=NAME  --skip-tests=A,B
 *        --strict  --debug  --no-cleanup  --continue-after-setup-failure
 *        --timeout-overrides='Name:secs;...'
 *        --gateway-class=kengine  --gwc-timeout=SECONDS  --help
 *        --usable-address=IP  --unusable-address=IP   (GatewayStaticAddresses)
 */
import { ChildProcess, spawnSync } from "node:child_process";
import {
  copyFileSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Options, parseArgs, usage, UsageError } from "./conformance-args";
import {
  applyGatewayClass,
  clearGatewayClassStatus,
  clusterRunning,
  clusterUp,
  deployController,
  elapsed,
  hack,
  kubeconfig,
  kubectl,
  kubectlBin,
  otherPeprDevs,
  reportsDir,
  root,
  run,
  RunError,
  say,
  waitForGatewayClass,
  waitForOldNamespaces,
  watchForInterference,
} from "./conformance-cluster";
import {
  buildTestBinary,
  implementation,
  installSuiteCrds,
  runSuite,
  setupFailedMarker,
} from "./conformance-suite";
import {
  diagnoseLog,
  failureReasons,
  formatSummary,
  summarizeReportYaml,
} from "./conformance-summary";
import { BesideRun, startIngressBeside } from "./conformance-ingress";
import { PeprDev, startPeprDev } from "./pepr-dev";

export { defaultVersion, parseArgs, suiteVersions } from "./conformance-args";
export type { SuiteVersion } from "./conformance-args";
export { installSuiteCrds } from "./conformance-suite";

/** The worse of the Gateway API run's exit code and, with --ingress, the Ingress run's. */
async function main(): Promise<number> {
  const beside: { run?: BesideRun; code: number } = { code: 0 };
  const code = await conformance(beside);
  return Math.max(code, beside.code);
}

async function conformance(beside: { run?: BesideRun; code: number }): Promise<number> {
  let opts: Options;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    if (e instanceof UsageError) {
      if (e.message) process.stderr.write(`conformance: ${e.message}\n`);
      process.stderr.write(`${usage}\n`);
      return e.message ? 2 : 0;
    }
    throw e;
  }

  const started = Date.now();
  const cleanups: Array<() => Promise<void> | void> = [];
  let child: ChildProcess | undefined;
  let interrupted = false;
  const onSignal = (sig: NodeJS.Signals) => {
    interrupted = true;
    say(`${sig}: stopping`);
    child?.kill("SIGTERM");
    beside.run?.stop();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  try {
    mkdirSync(reportsDir, { recursive: true });
    const wasRunning = clusterRunning();
    clusterUp();
    if (!wasRunning && process.env.KG_KEEP_CLUSTER !== "1") {
      cleanups.push(() => {
        say("cluster: hack/cluster.sh down (this run brought it up)");
        spawnSync("bash", [join(hack, "cluster.sh"), "down"], {
          cwd: root,
          stdio: "inherit",
          timeout: 300_000,
        });
      });
    }
    if (interrupted) throw new RunError("interrupted");

    // Build first: a broken build should not leave a controller running.
    const bin = buildTestBinary(opts.version);
    installSuiteCrds(opts.version);

    let controller: PeprDev | undefined;
    const ourPeprPids = new Set<number>();
    if (process.env.KG_CONTROLLER === "external") {
      say(
        `controller: KG_CONTROLLER=external, not ${opts.deployed ? "deploying" : "starting pepr dev"}`,
      );
    } else {
      // Another pepr dev (someone's test) would replace our webhook registration mid-run.
      const others = otherPeprDevs();
      if (others.length > 0) {
        throw new RunError(
          `another pepr dev is running (pid ${others.join(", ")}): it would take over the webhook during the run. ` +
            "Wait for it to finish, or set KG_CONTROLLER=external to measure the controller that is already running.",
        );
      }
      clearGatewayClassStatus(opts.gatewayClass);
    }
    if (process.env.KG_CONTROLLER !== "external" && opts.deployed) {
      cleanups.push(deployController());
    } else if (process.env.KG_CONTROLLER !== "external") {
      // pepr dev serves its webhooks on port 3000; a second one would fail to start.
      const busy = run("ss", ["-Hltn", "sport = :3000"], { timeoutMs: 10_000 });
      if (busy.code === 0 && busy.stdout.trim() !== "") {
        throw new RunError(
          "port 3000 is in use: another pepr dev (or module) seems to be running against a cluster. Stop it, " +
            "or set KG_CONTROLLER=external to measure the controller that is already running.",
        );
      }
      const controllerLog = join(reportsDir, "conformance-controller.log");
      say(`controller: starting npx pepr dev (output in ${controllerLog})`);
      const t0 = Date.now();
      const out = createWriteStream(controllerLog);
      controller = await startPeprDev({ kubeconfig, kubectl: kubectlBin, echo: out });
      for (const p of otherPeprDevs()) ourPeprPids.add(p);
      cleanups.push(async () => {
        say("controller: stopping pepr dev");
        await controller?.stop();
        out.end();
      });
      say(`controller: ready in ${elapsed(t0)}`);
    }
    if (interrupted) throw new RunError("interrupted");

    await waitForOldNamespaces(300);
    const created = applyGatewayClass(opts.gatewayClass);
    if (created) {
      cleanups.push(() => {
        if (process.env.KG_KEEP_CLUSTER === "1" || !opts.cleanup) return;
        kubectl([
          "delete",
          "gatewayclass",
          opts.gatewayClass,
          "--ignore-not-found",
          "--wait=false",
        ]);
      });
    }
    say(
      `GatewayClass ${opts.gatewayClass}: waiting up to ${opts.gwcTimeoutS}s for Accepted and supportedFeatures`,
    );
    const features = await waitForGatewayClass(opts.gatewayClass, opts.gwcTimeoutS);
    say(
      `GatewayClass ${opts.gatewayClass}: Accepted; supportedFeatures (${features.length}): ${features.join(", ")}`,
    );

    if (opts.ingress) {
      const run = startIngressBeside(opts.strict);
      beside.run = run;
      // The first cleanup: the controller and cluster stay until the Ingress run is done.
      cleanups.push(async () => {
        say("ingress: waiting for the Ingress conformance suite to finish");
        beside.code = await run.done;
      });
    }

    const work = mkdtempSync(join(tmpdir(), "kg-conformance-"));
    cleanups.push(() => rmSync(work, { recursive: true, force: true }));
    const reportTmp = join(work, "report.yaml");
    const impl = implementation();
    const args = [
      "-test.v",
      "-test.run=^TestConformance$",
      "-test.timeout=6h",
      "-test.count=1",
      `-gateway-class=${opts.gatewayClass}`,
      `-conformance-profiles=${opts.profiles}`,
      `-report-output=${reportTmp}`,
      `-organization=${impl.organization}`,
      `-project=${impl.project}`,
      `-url=${impl.url}`,
      `-version=${impl.version}`,
      `-contact=${impl.contact}`,
      `-cleanup-base-resources=${opts.cleanup}`,
      `-cleanup-test-resources=true`,
      `-usable-address=${opts.usableAddress}`,
      `-unusable-address=${opts.unusableAddress}`,
    ];
    if (opts.runTest) args.push(`-run-test=${opts.runTest}`);
    if (opts.skipTests) args.push(`-skip-tests=${opts.skipTests}`);
    if (opts.debug) args.push("-debug");
    if (opts.continueAfterSetupFailure) args.push("-kengine.continue-after-setup-failure");
    if (opts.timeoutOverrides) args.push(`-timeout-config-overrides=${opts.timeoutOverrides}`);

    const logPath = join(reportsDir, "conformance.log");
    say(
      `suite: ${opts.version}, running profiles ${opts.profiles}${opts.runTest ? `, test ${opts.runTest}` : ""} (log: ${logPath})`,
    );
    const watch = watchForInterference(ourPeprPids, process.env.KG_CONTROLLER === "external");
    const t0 = Date.now();
    const code = await runSuite(bin, args, logPath, c => (child = c), !opts.runTest);
    child = undefined;
    const suiteTime = elapsed(t0);
    const disturbed = watch.stop();
    say(`suite: exited ${code} after ${suiteTime} (total ${elapsed(started)})`);

    if (interrupted && opts.cleanup) {
      // The suite was killed before its own cleanup: remove its base namespaces.
      say("interrupted: deleting the suite's namespaces");
      kubectl([
        "delete",
        "namespace",
        "gateway-conformance-infra",
        "gateway-conformance-app-backend",
        "gateway-conformance-web-backend",
        "--ignore-not-found",
        "--wait=false",
      ]);
    }
    if (!existsSync(reportTmp)) {
      const why = diagnoseLog(readFileSync(logPath, "utf8"));
      throw new RunError(
        `the suite wrote no report${interrupted ? " (interrupted)" : ""}: it stopped before running the tests.\n` +
          (why.length
            ? `last messages from ${logPath}:\n${why.map(l => `  ${l}`).join("\n")}`
            : `see ${logPath}`),
      );
    }
    // A disturbed run's report must not replace the last good one.
    const reportPath = join(
      reportsDir,
      disturbed ? "conformance-report.disturbed.yaml" : "conformance-report.yaml",
    );
    copyFileSync(reportTmp, reportPath);
    const summary = summarizeReportYaml(readFileSync(reportPath, "utf8"));
    process.stdout.write(`\n${formatSummary(summary)}\n\n`);
    const logText = readFileSync(logPath, "utf8");
    if (summary.failedTests.length > 0) {
      const reasons = failureReasons(logText, summary.failedTests);
      process.stdout.write("first error of each failed test (full output in the log):\n");
      for (const [t, r] of reasons)
        process.stdout.write(`  ${t}: ${r || "(no testify error found)"}\n`);
      process.stdout.write("\n");
    }
    if (logText.includes(setupFailedMarker)) {
      const why = diagnoseLog(logText.slice(0, logText.indexOf(setupFailedMarker)));
      say(
        "WARNING: the suite's setup FAILED and the tests ran anyway (--continue-after-setup-failure); " +
          "these results are measured against an incomplete setup. Setup stopped at:\n" +
          why.map(l => `  ${l}`).join("\n"),
      );
    }
    say(`report: ${reportPath}; suite ran ${suiteTime}`);
    if (disturbed) {
      throw new RunError(
        `the run was disturbed (${disturbed}); its report is in ${reportPath}, reports/conformance-report.yaml is unchanged`,
      );
    }
    if (opts.strict && summary.totalFailed > 0) {
      say(`--strict: ${summary.failedTests.length} test(s) failed`);
      return 1;
    }
    return 0;
  } catch (e) {
    if (e instanceof RunError) {
      process.stderr.write(`conformance: ERROR: ${e.message}\n`);
      return 2;
    }
    process.stderr.write(
      `conformance: ERROR: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
    );
    return 2;
  } finally {
    for (const c of cleanups.reverse()) {
      try {
        await c();
      } catch (e) {
        process.stderr.write(
          `conformance: cleanup: ${e instanceof Error ? e.message : String(e)}\n`,
        );
      }
    }
  }
}

if (require.main === module) {
  main().then(
    code => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`conformance: ERROR: ${String(e)}\n`);
      process.exit(2);
    },
  );
}
