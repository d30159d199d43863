/**
 * The status writer against the real API server: conditional writes, no-op when unchanged,
 * conflict → re-read → retry, other controllers' route parents kept, followers write nothing.
 */
import { kubeClient } from "../../capabilities/kube/client";
import { StatusResults } from "../../capabilities/translate";
import {
  StatusUpdate,
  StatusWriter,
  computeStatusUpdates,
  kubeStatusApi,
} from "../../capabilities/status";
import { createNamespace, deleteNamespace, kubectl, kubectlOk } from "../support/kube";

const CTRL = "kengine.io/gateway-controller";
const cond = (type: string, ok: boolean, reason: string, gen = 1) => ({
  type,
  status: ok ? ("True" as const) : ("False" as const),
  reason,
  message: `${type} is ${ok}`,
  observedGeneration: gen,
});

describe("status writer", () => {
  let ns: string;
  const cls = `status-${Date.now().toString(36)}`;
  const api = kubeStatusApi(kubeClient());
  let leader = true;
  const results = (accepted: boolean): StatusResults => ({
    gatewayClasses: [
      {
        name: cls,
        conditions: [cond("Accepted", true, "Accepted")],
        supportedFeatures: [{ name: "Gateway" }, { name: "HTTPRoute" }],
      },
    ],
    gateways: [
      {
        namespace: ns,
        name: "gw",
        conditions: [
          cond("Accepted", accepted, accepted ? "Accepted" : "Invalid"),
          cond("Programmed", false, "AddressNotAssigned"),
        ],
        listeners: [
          {
            name: "http",
            supportedKinds: [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute" }],
            attachedRoutes: 1,
            conditions: [cond("Accepted", true, "Accepted")],
          },
        ],
      },
    ],
    listenerSets: [],
    routes: [
      {
        kind: "HTTPRoute",
        namespace: ns,
        name: "r",
        parents: [
          {
            parentRef: { name: "gw" },
            controllerName: CTRL,
            conditions: [cond("Accepted", true, "Accepted")],
          },
        ],
      },
    ],
  });
  const compute = async (r: StatusResults, now: string) => {
    const objs = new Map<string, unknown>();
    for (const [k, n] of [
      ["GatewayClass", cls],
      ["Gateway", "gw"],
      ["HTTPRoute", "r"],
    ] as const) {
      objs.set(k, await api.read(k, k === "GatewayClass" ? undefined : ns, n));
    }
    return computeStatusUpdates({
      results: r,
      current: k => objs.get(k) as never,
      controllerName: CTRL,
      addresses: new Map([[`${ns}/gw`, [{ value: "127.20.0.9" }]]]),
      now,
    });
  };
  const writer = (r: () => StatusResults, now: string) =>
    new StatusWriter({
      api,
      isLeader: () => leader,
      recompute: (fresh, stale: StatusUpdate) =>
        computeStatusUpdates({
          results: r(),
          current: (k, _n, name) => (k === stale.kind && name === stale.name ? fresh : undefined),
          controllerName: CTRL,
          addresses: new Map([[`${ns}/gw`, [{ value: "127.20.0.9" }]]]),
          now,
        })[0],
    });

  beforeAll(() => {
    ns = createNamespace("status");
    kubectlOk(
      ["apply", "-f", "-"],
      `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ${cls}}
spec: {controllerName: ${CTRL}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ${ns}}
spec:
  gatewayClassName: ${cls}
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ${ns}}
spec:
  parentRefs: [{name: gw}, {name: foreign}]
`,
    );
  });
  afterAll(() => {
    kubectl(["delete", "gatewayclass", cls, "--ignore-not-found"]);
    deleteNamespace(ns);
  });

  it("writes nothing while not leader", async () => {
    leader = false;
    const report = await writer(() => results(true), "2026-01-01T00:00:00Z").write(
      await compute(results(true), "2026-01-01T00:00:00Z"),
    );
    leader = true;
    expect(report.skippedNotLeader).toBe(true);
    expect(
      kubectlOk(["get", "gateway", "gw", "-n", ns, "-o", "jsonpath={.status.addresses}"]),
    ).toBe("");
  });

  it("writes GatewayClass, Gateway (with addresses and listeners) and route status", async () => {
    // Another controller's entry on the same route must survive our writes.
    const foreign = {
      metadata: {},
      status: {
        parents: [
          {
            parentRef: { name: "foreign" },
            controllerName: "example.com/other",
            conditions: [
              { ...cond("Accepted", true, "Accepted"), lastTransitionTime: "2025-01-01T00:00:00Z" },
            ],
          },
        ],
      },
    };
    kubectlOk([
      "patch",
      "httproute",
      "r",
      "-n",
      ns,
      "--subresource=status",
      "--type=merge",
      "-p",
      JSON.stringify(foreign),
    ]);
    const report = await writer(() => results(true), "2026-01-01T00:00:00Z").write(
      await compute(results(true), "2026-01-01T00:00:00Z"),
    );
    expect(report).toMatchObject({ written: 3, failed: [] });
    const gw = JSON.parse(kubectlOk(["get", "gateway", "gw", "-n", ns, "-o", "json"]));
    expect(gw.status.addresses).toEqual([{ type: "IPAddress", value: "127.20.0.9" }]);
    expect(gw.status.listeners[0]).toMatchObject({ name: "http", attachedRoutes: 1 });
    expect(gw.status.conditions.find((c: { type: string }) => c.type === "Accepted")).toMatchObject(
      {
        status: "True",
        observedGeneration: 1,
        lastTransitionTime: "2026-01-01T00:00:00Z",
      },
    );
    const route = JSON.parse(kubectlOk(["get", "httproute", "r", "-n", ns, "-o", "json"]));
    expect(
      route.status.parents.map((p: { controllerName: string }) => p.controllerName).sort(),
    ).toEqual(["example.com/other", CTRL]);
    const cls_ = JSON.parse(kubectlOk(["get", "gatewayclass", cls, "-o", "json"]));
    expect(cls_.status.supportedFeatures).toEqual([{ name: "Gateway" }, { name: "HTTPRoute" }]);
  });

  it("writes nothing the second time, and keeps lastTransitionTime while a status holds", async () => {
    const updates = await compute(results(true), "2026-02-02T00:00:00Z");
    expect(updates).toEqual([]);
  });

  it("retries a conflicting write from a fresh read", async () => {
    const stale = await compute(results(false), "2026-03-03T00:00:00Z");
    expect(stale.map(u => u.kind)).toEqual(["Gateway"]);
    // Someone else changes the Gateway's status after we read it.
    kubectlOk([
      "patch",
      "gateway",
      "gw",
      "-n",
      ns,
      "--subresource=status",
      "--type=merge",
      "-p",
      '{"status":{"addresses":[{"type":"IPAddress","value":"127.20.0.10"}]}}',
    ]);
    const report = await writer(() => results(false), "2026-03-03T00:00:00Z").write(stale);
    expect(report).toMatchObject({ written: 1, conflicts: 1, failed: [] });
    const gw = JSON.parse(kubectlOk(["get", "gateway", "gw", "-n", ns, "-o", "json"]));
    expect(gw.status.addresses).toEqual([{ type: "IPAddress", value: "127.20.0.9" }]);
    expect(gw.status.conditions.find((c: { type: string }) => c.type === "Accepted")).toMatchObject(
      {
        status: "False",
        lastTransitionTime: "2026-03-03T00:00:00Z",
      },
    );
  });
});
