/**
 * The Lease store over the controller's own client: every request goes through the KubeClient it
 * is given (no client of its own: kubernetes-fluent-client's kept a connection per request alive
 * for ten minutes), with the API server's semantics — 404 is "no Lease", 409 a ConflictError,
 * an apply carrying a stale resourceVersion is refused.
 */
import fc from "fast-check";
import { KubeClient } from "../kube/client";
import { kubeLeaseStore } from "./kube-store";
import { ConflictError, LeaseWrite } from "./types";

const httpError = (status: number) =>
  Object.assign(new Error(`HTTP ${status}`), { status, body: "" });

/** An API server holding one namespace's Leases, as far as the store uses it. */
function fakeApi() {
  const leases = new Map<string, { metadata: Record<string, unknown>; spec: unknown }>();
  const calls: string[] = [];
  let version = 0;
  const kube: KubeClient = {
    async request<T>(method: string, path: string, body?: unknown, contentType?: string) {
      calls.push(`${method} ${path}${contentType ? ` ${contentType}` : ""}`);
      const m =
        /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases(?:\/([^/?]+))?/.exec(path);
      if (!m) throw httpError(404);
      const b = body as { metadata: { name: string; resourceVersion?: string }; spec: unknown };
      const name = m[2] ?? b?.metadata.name;
      const existing = leases.get(name);
      const store = () => {
        const l = { metadata: { ...b.metadata, resourceVersion: String(++version) }, spec: b.spec };
        leases.set(name, l);
        return structuredClone(l) as T;
      };
      if (method === "GET") {
        if (!existing) throw httpError(404);
        return structuredClone(existing) as T;
      }
      if (method === "POST") {
        if (existing) throw httpError(409);
        return store();
      }
      if (method === "PATCH") {
        if (
          b.metadata.resourceVersion &&
          b.metadata.resourceVersion !== existing?.metadata.resourceVersion
        )
          throw httpError(409);
        return store();
      }
      throw httpError(405);
    },
  };
  return { kube, calls, leases };
}

const write = (holder: string, renew: number): LeaseWrite => ({
  holderIdentity: holder,
  leaseDurationSeconds: 15,
  renewTime: new Date(renew).toISOString(),
  leaseTransitions: 0,
});

describe("kubeLeaseStore", () => {
  it("reads, creates and conditionally updates the Lease through the client it is given", async () => {
    const api = fakeApi();
    const store = kubeLeaseStore("ctl", "leader", api.kube);
    expect(await store.get()).toBeUndefined();
    const created = await store.create(write("a", 1));
    expect(created.holderIdentity).toBe("a");
    await expect(store.create(write("b", 2))).rejects.toBeInstanceOf(ConflictError);
    const renewed = await store.update(write("a", 3), created.resourceVersion);
    expect(renewed.renewTime).toBe(new Date(3).toISOString());
    expect(renewed.resourceVersion).not.toBe(created.resourceVersion);
    // the first resourceVersion is stale now: the apply is a precondition
    await expect(store.update(write("b", 4), created.resourceVersion)).rejects.toBeInstanceOf(
      ConflictError,
    );
    expect(await store.get()).toEqual(renewed);
    expect(api.calls).toEqual([
      "GET /apis/coordination.k8s.io/v1/namespaces/ctl/leases/leader",
      "POST /apis/coordination.k8s.io/v1/namespaces/ctl/leases",
      "POST /apis/coordination.k8s.io/v1/namespaces/ctl/leases",
      "PATCH /apis/coordination.k8s.io/v1/namespaces/ctl/leases/leader?fieldManager=pepr&force=true application/apply-patch+yaml",
      "PATCH /apis/coordination.k8s.io/v1/namespaces/ctl/leases/leader?fieldManager=pepr&force=true application/apply-patch+yaml",
      "GET /apis/coordination.k8s.io/v1/namespaces/ctl/leases/leader",
    ]);
  });

  it("other failures reach the elector unchanged", async () => {
    const refused: KubeClient = { request: () => Promise.reject(httpError(403)) };
    const store = kubeLeaseStore("ctl", "leader", refused);
    await expect(store.get()).rejects.toMatchObject({ status: 403 });
    await expect(store.create(write("a", 1))).rejects.toMatchObject({ status: 403 });
    await expect(store.update(write("a", 1), "7")).rejects.toMatchObject({ status: 403 });
  });

  it("a record written is the record read back, whatever its fields", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ minLength: 1, maxLength: 20 }),
        fc.integer({ min: 1, max: 3600 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.option(fc.integer({ min: 0, max: 2 ** 40 }), { nil: undefined }),
        async (holder, seconds, transitions, acquired) => {
          const api = fakeApi();
          const store = kubeLeaseStore("ns", "l", api.kube);
          const w: LeaseWrite = {
            holderIdentity: holder,
            leaseDurationSeconds: seconds,
            leaseTransitions: transitions,
            ...(acquired !== undefined && { acquireTime: new Date(acquired).toISOString() }),
          };
          const created = await store.create(w);
          const read = await store.get();
          expect(read).toEqual(created);
          expect(read).toMatchObject(w);
        },
      ),
      { numRuns: 50 },
    );
  });
});
