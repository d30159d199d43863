import { CONTROLLER_NAME } from "../ownership";
import type { ProxyState } from "../proxies";
import { KubeObject, emptySnapshot, snapshotOf } from "../snapshot";
import { StatusApi, StatusMemo, WriteReport } from "../status";
import type { StatusUpdate } from "../status/compute";
import { translate } from "../translate";
import type { GatewayPlan } from "./plan";
import { ObjectStatusInput, StatusStage, objectStatusJob } from "./status-stage";

const report: WriteReport = { written: 0, conflicts: 0, failed: [] } as unknown as WriteReport;

const fakeWriter = () => {
  const writes: (readonly StatusUpdate[])[] = [];
  let version = 1;
  const writer: ObjectStatusInput["writer"] = {
    freshest: (_k, _ns, _n, cached) => cached,
    get version() {
      return version;
    },
    writtenSince: () => undefined,
    write: async updates => {
      writes.push(updates);
      version++;
      return report;
    },
  };
  return { writer, writes };
};

describe("objectStatusJob", () => {
  it("computes nothing until the queue runs it, then always hands the writer its updates", async () => {
    const { writer, writes } = fakeWriter();
    const reports: WriteReport[] = [];
    const job = objectStatusJob({
      results: { gatewayClasses: [], gateways: [], listenerSets: [], routes: [] },
      addresses: new Map(),
      snapshot: emptySnapshot(),
      now: new Date("2026-11-28T08:00:00.123Z"),
      writer,
      memo: new StatusMemo(),
      report: r => reports.push(r),
    });
    expect(writes).toEqual([]);
    await job();
    expect(writes).toEqual([[]]);
    expect(reports).toEqual([report]);
  });
});

describe("status stage", () => {
  const gatewayObjects = [
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "GatewayClass",
      metadata: { name: "kengine", generation: 1 },
      spec: { controllerName: CONTROLLER_NAME },
    },
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "Gateway",
      metadata: { namespace: "apps", name: "edge", uid: "g1", generation: 1 },
      spec: {
        gatewayClassName: "kengine",
        listeners: [{ name: "http", port: 80, protocol: "HTTP" }],
      },
    },
  ] as unknown as KubeObject[];
  const snapshot = snapshotOf(gatewayObjects);
  const statuses = translate(snapshot, { controllerName: CONTROLLER_NAME }).statuses;
  const plan = {
    key: "apps/edge",
    targets: [{ endpoint: { name: "apps/p-a" }, config: { hash: "h1" } }],
    desiredHash: "h1",
    serviceExists: true,
    addresses: [{ type: "IPAddress", value: "10.0.0.9" }],
    configBytes: 10,
  } as unknown as GatewayPlan;

  function stage() {
    const offered: [string, () => Promise<void>][] = [];
    const proxyWrites: { plans: readonly unknown[]; now: Date }[] = [];
    const api: StatusApi = {
      read: async () => undefined,
      writeStatus: async u => ({ ...u, metadata: { resourceVersion: "2" } }) as never,
    };
    const s = new StatusStage({
      api,
      isLeader: () => true,
      log: { info() {}, warn() {}, error() {}, debug() {} },
      queue: { offer: (lane, job) => void offered.push([lane, job]) },
      proxyWrites: {
        write: async (plans, now) => void proxyWrites.push({ plans, now }),
      },
    });
    return { s, offered, proxyWrites };
  }
  const programmed = (r: ReturnType<StatusStage["run"]>) =>
    r.results.gateways[0]!.conditions.find(c => c.type === "Programmed");

  it("decides Programmed from the fleet's states and queues the proxies' and objects' writes", async () => {
    const { s, offered, proxyWrites } = stage();
    const now = new Date("2026-11-28T08:00:00Z");
    const input = {
      plans: [plan],
      statuses,
      planFailures: new Map<string, string>(),
      snapshot,
      bundleVersion: undefined,
      missingKinds: [],
      now,
    };
    const pending = s.run({ ...input, fleet: { state: () => undefined } });
    expect(programmed(pending)?.status).toBe("False");
    const running = s.run({
      ...input,
      fleet: { state: () => ({ phase: "Programmed", hash: "h1" }) as ProxyState },
    });
    expect(programmed(running)?.status).toBe("True");
    expect(running.addresses.get("apps/edge")).toEqual(plan.addresses);
    expect(offered.map(([lane]) => lane)).toEqual(["proxies", "objects", "proxies", "objects"]);
    await offered[2]![1]();
    expect(proxyWrites).toEqual([{ plans: [plan], now }]);
    s.close();
  });

  it("a Gateway that could not be planned says why", () => {
    const { s } = stage();
    const r = s.run({
      plans: [],
      statuses,
      planFailures: new Map([["apps/edge", "cannot plan: boom"]]),
      snapshot,
      fleet: { state: () => undefined },
      bundleVersion: undefined,
      missingKinds: [],
      now: new Date(),
    });
    expect(programmed(r)?.message).toContain("boom");
    s.close();
  });
});
