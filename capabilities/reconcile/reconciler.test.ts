/**
 * The Reconciler's own sequencing, against an in-memory API server (no watches: the test feeds
 * `ingest`): start-up loads the admin CA, lists every kind and wins the Lease; a GatewayClass of
 * ours that is ingested is built and its status written by the leader; stop releases the Lease.
 * The stages themselves are tested beside their files.
 */
import type { KubeClient } from "../kube/client";
import { CONTROLLER_NAME, Reconciler } from "./reconciler";

type Obj = { metadata: { name: string; resourceVersion?: string }; [k: string]: unknown };

/** Objects by API path; a GET of a collection path (`…/v1/<plural>`, `…/namespaces/<ns>/<plural>`) lists them. */
function fakeApiServer() {
  const objects = new Map<string, Obj>();
  const requests: string[] = [];
  let rv = 1;
  const notFound = () => Object.assign(new Error("not found"), { status: 404, body: "" });
  const isList = (path: string) =>
    /\/(v1|v1alpha1|v1beta1)\/([a-z]+)$|\/namespaces\/[^/]+\/[a-z]+$/.test(path);
  const kube: KubeClient = {
    request: async <T>(method: string, full: string, body?: unknown): Promise<T> => {
      const path = full.split("?")[0]!;
      requests.push(`${method} ${path}`);
      if (method === "GET") {
        const found = objects.get(path);
        if (found) return found as T;
        if (isList(path))
          return {
            items: [...objects.entries()]
              .filter(([k]) => k.startsWith(`${path}/`) && !k.slice(path.length + 1).includes("/"))
              .map(([, o]) => o),
            metadata: { resourceVersion: String(rv) },
          } as T;
        throw notFound();
      }
      if (method === "DELETE") {
        objects.delete(path);
        return {} as T;
      }
      const { stringData, ...o } = body as Obj & { stringData?: Record<string, string> };
      if (stringData)
        o.data = Object.fromEntries(
          Object.entries(stringData).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
        );
      const key = method === "POST" ? `${path}/${o.metadata.name}` : path;
      const stored = {
        ...(objects.get(key) ?? {}),
        ...o,
        metadata: { ...o.metadata, resourceVersion: String(++rv) },
      } as Obj;
      objects.set(key, stored);
      return stored as T;
    },
  };
  return { kube, objects, requests };
}

const quiet = { info() {}, warn() {}, error() {}, debug() {} };

describe("Reconciler", () => {
  it("starts, leads, writes the status of an ingested GatewayClass of ours, and stops", async () => {
    const api = fakeApiServer();
    const reconciler = new Reconciler({
      kube: api.kube,
      log: quiet,
      namespace: "ctl",
      identity: "pod-a",
      watch: false,
      trafficIntervalMs: 0,
      sleep: async () => {},
      election: { leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 20 },
    });
    await reconciler.start();
    for (let i = 0; i < 200 && !reconciler.isLeader(); i++)
      await new Promise(r => setTimeout(r, 5));
    expect(reconciler.isLeader()).toBe(true);
    reconciler.ingest("GatewayClass", "upsert", {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "GatewayClass",
      metadata: { name: "kengine", generation: 1, resourceVersion: "5", uid: "u1" },
      spec: { controllerName: CONTROLLER_NAME },
    } as never);
    reconciler.requestBuild();
    await reconciler.idle();
    const lease = "/apis/coordination.k8s.io/v1/namespaces/ctl/leases/kengine-gateway-leader";
    const leaseHolder = () =>
      (api.objects.get(lease)?.spec as { holderIdentity?: string })?.holderIdentity;
    // start-up: the admin CA made, every kind listed
    expect(
      api.objects.get("/api/v1/namespaces/ctl/secrets/kengine-gateway-admin-ca"),
    ).toBeDefined();
    expect(api.requests).toContain("GET /apis/gateway.networking.k8s.io/v1/httproutes");
    expect(leaseHolder()).toBe("pod-a");
    // the build wrote the class's status: Accepted by us
    const status = api.objects.get(
      "/apis/gateway.networking.k8s.io/v1/gatewayclasses/kengine/status",
    )?.status as { conditions?: { type: string; status: string }[] } | undefined;
    expect(status?.conditions).toContainEqual(
      expect.objectContaining({ type: "Accepted", status: "True" }),
    );
    await reconciler.stop();
    expect(leaseHolder()).not.toBe("pod-a");
  });
});
