/**
 * Blast radius on the local cluster with real Bundled proxies: each
 * hostile tenant object of tests/support/hostile-regressions.ts (hostile query regexes and
 * names, empty header modifiers, ListenerSets whose TLS Secret is mismatched, on a curve Go
 * cannot load, or keyed for the wrong chain certificate), one at a time, on the shared
 * Gateway `demo` beside its healthy route.
 *
 * For each: a steady client on the healthy route sees no failure while the object is applied;
 * the object's verdict settles (programmed, or a False condition with a message on its own
 * status), the healthy route stays Accepted and the Gateway Programmed=True; every proxy pod is
 * deleted and replaced (one at a time) with the client still at no failure and the verdict
 * unchanged; then the object is deleted. Adds a `blastRadius` section to reports/e2e.json.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeObject } from "../../capabilities/snapshot";
import { REGRESSIONS } from "../support/hostile-regressions";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { PeprDev, startModule } from "../support/module";
import {
  GATEWAY,
  allProgrammed,
  applyDemoGateway,
  gatewayProgrammed,
  healthyAccepted,
  jsonpath,
  replaceEveryProxyPod,
  settled,
  writeReportSection,
} from "../support/demo-gateway";
import { SteadyResult, get, steadyClient } from "../support/traffic";

const DOMAIN = "blast.kengine.local";
const HOST = `stable.${DOMAIN}`;
/** Tight waits: one case must not hide a slow convergence behind a generous timeout. */
const WAIT_MS = 90_000;

interface Row {
  readonly scenario: string;
  readonly requests: number;
  readonly failures: number;
  readonly verdict: string;
  readonly details: object;
}
const rows: Row[] = [];

/**
 * The regression's objects moved into `ns`: namespace `tenant` becomes `ns`, the Gateway
 * parent (`default/gw`) becomes `ns/demo`; server-owned metadata is dropped.
 */
interface Manifest {
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace: string };
  readonly spec?: Readonly<Record<string, unknown>>;
}

function intoNamespace(objects: readonly KubeObject[], ns: string): Manifest[] {
  const parent = { name: GATEWAY, namespace: ns };
  return objects.map(o => {
    const { spec, ...rest } = structuredClone(o) as unknown as Manifest;
    return {
      ...rest,
      metadata: { name: o.metadata.name, namespace: ns },
      ...(spec && {
        spec: {
          ...spec,
          ...(spec.parentRefs !== undefined && { parentRefs: [parent] }),
          ...(spec.parentRef !== undefined && { parentRef: parent }),
        },
      }),
    };
  });
}

const manifest = (objects: readonly Manifest[]): string =>
  objects.map(o => JSON.stringify(o)).join("\n---\n");

interface Condition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
  readonly observedGeneration?: number;
}

/**
 * The object's own conditions for Gateway `demo` once they describe its current generation
 * (a route's parent entry for `demo`; a ListenerSet's conditions and its listeners'),
 * undefined before.
 */
function ownConditions(ns: string, obj: Manifest): Condition[] | undefined {
  const r = kubectl(["get", obj.kind.toLowerCase(), obj.metadata.name, "-n", ns, "-o", "json"]);
  if (r.code !== 0) return undefined;
  const live = JSON.parse(r.stdout) as {
    metadata: { generation: number };
    status?: {
      parents?: { parentRef: { name: string }; conditions?: Condition[] }[];
      conditions?: Condition[];
      listeners?: { name: string; conditions?: Condition[] }[];
    };
  };
  const generation = live.metadata.generation;
  let conditions: Condition[];
  if (obj.kind === "ListenerSet") {
    const own = live.status?.conditions ?? [];
    const listeners = (live.status?.listeners ?? []).flatMap(l =>
      (l.conditions ?? []).map(c => ({ ...c, type: `listener ${l.name} ${c.type}` })),
    );
    if (!own.some(c => c.type === "Accepted") || listeners.length === 0) return undefined;
    conditions = [...own, ...listeners];
  } else {
    const parent = live.status?.parents?.find(p => p.parentRef.name === GATEWAY);
    conditions = parent?.conditions ?? [];
    if (!conditions.some(c => c.type === "Accepted")) return undefined;
  }
  return conditions.every(c => c.observedGeneration === generation) ? conditions : undefined;
}

/**
 * "programmed" when no condition is False (Conflicted=False is the good value), otherwise
 * every False condition with its reason and message; `unexplained`: False conditions without
 * a message.
 */
function verdictOf(conditions: readonly Condition[]): { text: string; unexplained: string[] } {
  const bad = conditions.filter(c => c.status === "False" && !c.type.endsWith("Conflicted"));
  return {
    text:
      bad.length === 0
        ? "programmed"
        : bad.map(c => `${c.type}=False/${c.reason ?? ""}: ${c.message ?? ""}`).join("; "),
    unexplained: bad.filter(c => !c.message).map(c => c.type),
  };
}

const seconds = (ms: number): number => Math.round(ms / 100) / 10;

describe("blast radius: each hostile regression beside a healthy route on a shared Gateway", () => {
  let dev: PeprDev | undefined;
  let ns: string;
  let address: string;
  let dir: string;
  const started = Date.now();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "kg-blast-"));
    dev = await startModule();
    ns = createNamespace("blast");
    // ListenerSets of the test namespace may attach to the shared Gateway.
    applyDemoGateway(ns, dir, DOMAIN, { allowedListeners: { namespaces: { from: "Same" } } });
  }, 420_000);

  afterAll(async () => {
    if (rows.length)
      writeReportSection("blastRadius", "tests/e2e/blast-radius.test.ts", {
        proxyReplicas: 2,
        client: "one GET at a time on the healthy route, new connection each, 20 ms apart",
        durationMs: Date.now() - started,
        scenarios: rows,
      });
    await dev?.stop();
    if (ns) deleteNamespace(ns);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("programs the shared Gateway and serves the healthy route", async () => {
    await settled(ns);
    address = jsonpath(["get", "gateway", GATEWAY, "-n", ns], "{.status.addresses[0].value}");
    expect(address).toMatch(/^127\./);
    await eventually("a 200 on the healthy route", async () => {
      const r = await get(address, HOST, "/");
      return r.status === 200 ? r : undefined;
    });
  });

  it.each(Object.keys(REGRESSIONS))(
    "%s: the healthy route never fails, the object's own status says what became of it",
    async name => {
      const objects = intoNamespace(REGRESSIONS[name]!, ns);
      const hostile = objects.filter(o => o.kind !== "Secret");
      const client = steadyClient(address, HOST, { max: 30_000 });
      let traffic: SteadyResult | undefined;
      let deleted = false;
      const t0 = Date.now();
      try {
        const applied = kubectl(["apply", "-f", "-"], manifest(objects));
        let verdict: string;
        if (applied.code !== 0) {
          // Admission refused it: the refusal is the verdict, nothing reached the proxies.
          expect(applied.stderr).toContain("denied the request");
          verdict = `refused at admission: ${applied.stderr.trim()}`;
        } else {
          const verdicts = await Promise.all(
            hostile.map(o =>
              eventually(
                `the status of ${o.kind} ${o.metadata.name} for its current generation`,
                () => ownConditions(ns, o),
                WAIT_MS,
                500,
              ).then(c => ({ kind: o.kind, ...verdictOf(c) })),
            ),
          );
          verdict = verdicts.map(v => `${v.kind}: ${v.text}`).join(" | ");
          // every False condition says why
          expect(verdicts.flatMap(v => v.unexplained)).toEqual([]);
        }
        const tVerdict = Date.now();
        await settled(ns, WAIT_MS);
        expect(healthyAccepted(ns)).toBe("True");
        const programmed = gatewayProgrammed(ns);
        expect(programmed).toMatch(/^True\|2\/2 /);
        const tSettled = Date.now();

        const replaced = await replaceEveryProxyPod(ns, WAIT_MS);
        expect(replaced).toHaveLength(2);
        const tReplaced = Date.now();
        // the verdict did not change with the new pods (nor was it read too early)
        if (applied.code === 0) {
          const again = hostile.map(o => {
            const c = ownConditions(ns, o);
            return `${o.kind}: ${c ? verdictOf(c).text : "no status for its current generation"}`;
          });
          expect(again.join(" | ")).toBe(verdict);
        }
        expect(healthyAccepted(ns)).toBe("True");
        traffic = await client.stop();

        kubectlOk(["delete", "-f", "-", "--ignore-not-found", "--wait=true"], manifest(objects));
        deleted = true;
        await settled(ns, WAIT_MS);
        await allProgrammed(ns, WAIT_MS);
        const tDeleted = Date.now();

        const timings = {
          verdictS: seconds(tVerdict - t0),
          settledS: seconds(tSettled - tVerdict),
          podsReplacedS: seconds(tReplaced - tSettled),
          deletedS: seconds(tDeleted - tReplaced),
        };
        console.log(
          `${name}: ${traffic.sent} requests, ${traffic.failures.length} failures; verdict ${seconds(tVerdict - t0)} s, settled ${timings.settledS} s, pods replaced ${timings.podsReplacedS} s, deleted ${timings.deletedS} s\n  ${verdict}`,
        );
        rows.push({
          scenario: name,
          requests: traffic.sent,
          failures: traffic.failures.length,
          verdict,
          details: {
            gatewayProgrammed: programmed,
            replacedPods: replaced.length,
            timings,
            failed: traffic.failures.slice(0, 20),
          },
        });
        expect(traffic.sent).toBeGreaterThan(10);
        expect(traffic.failures).toEqual([]);
      } finally {
        if (!traffic) await client.stop();
        // a failed case must not leave its object behind for the next one
        if (!deleted) kubectl(["delete", "-f", "-", "--ignore-not-found"], manifest(objects));
      }
    },
    600_000,
  );
});
