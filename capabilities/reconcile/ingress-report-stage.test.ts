/**
 * The Ingress report stage with fakes and the manual clock: one build's problems become an
 * Event on the Ingress (once, again after a new term), and a served Ingress gets its Gateway's
 * addresses in status.loadBalancer; a follower writes nothing.
 */
import type { KubeClient } from "../kube/client";
import type { FieldProblem } from "../validation/field-problem";
import { snapshotOf } from "../snapshot";
import type { KubeObject } from "../snapshot";
import type { EventRecorder, PushEvent } from "./events";
import { IngressReportStage } from "./ingress-report-stage";
import { ManualClock } from "./testing/manual-clock";

const ingress = (name: string): KubeObject =>
  ({
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: { namespace: "team", name, uid: `uid-${name}`, resourceVersion: "7" },
    spec: {},
  }) as unknown as KubeObject;

const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise(r => setImmediate(r));
};

function stage(leader: boolean) {
  const recorded: { name: string; reason: string; namespace?: string; kind?: string }[] = [];
  const patched: { name: string; status: unknown }[] = [];
  const events = {
    record: (
      ref: { name: string; namespace: string; regarding?: { kind: string } },
      e: PushEvent,
    ) =>
      recorded.push({
        name: ref.name,
        reason: e.reason,
        ...(ref.regarding?.kind === "IngressClass" && {
          namespace: ref.namespace,
          kind: ref.regarding.kind,
        }),
      }),
  } as unknown as EventRecorder;
  const clock = new ManualClock();
  const s = new IngressReportStage({
    kube: {} as KubeClient,
    isLeader: () => leader,
    events,
    log: {
      info: () => undefined,
      warn: () => undefined,
      debug: () => undefined,
      error: () => undefined,
    },
    status: {
      clock,
      patch: async (_ns, name, _rv, status) => {
        patched.push({ name, status });
      },
    },
  });
  return { s, recorded, patched, clock };
}

const snapshot = snapshotOf([ingress("bad"), ingress("good")]);
const problem: FieldProblem = {
  path: "spec.rules[0].host",
  value: "-x",
  message: "not a valid host name",
};
const built = {
  ingresses: new Map<string, readonly FieldProblem[]>([
    ["team/bad", [problem]],
    ["team/good", []],
  ]),
  ingressTargets: new Map([["team/good", "apps/edge"]]),
};
const addresses = new Map([["apps/edge", [{ type: "IPAddress" as const, value: "192.0.2.7" }]]]);

describe("IngressReportStage", () => {
  it("reports a bad Ingress once as an Event and writes the served one's addresses", async () => {
    const { s, recorded, patched, clock } = stage(true);
    s.run(snapshot, built, addresses);
    s.run(snapshot, built, addresses);
    clock.advance(5_000);
    await settle();
    expect(recorded).toEqual([{ name: "bad", reason: "IngressNotServed" }]);
    expect(patched).toEqual([
      { name: "good", status: { loadBalancer: { ingress: [{ ip: "192.0.2.7" }] } } },
    ]);
    s.newTerm();
    s.run(snapshot, built, addresses);
    expect(recorded).toHaveLength(2); // a new term reports what is still wrong again
  });

  it("writes no status while following", async () => {
    const { s, patched, clock } = stage(false);
    s.run(snapshot, built, addresses);
    clock.advance(5_000);
    await settle();
    expect(patched).toEqual([]);
  });

  it("reports an IngressClass whose parameters do not resolve, and its repair, once each", () => {
    const { s, recorded } = stage(true);
    const cls = {
      apiVersion: "networking.k8s.io/v1",
      kind: "IngressClass",
      metadata: { name: "public", uid: "ic-1" },
    } as unknown as KubeObject;
    const withClass = snapshotOf([cls]);
    const missing = new Map([["public", "KengineParameters infra/edge not found"]]);
    s.run(withClass, { ...built, ingresses: new Map(), ingressClasses: missing }, addresses);
    s.run(withClass, { ...built, ingresses: new Map(), ingressClasses: missing }, addresses);
    s.run(
      withClass,
      { ...built, ingresses: new Map(), ingressClasses: new Map([["public", ""]]) },
      addresses,
    );
    expect(recorded).toEqual([
      { name: "public", reason: "IngressClassProblem", namespace: "default", kind: "IngressClass" },
      {
        name: "public",
        reason: "IngressClassResolved",
        namespace: "default",
        kind: "IngressClass",
      },
    ]);
  });
});
