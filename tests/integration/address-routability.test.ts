/**
 * Gateway address routability (Gateway API v1.7, GEP-5093; features GatewayAddressRoutability and
 * GatewayAddressRoutabilityCluster) on the local cluster: a controller running in this process
 * (the Reconciler, as under `pepr dev`), managed proxy pods (the Bundled build) on the local
 * kubelet, the v1.7.0 experimental CRDs (they have the `routability` fields and validate them).
 *
 * - `routability: Cluster` without a value: the proxies' Service is a ClusterIP one (the Gateway
 *   asked to stay inside the cluster), status.addresses holds its cluster IP (in the cluster's
 *   Service range) with `routability: Cluster`, Programmed and AddressesAssigned are True, and a
 *   request from inside a pod's network namespace to that IP:80 is served by the route;
 * - `Cluster` with the cluster IP as value beside a default entry: both addresses (the load
 *   balancer's with an explicit empty routability), both serve;
 * - `Cluster` naming another address, and an implementation-specific routability (one Gateway
 *   asking for both): Programmed=False AddressNotUsable naming each value,
 *   AddressesAssigned=False NotAssigned, nothing reported;
 * - the conformance sentinel: the load balancer's address reported with it;
 * - no routability: as before (a LoadBalancer Service, its address, routability ""); made
 *   Cluster-only afterwards, its Service becomes ClusterIP and the load-balancer address goes.
 */
import { execFileSync } from "node:child_process";
import { proxyNames } from "../../capabilities/provision";
import type { Condition as Cond } from "../../capabilities/translate";
import {
  applyItems,
  createNamespace,
  deleteNamespace,
  eventually,
  kubectl,
  kubectlOk,
} from "../support/kube";
import { echoBackend, echoRoute, gatewayClass, httpGateway } from "../support/manifests";
import { startReconciler } from "../support/reconciler";
import { get } from "../support/traffic";
import { podNetnsPath } from "../support/node";

const HOST = "routability.kengine.local";
const SENTINEL = "testing.x-k8s.io/sentinel";

interface StatusAddress {
  readonly type?: string;
  readonly value: string;
  readonly routability?: string;
}
interface GatewayState {
  readonly generation: number;
  readonly addresses: readonly StatusAddress[];
  readonly conditions: readonly Cond[];
}

describe("Gateway address routability on the local cluster", () => {
  let ns: string;
  const cls = `routability-${Date.now().toString(36)}`;
  const stops: (() => unknown)[] = [];
  let echoNetns: string;

  const gateway = (name: string, addresses?: object[]) => httpGateway(ns, name, cls, addresses);

  const state = (name: string): GatewayState => {
    const gw = JSON.parse(kubectlOk(["get", "gateway", name, "-n", ns, "-o", "json"])) as {
      metadata: { generation: number };
      status?: { addresses?: StatusAddress[]; conditions?: Cond[] };
    };
    return {
      generation: gw.metadata.generation,
      addresses: gw.status?.addresses ?? [],
      conditions: gw.status?.conditions ?? [],
    };
  };
  const cond = (s: GatewayState, type: string) => s.conditions.find(c => c.type === type);

  /** Waits until the Gateway's Programmed condition has this reason on the current generation. */
  const settledAs = (name: string, reason: string, timeoutMs = 180_000) =>
    eventually(
      `Gateway ${name} Programmed with reason ${reason}`,
      () => {
        const s = state(name);
        const p = s.conditions.find(c => c.type === "Programmed");
        return p?.reason === reason && p.observedGeneration === s.generation ? s : undefined;
      },
      timeoutMs,
      500,
    );

  const service = (gw: string) =>
    JSON.parse(kubectlOk(["get", "service", proxyNames(gw).proxy, "-n", ns, "-o", "json"])) as {
      spec: { type: string; clusterIP: string };
      status?: { loadBalancer?: { ingress?: { ip?: string }[] } };
    };

  /**
   * One GET from inside the echo pod's network namespace (the pod network) to a cluster IP of
   * the cluster's Service range: the HTTP status curl saw ("000": no answer).
   */
  const fromPod = (ip: string): string => {
    if (!/^10\.96\.\d{1,3}\.\d{1,3}$/.test(ip)) throw new Error(`not a cluster IP: ${ip}`);
    try {
      return execFileSync(
        "nsenter",
        [
          ...[`--net=${echoNetns}`, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}"],
          ...["--max-time", "5", "-H", `Host: ${HOST}`, `http://${ip}:80/`],
        ],
        { encoding: "utf8" },
      ).trim();
    } catch (e) {
      return (e as { stdout?: string }).stdout?.trim() || "000";
    }
  };

  /**
   * Waits for a 200 on the load balancer's address. Programmed is "configuration that is assumed
   * to be ready soon in the underlying data plane" (Gateway API, GatewayConditionProgrammed):
   * the proxies already run the route, but the load balancer forwards only to endpoints its
   * EndpointSlice view holds, which kube-controller-manager publishes after the pod turns Ready.
   * A client of a real cloud load balancer sees the same lag (once seen in CI: a reset).
   */
  const servedOn = (lb: string) =>
    eventually(`the route served on the load balancer ${lb}`, async () => {
      const r = await get(lb, HOST);
      return r.status === 200 ? r : undefined;
    });

  beforeAll(async () => {
    ns = createNamespace("routability");
    applyItems([
      ...echoBackend(ns),
      gatewayClass(cls),
      gateway("cluster", [{ type: "IPAddress", routability: "Cluster" }]),
      gateway("both"),
      gateway("unusable", [
        { type: "IPAddress", value: "10.96.255.254", routability: "Cluster" },
        { type: "IPAddress", routability: "example.com/Public" },
      ]),
      gateway("sentinel", [{ type: "IPAddress", routability: SENTINEL }]),
      gateway("plain"),
      echoRoute(ns, ["cluster", "both", "sentinel", "plain"], HOST),
    ]);
    stops.push(await startReconciler(ns, "routability"));
    const uid = await eventually(
      "a ready echo pod",
      () => {
        const out = kubectl([
          "get",
          "pods",
          "-n",
          ns,
          "-l",
          "app=echo",
          "-o",
          `jsonpath={range .items[*]}{.metadata.uid},{.status.conditions[?(@.type=='Ready')].status}{"\\n"}{end}`,
        ]).stdout.trim();
        const [u, ready] = out.split("\n")[0]?.split(",") ?? [];
        return u && ready === "True" ? u : undefined;
      },
      180_000,
      1000,
    );
    echoNetns = podNetnsPath(uid);
  }, 240_000);

  afterAll(async () => {
    for (const s of stops.reverse()) await s();
    kubectl(["delete", "gatewayclass", cls, "--ignore-not-found"]);
    if (ns) deleteNamespace(ns);
  });

  it("Cluster without a value: a ClusterIP Service, its cluster IP reported as Cluster, served from the pod network", async () => {
    const s = await settledAs("cluster", "Programmed");
    const svc = service("cluster");
    expect(svc.spec.type).toBe("ClusterIP");
    expect(svc.spec.clusterIP).toMatch(/^10\.96\./); // the cluster's Service range (10.96.0.0/16)
    expect(s.addresses).toEqual([
      { type: "IPAddress", value: svc.spec.clusterIP, routability: "Cluster" },
    ]);
    expect(cond(s, "AddressesAssigned")).toMatchObject({
      status: "True",
      reason: "AddressesAssigned",
    });
    await eventually("the route served on the cluster IP", () =>
      fromPod(svc.spec.clusterIP) === "200" ? true : undefined,
    );
  });

  it("Cluster naming the cluster IP beside a default entry: both addresses, both serve", async () => {
    await settledAs("both", "Programmed");
    const ip = service("both").spec.clusterIP;
    kubectlOk([
      "patch",
      "gateway",
      "both",
      "-n",
      ns,
      "--type=merge",
      "-p",
      JSON.stringify({
        spec: { addresses: [{ type: "IPAddress" }, { value: ip, routability: "Cluster" }] },
      }),
    ]);
    const s = await eventually(
      "Gateway both with two addresses",
      async () => {
        const st = await settledAs("both", "Programmed");
        return st.addresses.length === 2 ? st : undefined;
      },
      60_000,
      500,
    );
    const svc = service("both");
    expect(svc.spec.type).toBe("LoadBalancer");
    const lb = svc.status?.loadBalancer?.ingress?.[0]?.ip ?? "";
    expect(s.addresses).toEqual([
      { type: "IPAddress", value: lb, routability: "" },
      { type: "IPAddress", value: ip, routability: "Cluster" },
    ]);
    expect(cond(s, "AddressesAssigned")?.status).toBe("True");
    expect((await servedOn(lb)).status).toBe(200);
    await eventually("the route served on the cluster IP", () =>
      fromPod(ip) === "200" ? true : undefined,
    );
  });

  it("Cluster naming another address, and an implementation-specific routability: AddressNotUsable naming both, nothing reported", async () => {
    const s = await settledAs("unusable", "AddressNotUsable");
    const p = cond(s, "Programmed")!;
    expect(p.status).toBe("False");
    expect(p.message).toContain("10.96.255.254");
    expect(p.message).toContain(service("unusable").spec.clusterIP);
    expect(p.message).toContain("example.com/Public");
    expect(s.addresses).toEqual([]);
    expect(cond(s, "AddressesAssigned")).toMatchObject({ status: "False", reason: "NotAssigned" });
  });

  it("the conformance sentinel: the load balancer's address reported with it", async () => {
    const s = await settledAs("sentinel", "Programmed");
    const lb = service("sentinel").status?.loadBalancer?.ingress?.[0]?.ip ?? "";
    expect(lb).toMatch(/^127\.20\./);
    expect(s.addresses).toEqual([{ type: "IPAddress", value: lb, routability: SENTINEL }]);
    expect((await servedOn(lb)).status).toBe(200);
  });

  it("no routability: the load balancer's address with an explicit empty routability; made Cluster-only, it is no longer exposed", async () => {
    const s = await settledAs("plain", "Programmed");
    const before = service("plain");
    const lb = before.status?.loadBalancer?.ingress?.[0]?.ip ?? "";
    expect(before.spec.type).toBe("LoadBalancer");
    expect(s.addresses).toEqual([{ type: "IPAddress", value: lb, routability: "" }]);
    expect(cond(s, "AddressesAssigned")?.status).toBe("True");
    expect((await servedOn(lb)).status).toBe(200);

    kubectlOk([
      "patch",
      "gateway",
      "plain",
      "-n",
      ns,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { addresses: [{ routability: "Cluster" }] } }),
    ]);
    const after = await eventually(
      "Gateway plain reporting only its cluster IP",
      async () => {
        const st = await settledAs("plain", "Programmed");
        return st.addresses.length === 1 && st.addresses[0]?.routability === "Cluster"
          ? st
          : undefined;
      },
      60_000,
      500,
    );
    const svc = service("plain");
    expect(svc.spec.type).toBe("ClusterIP");
    expect(svc.spec.clusterIP).toBe(before.spec.clusterIP); // the same Service, changed in place
    expect(after.addresses).toEqual([
      { type: "IPAddress", value: svc.spec.clusterIP, routability: "Cluster" },
    ]);
    await eventually("the load balancer address gone", async () =>
      (await get(lb, HOST)).status === 0 ? true : undefined,
    );
    expect(fromPod(svc.spec.clusterIP)).toBe("200");
  });
});
