import { podPhase, podStatus, ContainerView, PodView } from "./status";
import type { Pod } from "./types";

const pod = (restartPolicy: "Always" | "OnFailure" | "Never" = "Always"): Pod => ({
  metadata: { name: "p", namespace: "n", uid: "0123456789abcdef" },
  spec: { restartPolicy, containers: [{ name: "a" }, { name: "b" }] },
});

const running = (name: string, ready = true): ContainerView => ({
  name,
  image: "img",
  state: { running: { startedAt: "2026-01-01T00:00:00Z" } },
  lastState: {},
  restartCount: 0,
  ready,
  started: true,
  finished: false,
});
const waiting = (name: string, reason: string, ran = false): ContainerView => ({
  name,
  image: "img",
  state: { waiting: { reason } },
  lastState: ran ? { terminated: { exitCode: 1, reason: "Error", finishedAt: "t" } } : {},
  restartCount: ran ? 3 : 0,
  ready: false,
  started: false,
  finished: false,
});
const exited = (name: string, exitCode: number): ContainerView => ({
  name,
  image: "img",
  state: { terminated: { exitCode, reason: exitCode ? "Error" : "Completed", finishedAt: "t" } },
  lastState: {},
  restartCount: 0,
  ready: false,
  started: false,
  finished: true,
});
const view = (containers: ContainerView[], extra: Partial<PodView> = {}): PodView => ({
  podIP: "10.244.0.9",
  hostIP: "10.244.0.1",
  startTime: "2026-01-01T00:00:00Z",
  sandboxReady: true,
  initDone: true,
  init: [],
  containers,
  uid: "0123456789abcdef",
  ...extra,
});

describe("podPhase", () => {
  it.each<[string, ContainerView[], string, "Always" | "Never"]>([
    ["all running", [running("a"), running("b")], "Running", "Always"],
    ["one image missing", [running("a"), waiting("b", "ErrImagePull")], "Pending", "Always"],
    ["crash looping", [running("a"), waiting("b", "CrashLoopBackOff", true)], "Running", "Always"],
    ["all exited 0", [exited("a", 0), exited("b", 0)], "Succeeded", "Never"],
    ["one failed", [exited("a", 0), exited("b", 2)], "Failed", "Never"],
    [
      "creating",
      [waiting("a", "ContainerCreating"), waiting("b", "ContainerCreating")],
      "Pending",
      "Always",
    ],
  ])("%s → %s", (_what, cs, phase, policy) => {
    expect(podPhase(pod(policy), view(cs))).toBe(phase);
  });

  it("is Pending until init containers are done", () => {
    expect(podPhase(pod(), view([waiting("a", "PodInitializing")], { initDone: false }))).toBe(
      "Pending",
    );
  });
});

describe("podStatus", () => {
  it("is Ready with IPs and container statuses when every container is ready", () => {
    const s = podStatus(pod(), view([running("a"), running("b")]), "2026-01-02T00:00:00Z");
    expect(s.phase).toBe("Running");
    expect(s.podIP).toBe("10.244.0.9");
    expect(s.podIPs).toEqual([{ ip: "10.244.0.9" }]);
    expect(s.hostIP).toBe("10.244.0.1");
    const cond = Object.fromEntries((s.conditions ?? []).map(c => [c.type, c.status]));
    expect(cond).toEqual({
      PodReadyToStartContainers: "True",
      Initialized: "True",
      Ready: "True",
      ContainersReady: "True",
      PodScheduled: "True",
    });
    expect(s.containerStatuses?.map(c => [c.name, c.ready, c.started])).toEqual([
      ["a", true, true],
      ["b", true, true],
    ]);
  });

  it("names unready containers and keeps transition times of unchanged conditions", () => {
    const first = podStatus(pod(), view([running("a"), running("b", false)]), "T1");
    const ready = first.conditions?.find(c => c.type === "Ready");
    expect(ready).toMatchObject({ status: "False", reason: "ContainersNotReady" });
    expect(ready?.message).toBe("containers with unready status: [b]");
    const p2: Pod = { ...pod(), status: first };
    const second = podStatus(p2, view([running("a"), running("b", false)]), "T2");
    expect(second.conditions?.find(c => c.type === "Ready")?.lastTransitionTime).toBe("T1");
    const third = podStatus(p2, view([running("a"), running("b")]), "T3");
    expect(third.conditions?.find(c => c.type === "Ready")?.lastTransitionTime).toBe("T3");
    expect(JSON.stringify(podStatus(p2, view([running("a"), running("b", false)]), "T4"))).toBe(
      JSON.stringify(second),
    );
  });

  it("keeps conditions other writers own", () => {
    const p: Pod = {
      ...pod(),
      status: { conditions: [{ type: "DisruptionTarget", status: "True" }] },
    };
    const s = podStatus(p, view([running("a"), running("b")]), "T");
    expect(s.conditions?.map(c => c.type)).toContain("DisruptionTarget");
  });
});
