/**
 * Two controller instances, each its own process, against the real cluster: exactly one (the
 * Lease holder) provisions, pushes and writes status; when it is killed (SIGKILL: no Lease
 * release) the other takes over after the Lease expires, adopts the programmed proxies
 * without reloading them, and no status flaps.
 *
 * Who wrote status is proved by the API server, not by the instances: its audit log
 * (hack/cluster.sh: status-subresource writes at Metadata level) records every status write
 * with the writer's User-Agent, `kengine-gateway/<identity>`. Flaps are watched from outside:
 * every version of the Gateway's and the route's status the API server sends.
 */
import type { ChildProcess } from "node:child_process";
import { K8s } from "kubernetes-fluent-client";
import { userAgent } from "../../capabilities/kube/client";
import { Gateway, HTTPRoute } from "../../capabilities/generated";
import {
  AuditEvent,
  auditEvents,
  auditLogEnabled,
  auditLogPath,
  isStatusWrite,
} from "../support/audit";
import { INSTANCE_ELECTION } from "../support/controller-instance";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { classAndGateway } from "../support/manifests";
import { Instance, startInstance, stopInstances } from "../support/instances";

interface Cond {
  type: string;
  status: string;
  reason: string;
  lastTransitionTime?: string;
}
interface Watched {
  metadata: { name?: string };
  status?: {
    conditions?: Cond[];
    listeners?: { name: string; conditions?: Cond[] }[];
    parents?: { controllerName: string; conditions?: Cond[] }[];
  };
}

/** Each condition's values in the order the watch delivered them (repeats collapsed). */
class ConditionTimeline {
  readonly values = new Map<string, string[]>();
  observe(kind: string, o: Watched): void {
    const put = (key: string, cs: Cond[] | undefined) => {
      for (const c of cs ?? []) {
        const k = `${kind}/${o.metadata.name}${key}:${c.type}`;
        const v = `${c.status}/${c.reason}`;
        const seq = this.values.get(k) ?? [];
        if (seq[seq.length - 1] !== v) seq.push(v);
        this.values.set(k, seq);
      }
    };
    put("", o.status?.conditions);
    for (const l of o.status?.listeners ?? []) put(` listener ${l.name}`, l.conditions);
    for (const p of o.status?.parents ?? [])
      if (p.controllerName === "kengine.io/gateway-controller") put(" parent", p.conditions);
  }
  /** Forgets the history before now: each condition keeps only its current value. */
  mark(): void {
    for (const [k, seq] of this.values) this.values.set(k, seq.slice(-1));
  }
  /** Conditions that went to another value and back ("True/A → False/B → True/A"). */
  flaps(): string[] {
    return [...this.values]
      .filter(([, seq]) => new Set(seq).size < seq.length)
      .map(([k, seq]) => `${k}: ${seq.join(" → ")}`);
  }
}

describe("two controller instances (separate processes)", () => {
  let ns: string;
  const cls = `handover-${Date.now().toString(36)}`;
  const lease = "handover";
  const procs: ChildProcess[] = [];
  const closers: (() => void)[] = [];

  const start = (identity: string): Instance => {
    const inst = startInstance(ns, identity, lease);
    procs.push(inst.proc);
    return inst;
  };

  const holder = () =>
    kubectl([
      "get",
      "lease",
      lease,
      "-n",
      ns,
      "-o",
      "jsonpath={.spec.holderIdentity}|{.spec.acquireTime}|{.spec.renewTime}",
    ]).stdout;
  const programmed = () =>
    kubectl([
      "get",
      "gateway",
      "gw",
      "-n",
      ns,
      "-o",
      "jsonpath={.status.conditions[?(@.type=='Programmed')].status}|{.status.conditions[?(@.type=='Programmed')].lastTransitionTime}",
    ]).stdout;
  const routeAccepted = (name: string) =>
    kubectl([
      "get",
      "httproute",
      name,
      "-n",
      ns,
      "-o",
      "jsonpath={.status.parents[0].conditions[?(@.type=='Accepted')].status}",
    ]).stdout === "True";
  const route = (name: string) => `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ${name}, namespace: ${ns}}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: echo, port: 8080}]}]
`;

  beforeAll(() => {
    ns = createNamespace("handover");
    kubectlOk(
      ["apply", "-f", "-"],
      `${classAndGateway(ns, cls)}---
${route("before")}`,
    );
  });
  afterAll(async () => {
    for (const c of closers) c();
    await stopInstances(procs);
    kubectl(["delete", "gatewayclass", cls, "--ignore-not-found"]);
    if (ns) deleteNamespace(ns);
  });

  it("only the Lease holder writes status (audit log); a killed leader is replaced, proxies adopted, no flap", async () => {
    if (!auditLogEnabled())
      throw new Error(
        `no audit log at ${auditLogPath}: kube-apiserver runs without one (hack/cluster.sh up restarts it with it)`,
      );
    // Every version of the Gateway's and the routes' status the API server sends.
    const timeline = new ConditionTimeline();
    for (const [kind, model] of [
      ["Gateway", Gateway],
      ["HTTPRoute", HTTPRoute],
    ] as const) {
      const w = K8s(model)
        .InNamespace(ns)
        .Watch(o => timeline.observe(kind, o as unknown as Watched));
      await w.start();
      closers.push(() => w.close());
    }

    const suffix = Math.random().toString(36).slice(2, 7);
    const a = start(`handover-a-${suffix}`);
    const b = start(`handover-b-${suffix}`);
    await eventually(
      "both instances started",
      () => (a.started && b.started ? true : undefined),
      120_000,
    );
    const [leader, follower] = await eventually(
      "one leader",
      () => {
        const h = holder().split("|")[0];
        return h === a.identity ? [a, b] : h === b.identity ? [b, a] : undefined;
      },
      30_000,
    );
    const before = await eventually(
      "the Gateway to be Programmed and the route Accepted",
      () =>
        programmed().startsWith("True|") && routeAccepted("before") ? programmed() : undefined,
      180_000,
      500,
    );
    expect(follower.leader).toBe(false);

    // From here on (handover and after), no condition may go to another value and back.
    timeline.mark();
    // Kill the leader: no graceful stop, the Lease is not released.
    const [, , lastRenew] = holder().split("|");
    leader.proc.kill("SIGKILL");
    await new Promise(r => leader.proc.once("exit", r));
    const [newHolder, acquired] = await eventually(
      "the follower to take the Lease",
      () => {
        const [h, acq] = holder().split("|");
        return h === follower.identity ? [h, acq] : undefined;
      },
      60_000,
      100,
    );
    expect(newHolder).toBe(follower.identity);
    const takeoverMs = Date.parse(acquired!) - Date.parse(lastRenew!);
    console.log(
      `handover: Lease last renewed by the killed leader ${lastRenew}, acquired by the follower ${acquired} (${takeoverMs} ms; lease duration ${INSTANCE_ELECTION.leaseDurationMs} ms, retry period ${INSTANCE_ELECTION.retryPeriodMs} ms)`,
    );

    // The new leader adopts the proxy that already runs the config: no reload, status as it was.
    await eventually(
      "the new leader to adopt the proxy",
      () => (follower.fleet.includes("adopted") ? true : undefined),
      60_000,
    );
    expect(follower.fleet).not.toContain("pushed");
    // A change after the handover: only the new leader can write its status.
    kubectlOk(["apply", "-f", "-"], route("after"));
    await eventually(
      "the new route Accepted",
      () => (routeAccepted("after") ? true : undefined),
      60_000,
    );
    expect(programmed()).toBe(before);

    // The API server's account of who wrote status in this test's namespace and class.
    const ours = (e: AuditEvent) =>
      e.objectRef?.namespace === ns ||
      (e.objectRef?.resource === "gatewayclasses" && e.objectRef.name === cls);
    await eventually(
      "the audit log to hold the new route's status write",
      () =>
        auditEvents().some(
          e =>
            isStatusWrite(e) &&
            ours(e) &&
            e.objectRef?.name === "after" &&
            e.objectRef.resource === "httproutes",
        )
          ? true
          : undefined,
      30_000,
    );
    const writes = auditEvents().filter(e => isStatusWrite(e) && ours(e));
    const by = (inst: Instance) => writes.filter(e => e.userAgent === userAgent(inst.identity));
    const others = writes.filter(
      e =>
        e.userAgent !== userAgent(leader.identity) && e.userAgent !== userAgent(follower.identity),
    );
    const count = (es: AuditEvent[]) =>
      Object.entries(
        es.reduce<Record<string, number>>((m, e) => {
          const k = `${e.objectRef?.resource}/status`;
          m[k] = (m[k] ?? 0) + 1;
          return m;
        }, {}),
      )
        .map(([k, n]) => `${k} ${n}`)
        .join(", ");
    const acquiredMs = Date.parse(acquired!);
    const followerEarly = by(follower).filter(
      e => Date.parse(e.requestReceivedTimestamp) < acquiredMs,
    );

    console.log(
      [
        `audit log: ${writes.length} status writes in namespace ${ns} and class ${cls}`,
        `  first leader ${leader.identity} (until killed): ${by(leader).length} (${count(by(leader))})`,
        `  follower ${follower.identity}: ${followerEarly.length} before it held the Lease, ${by(follower).length - followerEarly.length} after (${count(by(follower))})`,
        `  anyone else: ${others.length}`,
      ].join("\n"),
    );
    expect(by(leader).length).toBeGreaterThan(0);
    expect(by(follower).length).toBeGreaterThan(0);
    expect(followerEarly).toEqual([]);
    expect(others).toEqual([]);

    // No condition went to another value and back during the handover.
    expect(timeline.flaps()).toEqual([]);
    expect(timeline.values.size).toBeGreaterThan(0);
  });
});
