/**
 * An upgrade from the previous build keeps traffic flowing, in deployed mode
 * with the Helm chart: the previous build (the commit in hack/upgrade-from, built by
 * hack/helm.ts's previousBuild and cached) is installed with `helm install`, the sample is
 * served, a client sends a request every 20 ms through the Gateway, and the current build is
 * installed over it as docs/operations.md §10 says (our CRDs applied, then `helm upgrade`).
 * Checked: no request failed; the new admission and watcher pods run the current module; the
 * new watcher verified every proxy without loading any config into it (Caddy's own log counts
 * every POST /load) and no proxy pod was replaced; a route change afterwards is served.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { peprNamespace } from "../../hack/deployed";
import {
  adoptNamespace,
  chartOf,
  currentDist,
  installChart,
  localHelm,
  previousBuild,
  uninstallChart,
} from "../../hack/helm";
import { admissionAccount } from "../../hack/service-accounts";
import cfg from "../../package.json";
import { jsonpath } from "../support/demo-gateway";
import { sampleServes } from "../support/deployed-checks";
import { createNamespace, deleteNamespace, eventually, kubectlOk } from "../support/kube";
import { kubeconfigPath, kubectlBin, localDir, repoRoot } from "../support/paths";
import { configLoads, kengineProxyRows, verifiedSince } from "../support/proxy-pods";
import { get, steadyClient } from "../support/traffic";

const HOST = "helm-upgrade.kengine.local";
const CHANGED = "after.helm-upgrade.kengine.local";

/** The module hash a chart's Deployments run (values.yaml `hash:`). */
const moduleHash = (chart: string): string =>
  /^hash:\s*'?([0-9a-f]+)'?/m.exec(readFileSync(join(chart, "values.yaml"), "utf8"))?.[1] ?? "";

/** The module hash each running controller pod was started with (its last arg), by role. */
const runningHashes = (): string[] =>
  kubectlOk([
    "get",
    "pods",
    "-n",
    peprNamespace,
    "-l",
    "pepr.dev/controller",
    "-o",
    'jsonpath={range .items[*]}{.metadata.labels.pepr\\.dev/controller},{.spec.containers[0].args[1]},{.metadata.deletionTimestamp}{"\\n"}{end}',
  ])
    .trim()
    .split("\n")
    .filter(Boolean)
    .sort();

const names = (rows: readonly string[]) => rows.map(r => r.split(",")[0]!);
const proxyPods = (ns: string): string[] =>
  kubectlOk([
    "get",
    "pods",
    "-n",
    ns,
    "-l",
    "app.kubernetes.io/component=proxy",
    "-o",
    'jsonpath={range .items[*]}{.metadata.name},{.metadata.uid},{.status.containerStatuses[0].restartCount}{"\\n"}{end}',
  ])
    .trim()
    .split("\n")
    .filter(Boolean)
    .sort();

describe("helm upgrade from the previous build while traffic flows", () => {
  let o: Parameters<typeof installChart>[0];
  let previous = "";
  let ns = "";
  let address = "";
  let installed = false;

  beforeAll(async () => {
    const prev = previousBuild();
    if (!prev.ok) throw new Error(prev.error);
    previous = prev.value;
    const current = currentDist();
    if (!current.ok) throw new Error(current.error);
    o = localHelm(kubeconfigPath, kubectlBin, localDir);
    adoptNamespace(o);
    const r = installChart(o, chartOf(previous));
    if (!r.ok) throw new Error(`installing the previous build: ${r.error}`);
    installed = true;
    ns = createNamespace("helm-upgrade");
    address = (await sampleServes(ns, HOST)).address;
  }, 1_200_000);

  afterAll(() => {
    if (ns) deleteNamespace(ns);
    if (installed) uninstallChart(o);
  }, 300_000);

  it("upgrades to the current build: no failed request, no proxy replaced (or reloaded, unless the config changed), then a route change is served", async () => {
    const current = chartOf(join(repoRoot, "dist"));
    const [from, to] = [moduleHash(chartOf(previous)), moduleHash(current)];
    // An upgrade at all: the previous build runs a different module.
    expect(from).toMatch(/^[0-9a-f]{16,}$/);
    expect(to).toMatch(/^[0-9a-f]{16,}$/);
    expect(from).not.toBe(to);
    expect(runningHashes()).toEqual([
      `admission,${from},`,
      `admission,${from},`,
      `watcher,${from},`,
    ]);

    // Settled first: both echo pods Ready (a backend becoming Ready changes the config), then
    // both KengineProxy rows Synced with one hash and unchanged for 5 s.
    kubectlOk(["rollout", "status", "deployment/echo", "-n", ns, "--timeout=120s"]);
    const before = await eventually(
      "both KengineProxy rows Synced with one hash, unchanged for 5 s",
      async () => {
        const first = kengineProxyRows(ns);
        await new Promise(r => setTimeout(r, 5000));
        const rows = kengineProxyRows(ns);
        return rows.length === 2 &&
          JSON.stringify(rows) === JSON.stringify(first) &&
          rows.every(r => r.synced === "True" && r.applied === rows[0]!.applied)
          ? rows
          : undefined;
      },
      180_000,
      500,
    );
    const podsBefore = proxyPods(ns);
    const loadsBefore = configLoads(ns, names(podsBefore));

    const client = steadyClient(address, HOST);
    // docs/operations.md §10: the CRDs first (helm never upgrades crds/), then the chart.
    kubectlOk([
      "apply",
      "--server-side",
      "-f",
      join(repoRoot, "dist", "kengine-gateway-crds.yaml"),
    ]);
    const upgradedAt = Date.now();
    const r = installChart(o, current);
    if (!r.ok) throw new Error(r.error);
    // `helm upgrade --wait` returns once the new pods are ready; the old ones may still be in
    // their termination grace period (a real kubelet keeps them Terminating for seconds), as a
    // user running `kubectl get pods` then sees. Once they are gone, only the new version may be left.
    expect(
      await eventually(
        "only the upgraded controller pods",
        async () => {
          // no pod in its grace period (the third field is its deletionTimestamp)
          const hashes = runningHashes();
          return hashes.every(h => h.endsWith(",")) ? hashes : undefined;
        },
        60_000,
        500,
      ),
    ).toEqual([`admission,${to},`, `admission,${to},`, `watcher,${to},`]);
    // The current chart's admission ServiceAccount (the previous one ran admission as pepr-<uuid>).
    expect(
      jsonpath(
        ["get", "pods", "-n", peprNamespace, "-l", "pepr.dev/controller=admission"],
        "{.items[*].spec.serviceAccountName}",
      ),
    ).toBe(`${admissionAccount(cfg.pepr.uuid)} ${admissionAccount(cfg.pepr.uuid)}`);

    // The new watcher reached every proxy (verifying moves lastSyncTime), no pod replaced. When
    // the new build renders the same config (the usual case), no proxy is reloaded; when it
    // renders another (e.g. since 2026-11-24 the Bundled proxies' listener routes are a route
    // table), each proxy loads it once in place, without a failed request (checked below).
    const after = await verifiedSince(ns, 2, undefined, upgradedAt);
    const loadsAfter = configLoads(ns, names(podsBefore));
    if (after[0]!.applied === before[0]!.applied) expect(loadsAfter).toEqual(loadsBefore);
    else
      for (const [pod, n] of Object.entries(loadsAfter))
        expect(n).toBeGreaterThan(loadsBefore[pod]!);
    expect(proxyPods(ns)).toEqual(podsBefore);

    // The new build is in charge: a route change (admitted by the new admission pods) is served.
    kubectlOk([
      "patch",
      "httproute",
      "echo",
      "-n",
      ns,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { hostnames: [HOST, CHANGED] } }),
    ]);
    await eventually(
      "the changed route served",
      async () => ((await get(address, CHANGED)).status === 200 ? true : undefined),
      60_000,
      250,
    );
    const result = await client.stop();
    expect(result.sent).toBeGreaterThan(50);
    expect(result.failures).toEqual([]);
  }, 600_000);
});
