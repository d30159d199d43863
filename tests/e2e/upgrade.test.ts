/**
 * Upgrade without downtime: the running controller (`pepr dev` of this module) is replaced
 * by a newer build (the same sources rebuilt by `pepr dev` from a copy, with a marker that makes
 * its bundle differ; the version stays: the default proxy image is tagged with package.json's
 * version, so a version bump rolls the proxy pods on purpose, a different upgrade) while a client sends a request every 20 ms through the Gateway. The old one stops the
 * way a Recreate rollout stops it (SIGTERM), then the new one starts. Checked: no request
 * failed, no proxy pod was replaced or restarted, the new controller adopted the proxies
 * without loading any config into them (Caddy's own log counts every POST /load), and it is
 * in charge afterwards (a route change is served).
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { moduleCopy, PeprDev, startPeprDev } from "../../hack/pepr-dev";
import { startModule } from "../support/module";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { kubeconfigPath, kubectlBin, localDir, repoRoot } from "../support/paths";
import { configLoads, kengineProxyRows, verifiedSince } from "../support/proxy-pods";

const HOST = "upgrade.kengine.local";

function get(address: string, host: string): Promise<number> {
  return new Promise(resolve => {
    const req = request(
      { host: address, port: 80, path: "/", headers: { Host: host }, timeout: 5000, agent: false },
      res => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", () => resolve(0));
    req.end();
  });
}

/**
 * The module's sources rebuilt with a marker: a newer build of the same code. The version is
 * kept (see the header): this test is about replacing the controller alone.
 */
function newerBuild(): { dir: string } {
  const dir = moduleCopy("kg-upgrade-");
  const entry = join(dir, "pepr.ts");
  writeFileSync(entry, `${readFileSync(entry, "utf8")}\n// upgrade test: a newer build\n`);
  return { dir };
}

const pods = (ns: string): { name: string; restarts: string }[] =>
  kubectlOk([
    "get",
    "pods",
    "-n",
    ns,
    "-l",
    "app.kubernetes.io/component=proxy",
    "-o",
    'jsonpath={range .items[*]}{.metadata.name},{.status.containerStatuses[0].restartCount}{"\\n"}{end}',
  ])
    .trim()
    .split("\n")
    .filter(Boolean)
    .map(l => {
      const [name, restarts] = l.split(",");
      return { name: name!, restarts: restarts! };
    })
    .sort((a, b) => a.name.localeCompare(b.name));

/** The hash (12 characters, as KengineProxy shows it) of the last config pushed to each proxy. */
function lastPushed(output: string): Map<string, string> {
  const pushed = new Map<string, string>();
  for (const line of output.split("\n")) {
    if (!line.includes('"proxy pushed"')) continue;
    try {
      const entry = JSON.parse(line.slice(line.indexOf("{"))) as { proxy?: string; hash?: string };
      if (entry.proxy && entry.hash) pushed.set(entry.proxy, entry.hash.slice(0, 12));
    } catch {
      // not a log entry
    }
  }
  return pushed;
}

describe("upgrading the controller while traffic flows", () => {
  let dev: PeprDev | undefined;
  let ns: string;
  let address: string;
  let newer: { dir: string } | undefined;
  let stopClient: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    dev = await startModule();
    ns = createNamespace("upgrade");
    const sample = readFileSync(join(repoRoot, "hack", "samples", "demo.yaml"), "utf8")
      .split(/^---$/m)
      .filter(doc => !/kind: Namespace/.test(doc))
      .join("---")
      .replace(/namespace: kengine-demo/g, `namespace: ${ns}`)
      .replace(/demo\.kengine\.local/g, HOST);
    kubectlOk(["apply", "-f", "-"], sample);
    const field = (path: string) =>
      kubectl(["get", "gateway", "demo", "-n", ns, "-o", `jsonpath=${path}`]).stdout;
    address = await eventually(
      "the Gateway Programmed by both proxies, with an address",
      () => {
        const programmed = field("{.status.conditions[?(@.type=='Programmed')].message}");
        const addr = field("{.status.addresses[0].value}");
        return programmed.startsWith("2/2 ") && addr ? addr : undefined;
      },
      180_000,
      500,
    );
    await eventually("a 200 through the Gateway", async () =>
      (await get(address, HOST)) === 200 ? true : undefined,
    );
    // Both echo replicas ready: one ready replica already answers 200, and the second one's
    // readiness is an endpoint change the controller pushes (on the real node it can come seconds
    // later, during the switch, which is a legitimate push and not what this test is about).
    kubectlOk(["rollout", "status", "deployment/echo", "-n", ns, "--timeout=180s"]);
  });

  afterAll(async () => {
    // A failed assertion leaves the client running: stop it, or it sends to whatever address
    // the next suite's pods take (CI saw another suite count its requests).
    await stopClient?.();
    // Kept for troubleshooting (the cluster's logs are in the same directory).
    if (dev) writeFileSync(join(localDir, "logs", "upgrade-controller.log"), dev.output());
    await dev?.stop();
    if (ns) deleteNamespace(ns);
    if (newer) rmSync(newer.dir, { recursive: true, force: true });
  });

  it("replaces the controller with a newer build: no failed request, no proxy reloaded or restarted", async () => {
    // KengineProxy rows show a routine hash change only once it has settled (about 5 s), so the
    // rows are taken as "before" only when they show what the controller last pushed.
    const before = await eventually(
      "two Synced KengineProxy rows with the hash the controller last pushed to each",
      () => {
        const rows = kengineProxyRows(ns);
        const pushed = lastPushed(dev!.output());
        return rows.length === 2 &&
          rows.every(r => r.synced === "True" && pushed.get(`${ns}/${r.name}`) === r.applied) &&
          rows[0]!.applied === rows[1]!.applied
          ? rows
          : undefined;
      },
      60_000,
    );
    const podsBefore = pods(ns);
    const loadsBefore = configLoads(
      ns,
      podsBefore.map(p => p.name),
    );
    newer = newerBuild();

    // A request every 20 ms for the whole switch.
    const results: number[] = [];
    let stopped = false;
    const client = (async () => {
      while (!stopped) {
        results.push(await get(address, HOST));
        await new Promise(r => setTimeout(r, 20));
      }
    })();
    stopClient = async () => {
      stopped = true;
      await client;
    };

    // What the proxies run at the switch: the old controller's last push to each. It equals
    // `before` unless the cluster changed meanwhile; either way it is what the new one must adopt.
    const old = dev!;
    await old.stop(); // SIGTERM, as a Recreate rollout does
    dev = undefined;
    const running = lastPushed(old.output());
    const atSwitch = before.map(r => running.get(`${ns}/${r.name}`) ?? r.applied);
    expect(new Set(atSwitch).size).toBe(1);
    const replacedAt = Date.now();
    dev = await startPeprDev({
      kubeconfig: kubeconfigPath,
      kubectl: kubectlBin,
      moduleDir: newer.dir,
    });
    await dev.waitForOutput(/became leader/, 120_000);
    // The new controller adopts both proxies (its log says so per proxy). Waited for in its own
    // log, not in the KengineProxy rows: lastSyncTime has one-second resolution, so a verify the
    // old controller wrote just before it stopped can look like the new one's (CI saw that).
    const adopted = await eventually(
      "the new controller's log to say it adopted both proxies (or pushed to one)",
      () => {
        const output = dev!.output();
        if (/"msg":"proxy pushed"/.test(output)) return output;
        const names = new Set(
          output
            .split("\n")
            .filter(l => l.includes('"msg":"proxy adopted"'))
            .map(l => /"proxy":"([^"]+)"/.exec(l)?.[1]),
        );
        return names.size >= 2 ? output : undefined;
      },
      120_000,
      250,
    );
    expect(adopted).not.toMatch(/"msg":"proxy pushed"/);
    // ... and the status says so: same hash, verified since the switch.
    const after = await verifiedSince(ns, 2, atSwitch[0], replacedAt);
    expect(
      configLoads(
        ns,
        after.map(r => r.name),
      ),
    ).toEqual(loadsBefore);
    expect(pods(ns)).toEqual(podsBefore);

    // The new controller is in charge: a route change reaches the proxies.
    kubectlOk([
      "patch",
      "httproute",
      "echo",
      "-n",
      ns,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { hostnames: [HOST, "after.upgrade.kengine.local"] } }),
    ]);
    await eventually("the changed route served", async () =>
      (await get(address, "after.upgrade.kengine.local")) === 200 ? true : undefined,
    );
    await stopClient();
    expect(results.length).toBeGreaterThan(50);
    expect(results.filter(s => s !== 200)).toEqual([]);
  }, 600_000);
});
