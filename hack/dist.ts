/**
 * The step `npm run build` runs after `pepr build` (`tsx hack/dist.ts [outputDir]`):
 *  1. fails when the module bundle is over budget (hack/dist-check.ts), printing its size;
 *  2. fails when the generated RBAC holds a wildcard;
 *  3. splits the admission webhook so that it never blocks objects that are not ours while our
 *     pods are down (hack/webhook.ts), in the module YAML and in the chart;
 *  4. gives the admission Deployment its own least-privilege ServiceAccount and the watcher
 *     POD_NAME (hack/service-accounts.ts), in the module YAML and in the chart;
 *  4b. puts the module's code in the chart as a binary file that the module Secret's template
 *     renders (Helm's release Secret must stay under 1 MiB);
 *  5. adds what Pepr does not generate, to dist/ and to the Helm chart:
 *     - kengine-gateway-crds.yaml   our CRDs (deploy/crds/), chart: crds/
 *     - kengine-gateway-rbac.yaml   the Role in the controller's namespace (Lease, admin CA)
 *     - gatewayclass.yaml           an example GatewayClass with KengineParameters
 *  6. prints the bundle, the module Secret and the Helm release Secret (estimated), each with
 *     the budget it has left, and fails when the release leaves less than the headroom the
 *     next capability needs (hack/dist-check.ts `checkBudgets`).
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { parseAllDocuments, stringify } from "yaml";
import cfg from "../package.json";
import {
  chartFiles,
  checkBudgets,
  checkBundle,
  helmReleaseBytes,
  namespacedRbac,
  wildcardProblems,
  heapLimitProblems,
} from "./dist-check";
import { BUILD_STAMP, buildStamp } from "./deployed";
import { chartEdits, splitServiceAccounts } from "./service-accounts";
import { scopeValidatingWebhooks, webhookChartTemplate } from "./webhook";

const root = join(__dirname, "..");
const out = join(root, process.argv[2] ?? "dist");
const uuid = cfg.pepr.uuid;

function fail(message: string): never {
  console.error(`npm run build: ${message}`);
  process.exit(1);
}

const bundle = join(out, `pepr-${uuid}.js`);
const moduleYaml = join(out, `pepr-module-${uuid}.yaml`);
const chart = join(out, `${uuid}-chart`);
for (const p of [bundle, moduleYaml, chart])
  if (!existsSync(p)) fail(`${p} is missing: did \`pepr build\` run and succeed?`);

// 1. Bundle budget.
const code = readFileSync(bundle);
const gzipped = gzipSync(code);
const secretBytes = Buffer.byteLength(gzipped.toString("base64"));
const size = checkBundle(`dist/pepr-${uuid}.js`, code.length, secretBytes);
if (!size.ok) fail(size.message);
console.log(size.message);

// 2. No wildcard in what Pepr generated (scoped mode plus our rules).
const generated = parseAllDocuments(readFileSync(moduleYaml, "utf8")).map(d => d.toJS());
const wildcards = wildcardProblems(generated);
if (wildcards.length) fail(`wildcard RBAC in ${moduleYaml}:\n  ${wildcards.join("\n  ")}`);
const clusterRole = generated.find(o => o?.kind === "ClusterRole");
console.log(
  `ClusterRole ${clusterRole?.metadata?.name}: ${clusterRole?.rules?.length} rules, no wildcard`,
);

// 2b. The controllers' V8 heap fits their memory limit (package.json pepr.env.NODE_OPTIONS).
const heap = heapLimitProblems(generated);
if (heap.length) fail(`heap limits in ${moduleYaml}:\n  ${heap.join("\n  ")}`);
console.log("watcher and admission: V8 heap limit within three quarters of the memory limit");

// 3. The admission webhook, scoped (hack/webhook.ts).
const documents = generated.map(o =>
  o?.kind === "ValidatingWebhookConfiguration" ? scopeValidatingWebhooks(o) : o,
);
const scoped = documents.find(o => o?.kind === "ValidatingWebhookConfiguration");
if (!scoped) fail(`${moduleYaml} holds no ValidatingWebhookConfiguration`);

// 4. The admission Deployment's own ServiceAccount, the watcher's POD_NAME (hack/service-accounts.ts).
const split = splitServiceAccounts(
  documents.filter(o => o),
  uuid,
);
if (!split.ok) fail(`${moduleYaml}: ${split.error}`);
writeFileSync(moduleYaml, split.value.map(o => stringify(o)).join("---\n"));
const templates = join(chart, "templates");
const edits = chartEdits(
  {
    admission: readFileSync(join(templates, "admission-deployment.yaml"), "utf8"),
    watcher: readFileSync(join(templates, "watcher-deployment.yaml"), "utf8"),
  },
  uuid,
  o => stringify(o),
);
if (!edits.ok) fail(`${chart}: ${edits.error}`);
writeFileSync(join(templates, "admission-deployment.yaml"), edits.value.admission);
writeFileSync(join(templates, "watcher-deployment.yaml"), edits.value.watcher);
writeFileSync(join(templates, "admission-rbac.yaml"), edits.value.rbac);

// 4b. The module's code in the chart as a file, not as base64 text in a template. Helm keeps
// each release in a Secret of at most 1 MiB, holding the chart (every file base64-encoded) and
// the rendered manifest, both gzipped together. Pepr's template holds the gzipped code as
// base64 text, which the release then encodes again and gzip cannot take back, so a bundle
// near 1 MB made a release Helm refuses as "Too long". As a binary file the
// code is encoded once in the chart; the template renders the same Secret from it.
const secretTemplate = join(templates, "module-secret.yaml");
const secret = parseAllDocuments(readFileSync(secretTemplate, "utf8"))[0]?.toJS() as
  | { data?: Record<string, string> }
  | undefined;
const entries = Object.entries(secret?.data ?? {});
if (entries.length !== 1 || !/^module-[0-9a-f]+\.js\.gz$/.test(entries[0]![0]))
  fail(`${secretTemplate}: expected one module-<hash>.js.gz entry`);
const [moduleKey, moduleBase64] = entries[0]!;
// pepr build leaves files/ of an earlier build in place: a stale module would go into the release too
rmSync(join(chart, "files"), { recursive: true, force: true });
mkdirSync(join(chart, "files"), { recursive: true });
writeFileSync(
  join(chart, "files", moduleKey),
  Buffer.from(moduleBase64.replace(/\s+/g, ""), "base64"),
);
const placeholder = "MODULE_FROM_FILE";
writeFileSync(
  secretTemplate,
  stringify({ ...secret, data: { [moduleKey]: placeholder } }).replace(
    placeholder,
    `{{ .Files.Get "files/${moduleKey}" | b64enc }}`,
  ),
);
console.log(
  `admission runs as ServiceAccount pepr-${uuid}-admission (chart: templates/admission-rbac.yaml); the watcher gets POD_NAME`,
);
writeFileSync(
  join(chart, "templates", "validation-webhook.yaml"),
  webhookChartTemplate(scoped, `pepr-${uuid}`, o => stringify(o)),
);
console.log(
  `ValidatingWebhookConfiguration: ${(scoped.webhooks as { name: string; failurePolicy: string }[]).map(w => `${w.name} (${w.failurePolicy})`).join(", ")}`,
);

// 5. What Pepr does not generate.
const crdDir = join(root, "deploy", "crds");
const crds = readdirSync(crdDir)
  .filter(f => f.endsWith(".yaml"))
  .sort();
const header = (what: string) =>
  `# ${what}\n# Generated by \`npm run build\` (hack/dist.ts) for module ${uuid}; do not edit.\n`;
writeFileSync(
  join(out, "kengine-gateway-crds.yaml"),
  header("Kengine Gateway CRDs (deploy/crds/): apply before the module.") +
    crds.map(f => readFileSync(join(crdDir, f), "utf8").replace(/^---\n/, "")).join("---\n"),
);
const rbac = namespacedRbac(uuid).map(o => stringify(o));
writeFileSync(
  join(out, "kengine-gateway-rbac.yaml"),
  header("The controller's Role in its own namespace (docs/rbac.md).") + rbac.join("---\n"),
);
copyFileSync(join(root, "deploy", "examples", "gatewayclass.yaml"), join(out, "gatewayclass.yaml"));

// The Helm chart: CRDs in crds/ (installed before the templates), the Role as a template.
mkdirSync(join(chart, "crds"), { recursive: true });
for (const f of crds) copyFileSync(join(crdDir, f), join(chart, "crds", f));
writeFileSync(
  join(chart, "templates", "kengine-role.yaml"),
  header("The controller's Role in its own namespace (docs/rbac.md).") + rbac.join("---\n"),
);
console.log(
  `added to ${out}: kengine-gateway-crds.yaml (${crds.length} CRDs), kengine-gateway-rbac.yaml, gatewayclass.yaml; chart: crds/, templates/kengine-role.yaml`,
);

// 6. The sizes against their budgets; the Helm release Secret (at most 1 MiB) the chart makes, estimated.
const budgets = checkBudgets(`dist/pepr-${uuid}.js`, {
  bundleBytes: code.length,
  gzipBytes: gzipped.length,
  secretBytes,
  releaseBytes: helmReleaseBytes(chartFiles(chart)),
});
if (!budgets.ok) fail(budgets.message);
console.log(budgets.message);

// Last: what this build was made from, so that tests and `npm start` reuse it while the
// sources stay the same (hack/deployed.ts distIsFresh).
writeFileSync(join(out, BUILD_STAMP), buildStamp(out, root));
