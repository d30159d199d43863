/**
 * The shared Gateway of the failure-isolation suites (tests/e2e/isolation.test.ts,
 * tests/e2e/blast-radius.test.ts): the sample's echo backend and healthy route, Gateway `demo`
 * with an HTTP and an HTTPS listener (self-signed wildcard certificate), 2 proxy pods; how to
 * wait for it to settle, replace its proxy pods one at a time, and add a section to
 * reports/e2e.json.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eventually, kubectl, kubectlOk } from "./kube";
import { demoSample } from "./manifests";
import { repoRoot } from "./paths";
import { proxyPods as listProxyPods } from "./proxy-pods";

export const GATEWAY = "demo";

export const jsonpath = (args: string[], path: string): string =>
  kubectl([...args, "-o", `jsonpath=${path}`]).stdout.trim();

/** A self-signed certificate and key in `dir` (`<name>.crt`, `<name>.key`); returns the PEM. */
export function selfSigned(
  dir: string,
  name: string,
  extra: readonly string[],
  curve = "P-256",
): string {
  execFileSync("openssl", [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    `ec_paramgen_curve:${curve}`,
    "-nodes",
    "-keyout",
    join(dir, `${name}.key`),
    "-out",
    join(dir, `${name}.crt`),
    "-days",
    "30",
    "-subj",
    `/CN=${name}`,
    ...extra,
  ]);
  return readFileSync(join(dir, `${name}.crt`), "utf8");
}

/**
 * The sample (echo backend, GatewayClass, healthy route `echo` for `stable.<domain>`) in `ns`
 * and Gateway `demo`: HTTP on 80, HTTPS on 443 for `*.<domain>` with a self-signed
 * certificate made in `dir`; `spec` is merged into the Gateway's spec (e.g. allowedListeners).
 */
export function applyDemoGateway(ns: string, dir: string, domain: string, spec: object = {}): void {
  kubectlOk(["apply", "-f", "-"], demoSample(ns, `stable.${domain}`));
  selfSigned(dir, "tls", ["-addext", `subjectAltName=DNS:*.${domain}`]);
  kubectlOk([
    "create",
    "secret",
    "tls",
    "shared-cert",
    "-n",
    ns,
    `--cert=${join(dir, "tls.crt")}`,
    `--key=${join(dir, "tls.key")}`,
  ]);
  kubectlOk(
    ["apply", "-f", "-"],
    JSON.stringify({
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "Gateway",
      metadata: { name: GATEWAY, namespace: ns },
      spec: {
        gatewayClassName: "kengine",
        ...spec,
        listeners: [
          { name: "http", protocol: "HTTP", port: 80 },
          {
            name: "https",
            protocol: "HTTPS",
            port: 443,
            hostname: `*.${domain}`,
            tls: { certificateRefs: [{ name: "shared-cert" }] },
          },
        ],
      },
    }),
  );
}

/** The Gateway's proxy pods that are not being deleted. */
export const proxyPods = (ns: string): { name: string; ready: boolean }[] =>
  listProxyPods(ns, GATEWAY)
    .filter(p => !p.deleting)
    .map(({ name, ready }) => ({ name, ready }));

export function condition(ns: string, kind: string, name: string, path: string): string {
  return jsonpath(["get", kind, name, "-n", ns], path);
}

export const gatewayProgrammed = (ns: string): string =>
  condition(
    ns,
    "gateway",
    GATEWAY,
    "{.status.conditions[?(@.type=='Programmed')].status}|{.status.conditions[?(@.type=='Programmed')].message}",
  );

/** The healthy route's Accepted status on its parent. */
export const healthyAccepted = (ns: string): string =>
  condition(
    ns,
    "httproute",
    "echo",
    "{.status.parents[0].conditions[?(@.type=='Accepted')].status}",
  );

/** Both proxies run the Gateway's current config. */
export const allProgrammed = (ns: string, timeoutMs = 180_000) =>
  eventually(
    "the Gateway to be Programmed=True with 2/2 proxies",
    () => {
      const g = gatewayProgrammed(ns);
      return g.startsWith("True|2/2 ") ? g : undefined;
    },
    timeoutMs,
    500,
  );

/**
 * Settled: exactly two proxy pods, both ready, and the Gateway 2/2 (a new listener port rolls
 * the proxies' Deployment: a third pod may come and go after the first 2/2).
 */
export const settled = (ns: string, timeoutMs = 180_000) =>
  eventually(
    "two ready proxy pods and the Gateway Programmed=True 2/2",
    () => {
      const pods = proxyPods(ns);
      const g = gatewayProgrammed(ns);
      // the Deployment's rollout is over: its generation observed, every replica updated and ready
      const [generation, observed, replicas, updated, ready] = jsonpath(
        ["get", "deployment", "-n", ns, "-l", `gateway.networking.k8s.io/gateway-name=${GATEWAY}`],
        "{.items[0].metadata.generation} {.items[0].status.observedGeneration} {.items[0].status.replicas} {.items[0].status.updatedReplicas} {.items[0].status.readyReplicas}",
      ).split(" ");
      const rolledOut =
        generation === observed && replicas === "2" && updated === "2" && ready === "2";
      return rolledOut && pods.length === 2 && pods.every(p => p.ready) && g.startsWith("True|2/2 ")
        ? pods
        : undefined;
    },
    timeoutMs,
    500,
  );

/**
 * Deletes every proxy pod and waits for its replacement, one at a time: after each deletion
 * two ready pods (none of them the deleted one) and the Gateway Programmed 2/2. Returns the
 * names of the pods replaced.
 */
export async function replaceEveryProxyPod(ns: string, timeoutMs = 180_000): Promise<string[]> {
  const original = (await settled(ns, timeoutMs)).map(p => p.name);
  for (const pod of original) {
    kubectlOk(["delete", "pod", pod, "-n", ns, "--wait=true"]);
    await eventually(
      `a replacement for ${pod}, both proxies ready`,
      () => {
        const pods = proxyPods(ns);
        return pods.length === 2 && pods.every(p => p.ready && p.name !== pod) ? pods : undefined;
      },
      timeoutMs,
      500,
    );
    await allProgrammed(ns, timeoutMs);
  }
  return original;
}

/** Sets `section` of reports/e2e.json (suite, date, commit, then `body`); keeps the rest. */
export function writeReportSection(section: string, suite: string, body: object): void {
  const file = join(repoRoot, "reports", "e2e.json");
  const report = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  const commit = spawnSync("git", ["rev-parse", "--short", "HEAD"], {
    cwd: repoRoot,
    encoding: "utf8",
  }).stdout.trim();
  report[section] = { suite, date: new Date().toISOString(), commit, ...body };
  writeFileSync(file, JSON.stringify(report, null, 2) + "\n");
}

/** One scenario a suite proved: what, and how many checks on real traffic or the API. */
export interface ScenarioRow {
  readonly scenario: string;
  readonly proved: string;
  readonly checks: number;
}

/** Writes a suite's passed scenarios as `section` of reports/e2e.json (nothing when none passed). */
export function writeScenarioRows(
  section: string,
  suite: string,
  startedMs: number,
  rows: readonly ScenarioRow[],
): void {
  if (rows.length === 0) return;
  writeReportSection(section, suite, {
    durationMs: Date.now() - startedMs,
    scenariosPassed: rows.length,
    checks: rows.reduce((n, r) => n + r.checks, 0),
    scenarios: rows,
  });
}
