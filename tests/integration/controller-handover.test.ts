/**
 * Two controller instances against the real cluster: exactly one (the Lease holder) provisions,
 * pushes and writes status; when it shuts down the other takes over, adopts the programmed
 * proxies without reloading them, and the Gateway's status does not flap.
 */
import { KubeClient, kubeClient } from "../../capabilities/kube/client";
import { DEFAULT_PROXY_SETTINGS } from "../../capabilities/provision";
import { Reconciler } from "../../capabilities/reconcile";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { feed } from "../support/feed";

/** The real client, counting the writes this instance makes. */
function counting(inner: KubeClient) {
  const writes: string[] = [];
  const client: KubeClient = {
    request(method, path, body, contentType) {
      if (method !== "GET") writes.push(`${method} ${path.split("?")[0]}`);
      return inner.request(method, path, body, contentType);
    },
  };
  return { client, writes };
}

const quiet = {
  info: () => {},
  warn: () => {},
  error: (m: string, meta?: object) => console.error(m, meta),
  debug: () => {},
};

describe("two controller instances", () => {
  let ns: string;
  const cls = `handover-${Date.now().toString(36)}`;
  const stops: (() => unknown)[] = [];

  const instance = async (identity: string) => {
    const c = counting(kubeClient());
    const fleetEvents: string[] = [];
    const r = new Reconciler({
      onFleetEvent: e => fleetEvents.push(e.type),
      kube: c.client,
      log: quiet,
      namespace: ns,
      identity,
      election: {
        name: "handover",
        leaseDurationMs: 4000,
        renewDeadlineMs: 3000,
        retryPeriodMs: 500,
      },
      defaults: { ...DEFAULT_PROXY_SETTINGS, replicas: 1 },
    });
    const unfeed = await feed(r);
    await r.start();
    stops.push(unfeed, () => r.stop());
    return { r, writes: c.writes, unfeed, fleetEvents };
  };
  const programmed = () =>
    kubectl([
      "get",
      "gateway",
      "gw",
      "-n",
      ns,
      "-o",
      "jsonpath={.status.conditions[?(@.type=='Programmed')].status}|{.status.conditions[?(@.type=='Programmed')].lastTransitionTime}",
    ]).stdout;

  beforeAll(() => {
    ns = createNamespace("handover");
    kubectlOk(
      ["apply", "-f", "-"],
      `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ${cls}}
spec: {controllerName: kengine.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ${ns}}
spec:
  gatewayClassName: ${cls}
  listeners: [{name: http, port: 80, protocol: HTTP}]
`,
    );
  });
  afterAll(async () => {
    for (const s of stops.reverse()) await s();
    kubectl(["delete", "gatewayclass", cls, "--ignore-not-found"]);
    if (ns) deleteNamespace(ns);
  });

  it("only the leader writes; the successor adopts the proxies and status does not flap", async () => {
    const a = await instance("a");
    const b = await instance("b");
    await eventually(
      "one leader",
      () => (a.r.isLeader() !== b.r.isLeader() ? true : undefined),
      30_000,
    );
    const [leader, follower] = a.r.isLeader() ? [a, b] : [b, a];

    const before = await eventually(
      "the Gateway to be Programmed",
      () => (programmed().startsWith("True|") ? programmed() : undefined),
      120_000,
      500,
    );
    expect(follower.writes).toEqual([]);
    expect(leader.writes.some(w => w.endsWith("/gateways/gw/status"))).toBe(true);
    expect(leader.writes.some(w => w.includes("/deployments/"))).toBe(true);

    // The leader shuts down gracefully: it releases the Lease, the follower takes over.
    await leader.r.stop();
    leader.unfeed();
    await eventually(
      "the follower to lead",
      () => (follower.r.isLeader() ? true : undefined),
      15_000,
    );
    // It adopts the proxy (already running the config): no reload, and the status stays as it was.
    await eventually(
      "the new leader to know the proxy's state",
      () =>
        [...follower.r.proxyStates().values()].some(s => s.phase === "Programmed")
          ? true
          : undefined,
      30_000,
    );
    await follower.r.idle();
    expect(programmed()).toBe(before);
    expect(follower.fleetEvents).toContain("adopted");
    expect(follower.fleetEvents).not.toContain("pushed");
  });
});
