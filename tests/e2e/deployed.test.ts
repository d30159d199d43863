/**
 * Deployed mode on the local cluster: the module as `npm run build` ships it
 * (dist/pepr-module-<uuid>.yaml, our CRDs and Role) with no `pepr dev` process. The local
 * kubelet runs Pepr's controller image from the generated Deployments, unmodified; the API
 * server calls the admission webhook through its Service; the watcher pod, on its
 * ServiceAccount's in-cluster credentials, provisions and programs the proxies.
 * (dist/ is rebuilt first unless it is newer than the module's sources.)
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
import cfg from "../../package.json";
import { jsonpath } from "../support/demo-gateway";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { demoSample } from "../support/manifests";
import { kubeconfigPath, kubectlBin, repoRoot } from "../support/paths";
import { get } from "../support/traffic";

interface Container {
  readonly name: string;
  readonly image: string;
  readonly args?: string[];
  readonly command?: string[];
}
interface PodList {
  readonly items: {
    readonly metadata: { name: string; labels: Record<string, string> };
    readonly spec: { containers: Container[] };
    readonly status: {
      phase: string;
      containerStatuses?: { name: string; ready: boolean; restartCount: number }[];
    };
  }[];
}

const HOST = "deployed.kengine.local";
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

  it("calls the admission webhook through its Service, which denies a bad route with our message", () => {
    const hooks = JSON.parse(
      kubectlOk(["get", "validatingwebhookconfiguration", moduleName, "-o", "json"]),
    ) as { webhooks: { clientConfig: { url?: string; service?: { name: string } } }[] };
    for (const h of hooks.webhooks) {
      expect(h.clientConfig.url).toBeUndefined();
      expect(h.clientConfig.service?.name).toBe(moduleName);
    }
    kubectlOk(["apply", "-f", "-"], demoSample(ns, HOST));
    const bad = {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: { name: "bad", namespace: ns },
      spec: {
        parentRefs: [{ name: "demo" }],
        rules: [
          {
            filters: [
              { type: "RequestHeaderModifier", requestHeaderModifier: { remove: ["X-*"] } },
            ],
            backendRefs: [{ name: "echo", port: 8080 }],
          },
        ],
      },
    };
    const r = kubectl(["apply", "-f", "-"], JSON.stringify(bad));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`HTTPRoute ${ns}/bad cannot be run by the Kengine proxy`);
    expect(r.stderr).toContain(
      'spec.rules[0].filters[0].requestHeaderModifier.remove[0]: contains "*"',
    );
    expect(kubectl(["get", "httproute", "bad", "-n", ns]).code).not.toBe(0);
  });

  it("the watcher provisions and programs the proxies: the sample answers 200 through the Gateway", async () => {
    kubectlOk(["apply", "-f", "-"], demoSample(ns, HOST));
    const address = await eventually(
      "the Gateway's address",
      () => gatewayStatus("{.status.addresses[0].value}") || undefined,
      120_000,
    );
    const reply = await eventually(
      "a 200 from the echo backend through the Gateway",
      async () => {
        const res = await get(address, HOST);
        return res.status === 200 ? res : undefined;
      },
      120_000,
      500,
    );
    expect(JSON.parse(reply.body)).toMatchObject({ namespace: ns });
    const programmed = gatewayStatus("{.status.conditions[?(@.type=='Programmed')].status}");
    expect(programmed).toBe("True");
  });
});
