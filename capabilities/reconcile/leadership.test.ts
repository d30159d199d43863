/**
 * The reconciler's election wiring with a fake API server holding one Lease: the Lease is the
 * controller's, in its namespace; winning it runs `lead`, stopping runs `follow` and releases it.
 */
import type { KubeClient } from "../kube/client";
import { leaderElector } from "./leadership";

function fakeLeases() {
  let lease: { metadata: { resourceVersion: string }; spec: Record<string, unknown> } | undefined;
  let rv = 1;
  const paths: string[] = [];
  const kube = {
    request: async (method: string, path: string, body?: { spec: Record<string, unknown> }) => {
      paths.push(`${method} ${path.split("?")[0]}`);
      if (method === "GET") {
        if (!lease) throw Object.assign(new Error("not found"), { status: 404 });
        return lease;
      }
      lease = { metadata: { resourceVersion: String(++rv) }, spec: body!.spec };
      return lease;
    },
  } as unknown as KubeClient;
  return { kube, paths, holder: () => lease?.spec.holderIdentity };
}

describe("leadership", () => {
  it("wins the controller's Lease, leads, and on stop follows and releases it", async () => {
    const { kube, paths, holder } = fakeLeases();
    const calls: string[] = [];
    const log = { info() {}, warn() {}, error() {}, debug() {} };
    const elector = leaderElector(
      { kube, log, namespace: "ctl", identity: "pod-a" },
      { lead: () => calls.push("lead"), follow: () => calls.push("follow") },
    );
    elector.start();
    for (let i = 0; i < 100 && !elector.isLeader(); i++) await new Promise(r => setTimeout(r, 5));
    expect(elector.isLeader()).toBe(true);
    expect(calls).toEqual(["lead"]);
    expect(holder()).toBe("pod-a");
    await elector.stop();
    expect(calls).toEqual(["lead", "follow"]);
    expect(holder()).not.toBe("pod-a");
    expect(paths[0]).toBe(
      "GET /apis/coordination.k8s.io/v1/namespaces/ctl/leases/kengine-gateway-leader",
    );
  });
});
