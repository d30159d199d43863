/**
 * Ingest once (issue 16, item 2), counted on the real API server: a controller process opens
 * exactly one watch per watched kind (the API server's own gauge of open WATCH requests,
 * `apiserver_longrunning_requests`, before and after the controller starts): no kind is
 * watched twice, and none is left unwatched.
 */
import { ChildProcess, spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { LIST_PATHS } from "../../capabilities/reconcile/kinds";
import { createNamespace, deleteNamespace, eventually } from "../support/kube";
import { kubeconfigPath, kubectlBin, repoRoot } from "../support/paths";

/** Open WATCH requests per "group/resource", from the API server's metrics. */
function openWatches(): Map<string, number> {
  // several MiB: more than kubectl()'s default output buffer
  const r = spawnSync(kubectlBin, ["--kubeconfig", kubeconfigPath, "get", "--raw", "/metrics"], {
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
    timeout: 60_000,
  });
  if (r.status !== 0) throw new Error(`kubectl get --raw /metrics: ${r.stderr || String(r.error)}`);
  const text = r.stdout;
  const counts = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line.startsWith("apiserver_longrunning_requests{")) continue;
    const labels = Object.fromEntries(
      [...line.matchAll(/(\w+)="([^"]*)"/g)].map(m => [m[1], m[2]] as const),
    );
    if (labels.verb !== "WATCH" || labels.subresource) continue;
    const key = `${labels.group ?? ""}/${labels.resource}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1)));
  }
  return counts;
}

/** "group/resource" of each watched kind, from its list path. */
const watchedResources = Object.values(LIST_PATHS).map(p => {
  const parts = p.split("/");
  return `${parts[1] === "api" ? "" : parts[2]}/${parts[parts.length - 1]}`;
});

describe("ingest once", () => {
  let ns: string;
  let proc: ChildProcess | undefined;
  let started = false;

  beforeAll(() => {
    ns = createNamespace("ingest");
  });
  afterAll(async () => {
    if (proc && proc.exitCode === null) {
      const exited = new Promise(r => proc!.once("exit", r));
      proc.kill("SIGTERM");
      await exited;
    }
    deleteNamespace(ns);
  });

  it("opens exactly one watch per watched kind", async () => {
    const before = openWatches();
    proc = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        join(repoRoot, "tests", "support", "controller-instance.ts"),
        ns,
        `ingest-${ns}`,
        "ingest",
      ],
      // the test's own environment (jest's process.env is not the one a child inherits)
      { cwd: repoRoot, env: { ...process.env }, stdio: ["ignore", "pipe", "inherit"] },
    );
    proc.stdout!.on("data", (d: Buffer) => {
      if (d.toString().includes('"started":true')) started = true;
    });
    await eventually("the controller started", () => started || undefined, 120_000);
    const deltas = await eventually(
      "one more open watch for every watched kind",
      () => {
        const after = openWatches();
        const d = Object.fromEntries(
          watchedResources.map(r => [r, (after.get(r) ?? 0) - (before.get(r) ?? 0)]),
        );
        return Object.values(d).every(n => n === 1) ? d : undefined;
      },
      60_000,
      500,
    );
    expect(Object.keys(deltas).sort()).toEqual([...new Set(watchedResources)].sort());
  }, 200_000);
});
