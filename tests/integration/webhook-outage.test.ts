/**
 * The admission webhook as `npm run build` ships it (dist/pepr-module-<uuid>.yaml, split by
 * hack/webhook.ts), registered on the real API server while no admission pod runs: the
 * module's Service exists in pepr-system but has no endpoints, as when every admission pod is
 * down. Objects that are not ours must be admitted; objects the object alone proves ours
 * (Gateways of our class, GatewayClasses with our controllerName, KengineParameters) must be
 * refused with the API server's "failed calling webhook" error naming our webhook.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import cfg from "../../package.json";
import { routeCreateEvent, webhooksFailedOpen } from "../support/audit";
import { createNamespace, deleteNamespace, eventually, kubectlOk } from "../support/kube";
import { kubeconfigPath, kubectlBin, repoRoot } from "../support/paths";
import { currentDist } from "../../hack/helm";
import { OTHERS_SUFFIX } from "../../hack/webhook";

const uuid = cfg.pepr.uuid;
const moduleYaml = join(repoRoot, "dist", `pepr-module-${uuid}.yaml`);
const CONFIG_NAME = "kengine-webhook-outage-test";

/** kubectl once (the shared helper retries "failed calling webhook", which is the point here). */
const once = (args: readonly string[], input?: string) => {
  const r = spawnSync(kubectlBin, ["--kubeconfig", kubeconfigPath, ...args], {
    input,
    encoding: "utf8",
    timeout: 60_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
};
const create = (yaml: string) => once(["create", "-f", "-"], yaml);

interface Doc {
  readonly kind: string;
  readonly metadata: { name: string; namespace?: string };
  readonly webhooks?: readonly { name: string; failurePolicy: string }[];
}

describe("admission webhook with every admission pod down", () => {
  let ns = "";
  let webhookNames: string[] = [];

  beforeAll(async () => {
    // Built here unless an earlier suite left a build of the sources as they are: this suite may
    // run first (jest orders suites by its timing cache, which a clean clone lacks).
    const dist = currentDist();
    if (!dist.ok) throw new Error(dist.error);
    const docs = parseAllDocuments(readFileSync(moduleYaml, "utf8"))
      .map(d => d.toJS() as Doc | null)
      .filter((d): d is Doc => d !== null);
    const vwc = docs.find(d => d.kind === "ValidatingWebhookConfiguration");
    const service = docs.find(d => d.kind === "Service" && d.metadata.name === `pepr-${uuid}`);
    if (!vwc || !service) throw new Error(`${moduleYaml}: no webhook configuration or Service`);
    webhookNames = (vwc.webhooks ?? []).map(w => w.name);
    // The module's Service with no pod behind it: the API server finds no endpoint.
    once(["create", "namespace", "pepr-system"]);
    kubectlOk(["apply", "-f", "-"], JSON.stringify(service));
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({ ...vwc, metadata: { ...vwc.metadata, name: CONFIG_NAME } }),
    );
    ns = createNamespace("outage");
    // The API server picks webhook configurations up asynchronously.
    await eventually(
      "the webhook configuration in effect",
      () => {
        const r = once(["create", "--dry-run=server", "-f", "-"], kengineParameters(ns, "probe"));
        return r.code !== 0 && r.stderr.includes("failed calling webhook") ? true : undefined;
      },
      60_000,
    );
  }, 420_000);

  afterAll(() => {
    once(["delete", "validatingwebhookconfiguration", CONFIG_NAME, "--ignore-not-found"]);
    // A Service left behind in pepr-system makes a later `helm install` of the module refuse
    // ("exists and cannot be imported into the current release"): helm-upgrade failed so when
    // it ran after this suite. (The namespace stays: one being deleted would refuse the next
    // suite's objects.)
    once(["delete", "service", `pepr-${uuid}`, "-n", "pepr-system", "--ignore-not-found"]);
    if (ns) deleteNamespace(ns);
  });

  it("is split: one webhook that fails closed, one that fails open", () => {
    expect(webhookNames).toEqual([`pepr-${uuid}.pepr.dev`, `pepr-${uuid}${OTHERS_SUFFIX}`]);
  });

  it("admits objects of other controllers and kinds it cannot prove ours", async () => {
    const objects = [
      gatewayClass(`other-${ns}`, "example.com/other-controller"),
      gateway(ns, "theirs", `other-${ns}`),
      `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: theirs, namespace: ${ns}}
spec:
  parentRefs: [{name: theirs}]
  rules: [{backendRefs: [{name: web, port: 8080}]}]`,
      `apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: theirs, namespace: ${ns}}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: elsewhere}]
  to: [{group: "", kind: Service}]`,
    ];
    for (const o of objects) {
      const r = create(o);
      expect({ object: o.split("\n")[1], code: r.code, stderr: r.stderr }).toMatchObject({
        code: 0,
        stderr: "",
      });
    }
    once(["delete", "gatewayclass", `other-${ns}`, "--ignore-not-found"]);
    // The API server's audit log names the webhook it could not reach for the route it stored
    // (what tests/support/deployed-checks.ts relies on to tell an outage from a wrong admission).
    const routeCreate = await eventually(
      "the audit event of creating the HTTPRoute",
      () => routeCreateEvent(ns, "theirs"),
      15_000,
    );
    expect(webhooksFailedOpen(routeCreate)).toEqual([`pepr-${uuid}${OTHERS_SUFFIX}`]);
  });

  it("refuses what is ours by itself, naming the webhook", () => {
    const objects = [
      kengineParameters(ns, "defaults"),
      gatewayClass(`ours-${ns}`, "kengine.io/gateway-controller"),
      gateway(ns, "ours", "kengine"),
    ];
    for (const o of objects) {
      const r = create(o);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(`failed calling webhook "pepr-${uuid}.pepr.dev"`);
    }
  });
});

function kengineParameters(namespace: string, name: string): string {
  return `apiVersion: gateway.kengine.io/v1alpha1
kind: KengineParameters
metadata: {name: ${name}, namespace: ${namespace}}
spec: {proxy: {replicas: 1}}`;
}

const gatewayClass = (name: string, controllerName: string) =>
  `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ${name}}
spec: {controllerName: ${controllerName}}`;

const gateway = (namespace: string, name: string, className: string) =>
  `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: ${name}, namespace: ${namespace}}
spec:
  gatewayClassName: ${className}
  listeners: [{name: http, port: 80, protocol: HTTP}]`;
