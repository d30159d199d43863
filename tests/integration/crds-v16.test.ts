/**
 * A cluster that still has the Gateway API v1.6 CRDs keeps working. The
 * v1.6.1 experimental CRDs are installed as `npm run conformance -- --version=v1.6.1` installs
 * them (hack/conformance.ts installSuiteCrds: from the sigs.k8s.io/gateway-api v1.6.1 module;
 * the v1.7-only kinds, XTelemetryPolicy, deleted), a controller runs in this process (the
 * Reconciler, as under `pepr dev`) with a managed proxy pod on the local node, and:
 *
 * - the GatewayClass says `SupportedVersion=True` for v1.6.1 and is Accepted: the controller is
 *   running although XTelemetryPolicy's CRD is absent;
 * - a Gateway and an HTTPRoute serve traffic through the load balancer's address;
 * - session persistence in the v1.6 shape (`sessionName`, `cookieConfig.lifetimeType`) is run:
 *   the response sets the cookie that `sessionName` names;
 * - fields v1.6 does not have are not there, and nothing breaks: the status addresses carry no
 *   `routability` (the API server prunes it from what the controller writes).
 *
 * Afterwards `hack/cluster.sh up` (idempotent) applies the cluster's v1.7.0 CRDs again, so the
 * next suite in the same run (globalSetup brings the cluster up once) sees what it expects; the
 * last test checks that it did.
 */
import { execFileSync } from "node:child_process";
import { request } from "node:http";
import { join } from "node:path";
import { proxyNames } from "../../capabilities/provision";
import type { Condition as Cond } from "../../capabilities/translate";
import { installSuiteCrds } from "../../hack/conformance";
import {
  applyItems,
  createNamespace,
  deleteNamespace,
  eventually,
  kubectl,
  kubectlOk,
} from "../support/kube";
import { echoBackend, echoRoute, gatewayClass, httpGateway } from "../support/manifests";
import { repoRoot } from "../support/paths";
import { startReconciler } from "../support/reconciler";

const HOST = "v16.kengine.local";
const GW = "v16";

/** The bundle version of every Gateway API CRD, by name. */
const gatewayApiCrds = (): Map<string, string> =>
  new Map(
    kubectlOk([
      "get",
      "crd",
      "-o",
      "jsonpath={range .items[*]}{.metadata.name}{'\\t'}{.metadata.annotations.gateway\\.networking\\.k8s\\.io/bundle-version}{'\\n'}{end}",
    ])
      .split("\n")
      .map(l => l.split("\t"))
      .filter(([name, v]) => name && v)
      .map(([name, v]) => [name!, v!]),
  );

/** One GET to the load balancer's address (127.20.x.y): status and the Set-Cookie names. */
function getWithCookies(address: string): Promise<{ status: number; cookies: string[] }> {
  if (!/^127\.20\./.test(address)) throw new Error(`not a local load balancer address: ${address}`);
  return new Promise(resolve => {
    const req = request(
      { host: address, port: 80, path: "/", headers: { Host: HOST }, timeout: 5000, agent: false },
      res => {
        res.resume();
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            cookies: (res.headers["set-cookie"] ?? []).map(c => c.split("=")[0]!),
          }),
        );
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", () => resolve({ status: 0, cookies: [] }));
    req.end();
  });
}

describe("the controller on a cluster with the Gateway API v1.6.1 CRDs", () => {
  let ns: string;
  const cls = `v16-${Date.now().toString(36)}`;
  const stops: (() => unknown)[] = [];

  beforeAll(async () => {
    installSuiteCrds("v1.6.1");
    kubectlOk(["wait", "--for", "condition=Established", "--timeout=60s", "crd", "--all"]);
    ns = createNamespace("v16");
    applyItems([
      ...echoBackend(ns),
      gatewayClass(cls),
      httpGateway(ns, GW, cls),
      // the v1.6 shape: sessionName and cookieConfig (v1.7: cookie.name, lifetimeType)
      echoRoute(ns, [GW], HOST, {
        sessionPersistence: {
          type: "Cookie",
          sessionName: "v16-sticky",
          cookieConfig: { lifetimeType: "Session" },
        },
      }),
    ]);
    stops.push(await startReconciler(ns, "v16"));
  }, 240_000);

  afterAll(async () => {
    for (const s of stops.reverse()) await s();
    kubectl(["delete", "gatewayclass", cls, "--ignore-not-found"]);
    if (ns) deleteNamespace(ns);
    // The cluster's own CRDs (v1.7.0) again, for the suites after this one.
    execFileSync("bash", [join(repoRoot, "hack", "cluster.sh"), "up"], { stdio: "ignore" });
  }, 240_000);

  it("installed the v1.6.1 CRDs, without v1.7's XTelemetryPolicy", () => {
    const crds = gatewayApiCrds();
    expect(crds.get("httproutes.gateway.networking.k8s.io")).toBe("v1.6.1");
    expect([...crds.values()].every(v => v === "v1.6.1")).toBe(true);
    expect([...crds.keys()].some(n => n.startsWith("xtelemetrypolicies."))).toBe(false);
  });

  it("the GatewayClass is Accepted and says SupportedVersion=True for v1.6.1", async () => {
    const conditions = await eventually(
      "the GatewayClass's SupportedVersion",
      () => {
        const gc = JSON.parse(kubectlOk(["get", "gatewayclass", cls, "-o", "json"])) as {
          status?: { conditions?: Cond[] };
        };
        const cs = gc.status?.conditions ?? [];
        return cs.some(c => c.type === "SupportedVersion") ? cs : undefined;
      },
      60_000,
    );
    expect(conditions.find(c => c.type === "Accepted")?.status).toBe("True");
    const sv = conditions.find(c => c.type === "SupportedVersion")!;
    expect([sv.status, sv.reason]).toEqual(["True", "SupportedVersion"]);
    expect(sv.message).toContain("v1.6.1");
  });

  it("serves the route, with v1.6-shaped session persistence, and writes no v1.7-only status field", async () => {
    const lb = await eventually(
      "the Gateway programmed with an address",
      () => {
        const gw = JSON.parse(kubectlOk(["get", "gateway", GW, "-n", ns, "-o", "json"])) as {
          metadata: { generation: number };
          status?: { addresses?: Record<string, string>[]; conditions?: Cond[] };
        };
        const p = gw.status?.conditions?.find(c => c.type === "Programmed");
        const ok = p?.status === "True" && p.observedGeneration === gw.metadata.generation;
        return ok ? gw.status?.addresses : undefined;
      },
      180_000,
      500,
    );
    expect(lb).toHaveLength(1);
    expect(lb[0]!.value).toMatch(/^127\.20\./);
    // v1.6 has no status.addresses[].routability: pruned from what the controller wrote.
    expect(Object.keys(lb[0]!).sort()).toEqual(["type", "value"]);
    const svc = kubectlOk([
      "get",
      "service",
      proxyNames(GW).proxy,
      "-n",
      ns,
      "-o",
      "jsonpath={.status.loadBalancer.ingress[0].ip}",
    ]);
    expect(lb[0]!.value).toBe(svc);
    const reply = await eventually("a 200 through the Gateway", async () => {
      const r = await getWithCookies(lb[0]!.value);
      return r.status === 200 ? r : undefined;
    });
    expect(reply.cookies).toContain("v16-sticky");
    const route = JSON.parse(kubectlOk(["get", "httproute", "echo", "-n", ns, "-o", "json"])) as {
      status?: { parents?: { conditions?: Cond[] }[] };
    };
    const accepted = route.status?.parents?.[0]?.conditions?.find(c => c.type === "Accepted");
    expect(accepted?.status).toBe("True");
  });
});

describe("after the v1.6.1 suite", () => {
  it("the cluster has its v1.7.0 CRDs again (XTelemetryPolicy included)", () => {
    const crds = gatewayApiCrds();
    expect(crds.get("httproutes.gateway.networking.k8s.io")).toBe("v1.7.0");
    expect([...crds.values()].every(v => v === "v1.7.0")).toBe(true);
    expect([...crds.keys()].some(n => n.startsWith("xtelemetrypolicies."))).toBe(true);
  });
});
