/**
 * The official conformance suite's manifests (sigs.k8s.io/gateway-api/conformance v1.6.1,
 * tests/*.yaml and base/manifests.yaml, read from the Go module cache) against the admission
 * webhook, with the module running under `pepr dev`: every object is accepted by
 * `kubectl apply --dry-run=server`, except the routes of tests whose features we do not
 * advertise (the suite never creates those for us); and a bad route attached to a conformance
 * Gateway gets our message.
 *
 * The manifests name their GatewayClass through the suite's template `{GATEWAY_CLASS_NAME}`
 * (and `{GATEWAY_CONTROLLER_NAME}`); here both become ours, so admission really judges every
 * Gateway, ListenerSet and route. A route is judged only when its parent Gateway exists
 * (docs/architecture.md §4), so the namespaces, Gateways and ListenerSets are created for real — in
 * namespaces renamed with a unique prefix, each Gateway given a parametersRef that does not
 * resolve, so the controller reports it Accepted=False/InvalidParameters and provisions no
 * proxies. A BackendTLSPolicy is judged only when a Service it targets is a backend of a route
 * of ours, so the routes using such Services are created for real too. Everything else is
 * applied with --dry-run=server only.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { SUPPORTED_FEATURES } from "../../capabilities/flavor/features";
import { kubectl, kubectlOk } from "../support/kube";
import { PeprDev, startModule } from "../support/module";

const VERSION = "v1.6.1";
const suffix = Date.now().toString(36).slice(-6);
const gatewayClassName = `kengine-conf-${suffix}`;

/**
 * Tests whose routes use what the proxy does not run, with the feature the suite requires
 * for them. Their routes are refused; the test checks each such feature is not advertised.
 */
const UNADVERTISED: Readonly<Record<string, string>> = {
  "httproute-cors.yaml": "HTTPRouteCORS",
  "httproute-request-header-modifier-backend-weights.yaml":
    "HTTPRouteBackendRequestHeaderModification",
  "httproute-retry.yaml": "HTTPRouteRetry",
  "httproute-timeout-backend-request.yaml": "HTTPRouteBackendTimeout",
  "httproute-timeout-request.yaml": "HTTPRouteRequestTimeout",
};

function conformanceDir(): string {
  const r = spawnSync("go", ["env", "GOMODCACHE"], { encoding: "utf8" });
  const cache = r.stdout.trim();
  const dir = join(cache, "sigs.k8s.io", "gateway-api", `conformance@${VERSION}`);
  if (!cache || !existsSync(join(dir, "base", "manifests.yaml")))
    throw new Error(
      `conformance manifests not found in ${dir} (run npm run peers: it downloads sigs.k8s.io/gateway-api/conformance)`,
    );
  return dir;
}

interface Manifest {
  readonly file: string;
  readonly text: string;
  readonly objects: readonly Record<string, any>[]; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** The suite's files with templates filled in and namespaces renamed (whole names only). */
function loadManifests(dir: string): Manifest[] {
  const files = [
    join(dir, "base", "manifests.yaml"),
    ...readdirSync(join(dir, "tests"))
      .filter(f => f.endsWith(".yaml"))
      .sort()
      .map(f => join(dir, "tests", f)),
  ];
  const raw = files.map(f => ({ file: f, text: readFileSync(f, "utf8") }));
  const namespaces = new Set<string>();
  for (const { text } of raw)
    for (const d of parseAllDocuments(text)) {
      const o = d.toJS() as { kind?: string; metadata?: { name?: string; namespace?: string } };
      if (o?.kind === "Namespace" && o.metadata?.name) namespaces.add(o.metadata.name);
      if (o?.metadata?.namespace?.startsWith("gateway-conformance-"))
        namespaces.add(o.metadata.namespace);
    }
  const rename = (text: string): string => {
    let out = text
      .replaceAll("{GATEWAY_CLASS_NAME}", gatewayClassName)
      .replaceAll("{GATEWAY_CONTROLLER_NAME}", "kengine.io/gateway-controller")
      // The suite replaces these with the address pools its caller provides (GatewayStaticAddresses).
      .replaceAll('"PLACEHOLDER_UNUSABLE_ADDRS"', '"192.0.2.1"')
      .replaceAll('"PLACEHOLDER_USABLE_ADDRS"', '"127.20.0.250"');
    for (const ns of namespaces)
      out = out.replace(new RegExp(`(?<![a-z0-9-])${ns}(?![a-z0-9-])`, "g"), `kc${suffix}-${ns}`);
    return out;
  };
  return raw.map(({ file, text }) => {
    const t = rename(text);
    return {
      file: file.slice(dir.length + 1),
      text: t,
      objects: parseAllDocuments(t)
        .map(d => d.toJS() as Record<string, unknown>)
        .filter(o => o && typeof o === "object"),
    };
  });
}

/** What `kubectl apply --dry-run=server` said about each object of one file. */
function dryRun(m: Manifest): { applied: number; denials: string[]; errors: string[] } {
  const r = kubectl(["apply", "--dry-run=server", "-f", "-"], m.text);
  const applied = r.stdout.split("\n").filter(l => /\(server dry run\)$/.test(l)).length;
  const lines = r.stderr.split("\n").filter(l => l.trim() !== "" && !/^Warning:/.test(l));
  return {
    applied,
    denials: lines.filter(l => l.includes("cannot be run by the Kengine proxy")),
    errors: lines.filter(l => !l.includes("cannot be run by the Kengine proxy")),
  };
}

describe("the conformance suite's manifests through admission", () => {
  let dev: PeprDev | undefined;
  let manifests: Manifest[] = [];
  let namespaces: string[] = [];
  let parentErrors = "";
  let policyRoutes: Record<string, any>[] = []; // eslint-disable-line @typescript-eslint/no-explicit-any

  beforeAll(async () => {
    manifests = loadManifests(conformanceDir());
    const all = manifests.flatMap(m => m.objects);
    namespaces = [
      ...new Set(all.filter(o => o.kind === "Namespace").map(o => String(o.metadata.name))),
    ];
    // Namespaces and the class exist before the module, so no Gateway can be judged without it.
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [
          ...all.filter(o => o.kind === "Namespace"),
          {
            apiVersion: "gateway.networking.k8s.io/v1",
            kind: "GatewayClass",
            metadata: { name: gatewayClassName },
            spec: { controllerName: "kengine.io/gateway-controller" },
          },
        ],
      }),
    );
    dev = await startModule();
    // The parents, created for real (so routes are judged), without proxies.
    const parents = all
      .filter(o => o.kind === "Gateway" || o.kind === "ListenerSet")
      .map(o =>
        o.kind === "Gateway" && !o.spec?.infrastructure?.parametersRef
          ? {
              ...o,
              spec: {
                ...o.spec,
                infrastructure: {
                  ...o.spec?.infrastructure,
                  parametersRef: {
                    group: "gateway.kengine.io",
                    kind: "KengineParameters",
                    name: "admission-test-no-proxies",
                  },
                },
              },
            }
          : o,
      );
    // The routes whose backends BackendTLSPolicies target, so those policies are judged.
    const targeted = new Set(
      all
        .filter(o => o.kind === "BackendTLSPolicy")
        .flatMap(p =>
          (p.spec?.targetRefs ?? []).map(
            (t: { name: string }) => `${p.metadata.namespace}/${t.name}`,
          ),
        ),
    );
    policyRoutes = all.filter(
      o =>
        (o.kind === "HTTPRoute" || o.kind === "GRPCRoute") &&
        (o.spec?.rules ?? []).some((r: { backendRefs?: { name: string; namespace?: string }[] }) =>
          (r.backendRefs ?? []).some(b =>
            targeted.has(`${b.namespace ?? o.metadata.namespace}/${b.name}`),
          ),
        ),
    );
    const created = kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({ apiVersion: "v1", kind: "List", items: [...parents, ...policyRoutes] }),
    );
    parentErrors = created.code === 0 ? "" : created.stderr;
  }, 600_000);

  afterAll(async () => {
    kubectl(["delete", "gatewayclass", gatewayClassName, "--ignore-not-found", "--wait=false"]);
    for (const ns of namespaces)
      kubectl(["delete", "namespace", ns, "--ignore-not-found", "--wait=false"]);
    await dev?.stop();
  }, 120_000);

  it("reads the suite's templated manifests and makes our class theirs", () => {
    expect(manifests.length).toBeGreaterThan(100);
    const gateways = manifests.flatMap(m => m.objects).filter(o => o.kind === "Gateway");
    expect(gateways.length).toBeGreaterThan(80);
    expect(gateways.every(g => g.spec.gatewayClassName === gatewayClassName)).toBe(true);
    expect(manifests.some(m => /\{GATEWAY_|PLACEHOLDER_/.test(m.text))).toBe(false);
  });

  it("creates every Gateway and ListenerSet (the routes' parents) and the BackendTLSPolicies' routes", () => {
    expect(parentErrors).toBe("");
    expect(policyRoutes.length).toBeGreaterThanOrEqual(6);
  });

  it("accepts every object except the routes of unadvertised features, with --dry-run=server", () => {
    let applied = 0;
    const unexpected: string[] = [];
    const refused: string[] = [];
    for (const m of manifests) {
      const r = dryRun(m);
      applied += r.applied;
      unexpected.push(...r.errors.map(e => `${m.file}: ${e}`));
      const name = m.file.replace(/^tests\//, "");
      for (const d of r.denials) {
        refused.push(`${name}: ${d}`);
        // Refused only where the suite asks for a feature we do not advertise, naming a field.
        if (!(name in UNADVERTISED)) unexpected.push(`${m.file}: refused: ${d}`);
        expect(d).toMatch(/: spec\.(rules\[\d+\]|validation)\./);
      }
    }
    console.info(
      `conformance manifests: ${manifests.length} files, ${applied} objects accepted by --dry-run=server, ${refused.length} refused:\n${refused.join("\n")}`,
    );
    expect(unexpected).toEqual([]);
    // 451 objects in v1.6.1; those refused are the only ones missing.
    expect(applied + refused.length).toBeGreaterThanOrEqual(400);
    for (const [file, feature] of Object.entries(UNADVERTISED))
      if (refused.some(d => d.startsWith(`${file}:`)))
        expect({ file, advertised: SUPPORTED_FEATURES.includes(feature) }).toEqual({
          file,
          advertised: false,
        });
  }, 900_000);

  it("shows our message for a bad route attached to a conformance Gateway", () => {
    const base = manifests
      .find(m => m.file === "tests/httproute-simple-same-namespace.yaml")!
      .objects.find(o => o.kind === "HTTPRoute")!;
    const bad = {
      ...base,
      metadata: { ...base.metadata, name: "admission-bad" },
      spec: {
        ...base.spec,
        rules: [
          {
            matches: [{ path: { type: "RegularExpression", value: "/(?!admin).*" } }],
            backendRefs: base.spec.rules[0].backendRefs,
          },
        ],
      },
    };
    const r = kubectl(["apply", "--dry-run=server", "-f", "-"], JSON.stringify(bad));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      `HTTPRoute ${bad.metadata.namespace}/admission-bad cannot be run by the Kengine proxy: spec.rules[0].matches[0].path.value: look-ahead`,
    );
  });
});
