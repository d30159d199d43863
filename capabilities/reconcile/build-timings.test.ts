import { registry } from "../metrics";
import { BuildObserver, BuildPhase, BuildStage, buildMetrics } from "../metrics/build";
import { BuildTimings } from "./build-timings";

/** A manual clock and an observer that records what it is told. */
function setup() {
  let t = 1000;
  const seen = {
    phases: [] as [BuildPhase, number][],
    propagation: [] as number[],
    stages: new Map<BuildStage, number>(),
  };
  const observer: BuildObserver = {
    phase: (p, s) => seen.phases.push([p, s]),
    propagation: s => seen.propagation.push(s),
    stage: (st, n) => seen.stages.set(st, (seen.stages.get(st) ?? 0) + n),
  };
  const timings = new BuildTimings(() => t, observer);
  return { timings, seen, advance: (ms: number) => (t += ms), now: () => t };
}

describe("BuildTimings", () => {
  it("times each phase from the previous mark and the queue from the first change", () => {
    const { timings, seen, advance, now } = setup();
    timings.received(now(), 2);
    advance(30);
    timings.received(now(), 3);
    advance(20); // batching: the build starts 50 ms after the first change
    const run = timings.begin();
    advance(7);
    run.mark("translate");
    advance(11);
    run.mark("render");
    advance(5);
    run.mark("push");
    advance(13);
    run.mark("status");
    const record = run.end({ translated: 2, reused: 1, rendered: 1, pushed: 1 });
    expect(record.ms).toEqual({
      queued: 50,
      snapshot: 5,
      translate: 7,
      render: 11,
      push: 5,
      status: 13,
    });
    expect(record.totalMs).toBe(36);
    expect(record.changes).toBe(2);
    expect(seen.phases).toEqual([
      ["queued", 0.05],
      ["snapshot", 0.005],
      ["translate", 0.007],
      ["render", 0.011],
      ["push", 0.005],
      ["status", 0.013],
    ]);
    expect(Object.fromEntries(seen.stages)).toEqual({
      translated: 2,
      reused: 1,
      rendered: 1,
      pushed: 1,
    });
  });

  it("a build of no change has no queue or snapshot phase; changes during a build go to the next", () => {
    const { timings, advance, now } = setup();
    const first = timings.begin();
    timings.received(now(), 1);
    advance(4);
    expect(first.end({ translated: 0, reused: 0, rendered: 0, pushed: 0 }).ms).toEqual({});
    const second = timings.begin();
    expect(second.receivedAt).toBe(now() - 4);
    expect(second.end({ translated: 0, reused: 0, rendered: 0, pushed: 0 }).ms).toEqual({
      queued: 4,
      snapshot: 1,
    });
  });

  it("counts only configs that changed as pushed, and observes acknowledgement and propagation", () => {
    const { timings, seen, advance, now } = setup();
    const receivedAt = now();
    advance(10);
    expect(
      timings.sent(
        [
          { name: "ns/a", hash: "h1" },
          { name: "ns/b", hash: "h1" },
        ],
        receivedAt,
      ),
    ).toBe(2);
    advance(40);
    timings.acknowledged("ns/a", "h0"); // an older config: not this push
    timings.acknowledged("ns/a", "h1");
    advance(10);
    timings.acknowledged("ns/b", "h1");
    timings.acknowledged("ns/b", "h1"); // a second answer for the same push counts once
    expect(seen.phases).toEqual([
      ["acknowledged", 0.04],
      ["acknowledged", 0.05],
    ]);
    // once per build, at the first proxy's answer
    expect(seen.propagation).toEqual([0.05]);
    // the same configs again: nothing new handed over
    expect(timings.sent([{ name: "ns/a", hash: "h1" }], undefined)).toBe(0);
    // ns/b is gone; when it comes back with the same config it is a new push
    expect(timings.sent([{ name: "ns/b", hash: "h1" }], undefined)).toBe(1);
    advance(5);
    timings.acknowledged("ns/b", "h1");
    expect(seen.propagation).toEqual([0.05]); // no change behind that build
  });
});

describe("build metrics", () => {
  it("are on the controller's registry under the documented names", async () => {
    const timings = new BuildTimings(() => 0);
    timings.begin().end({ translated: 3, reused: 2, rendered: 1, pushed: 0 });
    buildMetrics.phase("translate", 0.004);
    buildMetrics.propagation(0.03);
    const text = await registry.metrics();
    expect(text).toContain(
      'kengine_gateway_build_phase_seconds_bucket{le="0.005",phase="translate"} 1',
    );
    expect(text).toContain("kengine_gateway_propagation_seconds_count 1");
    expect(text).toContain('kengine_gateway_build_gateways_total{stage="translated"} 3');
    expect(text).toContain('kengine_gateway_build_gateways_total{stage="reused"} 2');
    expect(text).not.toContain('stage="pushed"'); // nothing pushed: no series yet
  });
});
