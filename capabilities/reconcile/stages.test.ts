/**
 * The stages composed as the reconciler wires them (build loop → push → provisioning queue →
 * status queue), with an API server that never answers: pushes of later builds go out while
 * the earlier builds' provisioning and status writes still hang.
 */
import { emptySnapshot } from "../snapshot";
import { BuildLoop } from "./dirty-set";
import { ManualClock } from "./testing/manual-clock";
import { ProvisionPlan, ProvisionQueue } from "./provision-queue";
import { StatusQueue } from "./status-queue";

const tick = () => new Promise(r => setImmediate(r));

describe("stages", () => {
  it("a push never waits behind provisioning or status writes, and neither does the next build", async () => {
    const hung: string[] = [];
    const never = (what: string) => {
      hung.push(what);
      return new Promise<never>(() => {});
    };
    const log = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };
    const provision = new ProvisionQueue({
      kube: { request: (method: string, path: string) => never(`${method} ${path}`) },
      log,
      snapshot: emptySnapshot,
      isLeader: () => true,
      clock: new ManualClock(),
    });
    const status = new StatusQueue(log);
    const pushed: number[] = [];
    let version = 0;
    const build = async () => {
      const v = ++version;
      const plan: ProvisionPlan = {
        key: "apps/gw",
        manifests: [
          {
            apiVersion: "apps/v1",
            kind: "Deployment",
            metadata: { namespace: "apps", name: "gw" },
            spec: { v },
          } as never,
        ],
        stale: [],
      };
      pushed.push(v); // the fleet takes the config (push stage)
      provision.offer(plan);
      status.offer("objects", () => never(`status ${v}`));
    };
    const loop = new BuildLoop(build, e => {
      throw e;
    });
    for (let i = 0; i < 3; i++) {
      loop.request();
      await loop.running;
      await tick();
    }
    expect(pushed).toEqual([1, 2, 3]);
    // the first build's provisioning and status write still hang; later ones wait in their queue
    expect([...hung].sort()).toEqual([
      "PATCH /apis/apps/v1/namespaces/apps/deployments/gw?fieldManager=kengine-gateway&force=true",
      "status 1",
    ]);
    expect(provision.running).toEqual(["apps/gw"]);
  });
});
