/**
 * The Helm chart `npm run build` writes (dist/<uuid>-chart), rendered and installed with a real
 * helm (the test peer built from hack/peers/helm) the way docs/operations.md says ("With
 * Helm"): `helm lint`, `helm template` (it renders what the module YAML holds, plus our CRDs and
 * Role), `helm install` on the local cluster, whose kubelet runs Pepr's controller image from
 * the chart's Deployments; then the sample answers through a proxy pod and admission refuses a
 * bad route with our message. (dist/ is rebuilt first unless it is a build of the sources as
 * they are.)
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { deployments, objectRefs, peprNamespace } from "../../hack/deployed";
import {
  HELM_RELEASE_BUDGET_BYTES,
  HELM_RELEASE_LIMIT_BYTES,
  chartFiles,
  helmReleaseBytes,
} from "../../hack/dist-check";
import {
  adoptNamespace,
  chartOf,
  currentDist,
  installChart,
  localHelm,
  releaseName,
  releaseNamespace,
  runHelm,
  uninstallChart,
} from "../../hack/helm";
import cfg from "../../package.json";
import { expectBadRouteRefused, sampleServes } from "../support/deployed-checks";
import { createNamespace, deleteNamespace, kubectlOk } from "../support/kube";
import { kubeconfigPath, kubectlBin, localDir, repoRoot } from "../support/paths";

const HOST = "helm.kengine.local";
const dist = join(repoRoot, "dist");
const chart = chartOf(dist);

interface Obj {
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly spec?: { template?: { spec?: { containers?: { image: string; args?: string[] }[] } } };
}
/**
 * Kinds without a namespace (Pepr's chart writes `namespace: pepr-system` on its ClusterRole too;
 * the API server ignores it).
 */
const CLUSTER_SCOPED = new Set([
  "ClusterRole",
  "ClusterRoleBinding",
  "CustomResourceDefinition",
  "Namespace",
  "ValidatingWebhookConfiguration",
  "MutatingWebhookConfiguration",
]);
const key = (o: { kind: string; name: string; namespace?: string }) =>
  `${o.kind} ${CLUSTER_SCOPED.has(o.kind) ? "" : (o.namespace ?? "")}/${o.name}`;

describe("the Helm chart (helm lint, template, install)", () => {
  let o: Parameters<typeof installChart>[0];
  let ns = "";
  let installed = false;

  beforeAll(() => {
    const current = currentDist();
    if (!current.ok) throw new Error(current.error);
    o = localHelm(kubeconfigPath, kubectlBin, localDir);
  }, 900_000);

  afterAll(() => {
    if (ns) deleteNamespace(ns);
    if (installed) uninstallChart(o);
  }, 300_000);

  it("passes helm lint and renders the module YAML's objects, our CRDs and Role", () => {
    const lint = runHelm(o, ["lint", chart]);
    expect({ code: lint.code, out: lint.stdout + lint.stderr }).toMatchObject({ code: 0 });
    expect(lint.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);

    const t = runHelm(o, [
      "template",
      releaseName,
      chart,
      "--namespace",
      releaseNamespace,
      "--include-crds",
    ]);
    expect(t.stderr).toBe("");
    const rendered = parseAllDocuments(t.stdout)
      .map(d => d.toJS() as Obj | null)
      .filter((x): x is Obj => Boolean(x?.kind));
    const renderedKeys = new Set(
      rendered.map(x =>
        key({ kind: x.kind, name: x.metadata.name, namespace: x.metadata.namespace }),
      ),
    );
    // Every object of the module YAML, of our Role and of our CRDs, and nothing else but what
    // only the chart has (Prometheus ServiceMonitors, off by default).
    const want = [
      join(dist, `pepr-module-${cfg.pepr.uuid}.yaml`),
      join(dist, "kengine-gateway-rbac.yaml"),
      join(dist, "kengine-gateway-crds.yaml"),
    ].flatMap(f => objectRefs(readFileSync(f, "utf8")).map(key));
    const wantKeys = new Set([...want, key({ kind: "Namespace", name: peprNamespace })]);
    expect([...wantKeys].filter(k => !renderedKeys.has(k))).toEqual([]);
    expect([...renderedKeys].filter(k => !wantKeys.has(k))).toEqual([]);

    // The Deployments run the same image and module (args name its hash) as the module YAML's.
    const moduleYaml = parseAllDocuments(
      readFileSync(join(dist, `pepr-module-${cfg.pepr.uuid}.yaml`), "utf8"),
    ).map(d => d.toJS() as Obj);
    const containers = (objs: readonly Obj[], name: string) =>
      objs
        .find(x => x.kind === "Deployment" && x.metadata.name === name)
        ?.spec?.template?.spec?.containers?.map(c => ({ image: c.image, args: c.args }));
    for (const d of deployments) {
      expect(containers(rendered, d)).toBeDefined();
      expect(containers(rendered, d)).toEqual(containers(moduleYaml, d));
    }
  });

  it("installs with helm: Pepr's admission and watcher pods roll out on the local cluster", () => {
    adoptNamespace(o);
    const r = installChart(o, chart);
    if (!r.ok) throw new Error(r.error);
    installed = true;
    const status = runHelm(o, [
      "status",
      releaseName,
      "--namespace",
      releaseNamespace,
      "-o",
      "json",
    ]);
    expect((JSON.parse(status.stdout) as { info: { status: string } }).info.status).toBe(
      "deployed",
    );
    const pods = kubectlOk([
      "get",
      "pods",
      "-n",
      peprNamespace,
      "-l",
      "pepr.dev/controller",
      "-o",
      'jsonpath={range .items[*]}{.metadata.labels.pepr\\.dev/controller},{.status.phase}{"\\n"}{end}',
    ])
      .trim()
      .split("\n")
      .sort();
    expect(pods).toEqual(["admission,Running", "admission,Running", "watcher,Running"]);
    ns = createNamespace("helm");
  });

  it("writes a release Secret the size `npm run build` estimated (its 1 MiB check)", () => {
    expect(installed).toBe(true);
    // what the API server's 1 MiB limit counts: the bytes of the Secret's one data value
    const stored = Buffer.from(
      kubectlOk([
        "get",
        "secret",
        "-n",
        releaseNamespace,
        `sh.helm.release.v1.${releaseName}.v1`,
        "-o",
        "jsonpath={.data.release}",
      ]).trim(),
      "base64",
    ).length;
    const estimated = helmReleaseBytes(chartFiles(chart));
    // the estimate leaves out the release's own fields and renders no template but the
    // module Secret's; the budget (HELM_RELEASE_LIMIT_BYTES - HELM_RELEASE_BUDGET_BYTES)
    // covers what it misses
    expect(Math.abs(stored - estimated)).toBeLessThan(
      HELM_RELEASE_LIMIT_BYTES - HELM_RELEASE_BUDGET_BYTES,
    );
    expect(stored).toBeLessThan(HELM_RELEASE_LIMIT_BYTES);
  });

  it("serves the sample through a proxy pod, and admission refuses a bad route with our message", async () => {
    expect(installed).toBe(true);
    const { reply } = await sampleServes(ns, HOST);
    expect(JSON.parse(reply.body)).toMatchObject({ namespace: ns });
    await expectBadRouteRefused(ns);
  });
});
