import type { GatewayIR } from "../ir";
import { GatewayPlanLike, planStage } from "./plan-stage";

const ir = (name: string) => ({ namespace: "ns", name }) as unknown as GatewayIR;
const plan = (key: string, pods: string[], settingsProblems: string[] = []): GatewayPlanLike =>
  ({
    key,
    targets: pods.map(name => ({ endpoint: { name } })),
    proxies: [],
    configProblem: undefined,
    settingsProblems,
  }) as unknown as GatewayPlanLike;
const log = () => {
  const lines: string[] = [];
  return {
    lines,
    warn: (m: string, meta?: Record<string, unknown>) =>
      lines.push(`warn ${m} ${JSON.stringify(meta)}`),
    error: (m: string, meta?: Record<string, unknown>) =>
      lines.push(`error ${m} ${JSON.stringify(meta)}`),
  };
};

describe("planStage", () => {
  it("plans every Gateway; one that throws fails alone, with its Programmed message", () => {
    const l = log();
    const { plans, failures } = planStage({
      gateways: [ir("a"), ir("b"), ir("c")],
      plan: g => {
        if (g.name === "b") throw new Error("boom");
        return plan(`ns/${g.name}`, [`ns/${g.name}-pod`]);
      },
      createdAt: () => "",
      log: l,
    });
    expect(plans.map(p => p.key)).toEqual(["ns/a", "ns/c"]);
    expect([...failures]).toEqual([
      ["ns/b", "cannot translate this Gateway's configuration: boom"],
    ]);
    expect(l.lines).toEqual([`error cannot plan gateway {"gateway":"ns/b","error":"boom"}`]);
  });

  it("the oldest Gateway keeps a pod two Gateways select", () => {
    const { plans } = planStage({
      gateways: [ir("young"), ir("old")],
      plan: g => plan(`ns/${g.name}`, ["ns/shared"]),
      createdAt: key => (key === "ns/old" ? "2020-01-01T00:00:00Z" : "2021-01-01T00:00:00Z"),
      log: log(),
    });
    expect(plans.map(p => [p.key, p.targets.length])).toEqual([
      ["ns/young", 0],
      ["ns/old", 1],
    ]);
    expect(plans[0]!.configProblem).toContain("kept by Gateway ns/old");
  });

  it("logs each settings problem under its Gateway", () => {
    const l = log();
    planStage({
      gateways: [ir("a")],
      plan: () => plan("ns/a", [], ["bad replicas"]),
      createdAt: () => "",
      log: l,
    });
    expect(l.lines).toEqual([`warn proxy settings {"gateway":"ns/a","problem":"bad replicas"}`]);
  });
});
