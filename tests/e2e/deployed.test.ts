/**
 * Deployed mode on the local cluster: the module as `npm run build` ships it
 * (dist/pepr-module-<uuid>.yaml, our CRDs and Role) with no `pepr dev` process. The local
 * kubelet runs Pepr's controller image from the generated Deployments, unmodified; the API
 * server calls the admission webhook through its Service; the watcher pod, on its
 * ServiceAccount's in-cluster credentials, provisions and programs the proxies. The admission
 * pods run under their own least-privilege ServiceAccount (hack/service-accounts.ts), the
 * watcher under `pepr-<uuid>` with POD_NAME as its Lease identity.
 * (dist/ is rebuilt first unless it is a build of the sources as they are.)
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import {
  deployModule,
  deployments,
  distIsFresh,
  moduleName,
  peprNamespace,
  undeployModule,
} from "../../hack/deployed";
import { admissionAccount } from "../../hack/service-accounts";
import { heapLimitProblems, memoryBytes } from "../../hack/dist-check";
import { containerFacts } from "../support/node";
import { DEFAULT_LEASE_NAME } from "../../capabilities/election/env";
import cfg from "../../package.json";
import { jsonpath } from "../support/demo-gateway";
import { expectBadRouteRefused, sampleServes } from "../support/deployed-checks";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { demoSample } from "../support/manifests";
import { kubeconfigPath, kubectlBin, repoRoot } from "../support/paths";

interface Container {
  readonly name: string;
  readonly image: string;
  readonly args?: string[];
  readonly command?: string[];
  readonly env?: { name: string; value?: string }[];
  readonly resources?: { limits?: { memory?: string } };
}
interface PodList {
  readonly items: {
    readonly metadata: { name: string; uid: string; labels: Record<string, string> };
    readonly spec: { containers: Container[]; serviceAccountName: string };
    readonly status: {
      phase: string;
      containerStatuses?: { name: string; ready: boolean; restartCount: number }[];
    };
  }[];
}

const HOST = "deployed.kengine.local";
const ADMISSION_SA = admissionAccount(cfg.pepr.uuid);
const asAccount = (sa: string) => `--as=system:serviceaccount:${peprNamespace}:${sa}`;
const controllerPods = (controller: string) =>
  (
    JSON.parse(
      kubectlOk([
        "get",
        "pods",
        "-n",
        peprNamespace,
        "-l",
        `pepr.dev/controller=${controller}`,
        "-o",
        "json",
      ]),
    ) as PodList
  ).items;

interface ResourceRule {
  readonly verbs: string[];
  readonly apiGroups?: string[];
  readonly resources?: string[];
  readonly resourceNames?: string[];
}
/** What the API server says an account may do in a namespace (a SelfSubjectRulesReview as it). */
const rulesOf = (sa: string, namespace: string): ResourceRule[] =>
  (
    JSON.parse(
      kubectlOk(
        ["create", "--validate=false", "-f", "-", "-o", "json", asAccount(sa)],
        JSON.stringify({
          apiVersion: "authorization.k8s.io/v1",
          kind: "SelfSubjectRulesReview",
          spec: { namespace },
        }),
      ),
    ) as { status: { resourceRules: ResourceRule[] } }
  ).status.resourceRules;
const canI = (sa: string, ...args: string[]) =>
  kubectl(["auth", "can-i", ...args, asAccount(sa)]).stdout.trim();
/** The objects `npm run build` generated (read after beforeAll built them). */
const generated = () =>
  parseAllDocuments(
    readFileSync(join(repoRoot, "dist", `pepr-module-${cfg.pepr.uuid}.yaml`), "utf8"),
  ).map(d => d.toJS() as { kind: string; metadata: { name: string }; spec?: unknown });

describe("deployed mode (npm run build's manifests, Pepr's controller image)", () => {
  let ns = "";
  let deployed: ReturnType<typeof deployModule> | undefined;
  const gatewayStatus = (path: string) => jsonpath(["get", "gateway", "demo", "-n", ns], path);

  beforeAll(() => {
    deployed = deployModule({
      kubeconfig: kubeconfigPath,
      kubectl: kubectlBin,
      skipBuild: distIsFresh(),
      timeoutSeconds: 150,
    });
    if (!deployed.ok) throw new Error(deployed.error);
    ns = createNamespace("deployed");
  }, 420_000);

  afterAll(() => {
    if (ns) deleteNamespace(ns);
    undeployModule({ kubeconfig: kubeconfigPath, kubectl: kubectlBin });
  }, 240_000);

  it("runs the admission and watcher pods Running and Ready, from the generated Deployments as written", () => {
    const pods = JSON.parse(
      kubectlOk(["get", "pods", "-n", peprNamespace, "-l", "pepr.dev/controller", "-o", "json"]),
    ) as PodList;
    const roles = pods.items.map(p => p.metadata.labels["pepr.dev/controller"]).sort();
    expect(roles).toEqual(["admission", "admission", "watcher"]);
    for (const name of deployments) {
      const dep = generated().find(o => o.kind === "Deployment" && o.metadata.name === name) as
        | { spec: { template: { spec: { containers: Container[] } } } }
        | undefined;
      expect(dep).toBeDefined();
      const want = dep!.spec.template.spec.containers;
      const mine = pods.items.filter(p => p.metadata.name.startsWith(`${name}-`));
      expect(mine.length).toBeGreaterThan(0);
      for (const p of mine) {
        expect(p.status.phase).toBe("Running");
        expect(p.status.containerStatuses?.every(s => s.ready)).toBe(true);
        expect(
          p.spec.containers.map(c => ({ image: c.image, args: c.args, command: c.command })),
        ).toEqual(want.map(c => ({ image: c.image, args: c.args, command: c.command })));
      }
    }
    // Pepr's controller image, the version of the installed pepr package.
    const image = pods.items[0].spec.containers[0].image;
    expect(image).toBe(`ghcr.io/defenseunicorns/pepr/controller:v${cfg.dependencies.pepr}`);
  });

  // The memory limit and heap limit npm run build writes (hack/dist-check.ts checks them on
  // paper) are what each controller process runs under: its memory cgroup's limit and the
  // NODE_OPTIONS the kernel holds for it, read from the host.
  it("runs each controller process under its Deployment's memory limit, with its heap limit inside it", () => {
    const pods = [...controllerPods("admission"), ...controllerPods("watcher")];
    expect(pods).toHaveLength(3);
    for (const p of pods) {
      const c = p.spec.containers[0]!;
      const declared = c.resources?.limits?.memory ?? "";
      expect(declared).toMatch(/^\d+(Mi|Gi)$/);
      const facts = containerFacts(p.metadata.uid, c.name);
      expect(facts.memoryLimit).toBe(String(memoryBytes(declared)));
      const flags = facts.env.NODE_OPTIONS;
      expect(flags).toBe(c.env?.find(e => e.name === "NODE_OPTIONS")?.value);
      expect(
        heapLimitProblems([
          {
            kind: "Deployment",
            metadata: { name: p.metadata.name },
            spec: {
              template: {
                spec: { containers: [{ ...c, env: [{ name: "NODE_OPTIONS", value: flags }] }] },
              },
            },
          },
        ]),
      ).toEqual([]);
    }
  });

  it("runs admission under its own ServiceAccount and the watcher under pepr-<uuid>", () => {
    const admission = controllerPods("admission");
    expect(admission.length).toBe(2);
    for (const p of admission) expect(p.spec.serviceAccountName).toBe(ADMISSION_SA);
    const watcher = controllerPods("watcher");
    expect(watcher.map(p => p.spec.serviceAccountName)).toEqual([moduleName]);
    // Ready admission pods opened Pepr's store under that account: Pepr binds /healthz (the
    // readiness probe) only once its store is read (the previous test saw them Ready).
  });

  it("the admission account can read what admission reads, and no Secret, and write nothing but Pepr's own objects", () => {
    for (const namespace of [peprNamespace, ns]) {
      const rules = rulesOf(ADMISSION_SA, namespace);
      expect(rules.length).toBeGreaterThan(0);
      for (const r of rules) {
        expect(r.resources ?? []).not.toContain("secrets");
        expect(r.resources ?? []).not.toContain("*");
        expect(r.verbs).not.toContain("*");
        const writes = r.verbs.filter(v => !["get", "list", "watch"].includes(v));
        if (!writes.length) continue;
        // Kubernetes' own self-reviews (every authenticated user may create them)...
        const selfReview = (r.resources ?? []).every(x => x.startsWith("selfsubject"));
        // ...or Pepr's store and its CRD, by name.
        const peprOwn =
          (r.resourceNames ?? []).length > 0 &&
          (r.resources ?? []).every(x => x === "peprstores" || x === "customresourcedefinitions");
        expect({ rule: r, allowed: selfReview || peprOwn }).toEqual({ rule: r, allowed: true });
      }
    }
    expect(canI(ADMISSION_SA, "get", "gateways.gateway.networking.k8s.io", "-n", ns)).toBe("yes");
    expect(canI(ADMISSION_SA, "list", "httproutes.gateway.networking.k8s.io", "-A")).toBe("yes");
    for (const args of [
      ["get", "secrets", "-n", peprNamespace],
      ["list", "secrets", "-A"],
      ["create", "httproutes.gateway.networking.k8s.io", "-n", ns],
      ["patch", "gateways.gateway.networking.k8s.io", "--subresource=status", "-n", ns],
      ["create", "deployments.apps", "-n", ns],
      ["patch", "leases.coordination.k8s.io", "-n", peprNamespace],
      ["delete", "peprstores.pepr.dev", "-n", peprNamespace],
    ])
      expect({ args, answer: canI(ADMISSION_SA, ...args) }).toEqual({ args, answer: "no" });
    // The same question asked of the watcher's account says yes: the checks above can fail.
    expect(canI(moduleName, "list", "secrets", "-A")).toBe("yes");
  });

  it("the watcher holds the leader Lease under its pod name (POD_NAME from the downward API)", async () => {
    const [watcher] = controllerPods("watcher");
    const holder = await eventually(
      "the watcher pod holding the Lease",
      () => {
        const h = kubectl([
          "get",
          "lease",
          DEFAULT_LEASE_NAME,
          "-n",
          peprNamespace,
          "-o",
          "jsonpath={.spec.holderIdentity}",
        ]).stdout;
        return h === watcher!.metadata.name ? h : undefined;
      },
      90_000,
      500,
    );
    expect(holder).toBe(watcher!.metadata.name);
  });

  it("calls the admission webhook through its Service, which denies a bad route with our message", async () => {
    const hooks = JSON.parse(
      kubectlOk(["get", "validatingwebhookconfiguration", moduleName, "-o", "json"]),
    ) as { webhooks: { clientConfig: { url?: string; service?: { name: string } } }[] };
    for (const h of hooks.webhooks) {
      expect(h.clientConfig.url).toBeUndefined();
      expect(h.clientConfig.service?.name).toBe(moduleName);
    }
    kubectlOk(["apply", "-f", "-"], demoSample(ns, HOST));
    await expectBadRouteRefused(ns);
    // A good route of ours is admitted (the sample's), and admission was never refused by the
    // API server on its look-ups under its own account.
    expect(kubectl(["get", "httproute", "-n", ns, "-o", "name"]).stdout).toMatch(/httproute/);
    // Ingresses: admission reads the IngressClass an Ingress names (get) or the cluster's default
    // (list) under its own account. Without those rules it denied every Ingress in the cluster,
    // any controller's (hack/service-accounts.ts).
    for (const [name, spec] of [
      ["other-class", { ingressClassName: "someone-elses" }],
      ["no-class", {}],
    ] as const) {
      const ingress = {
        apiVersion: "networking.k8s.io/v1",
        kind: "Ingress",
        metadata: { name, namespace: ns },
        spec: { ...spec, defaultBackend: { service: { name: "echo", port: { number: 80 } } } },
      };
      const r = kubectl(["apply", "-f", "-"], JSON.stringify(ingress));
      expect({ name, code: r.code, stderr: r.stderr }).toEqual({ name, code: 0, stderr: "" });
    }
    const logs = kubectlOk([
      "logs",
      "-n",
      peprNamespace,
      "-l",
      "pepr.dev/controller=admission",
      "--tail=-1",
    ]);
    expect(logs).not.toMatch(/forbidden/i);
  });

  it("the watcher provisions and programs the proxies: the sample answers 200 through the Gateway", async () => {
    const { reply } = await sampleServes(ns, HOST);
    expect(JSON.parse(reply.body)).toMatchObject({ namespace: ns });
    const programmed = gatewayStatus("{.status.conditions[?(@.type=='Programmed')].status}");
    expect(programmed).toBe("True");
  });
});
