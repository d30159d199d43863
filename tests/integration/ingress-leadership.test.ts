/**
 * Ingress status.loadBalancer across leadership changes (docs/ingress.md, "status.loadBalancer"):
 * two controller instances, each its own process, are configured with different static
 * addresses, as during a rollout that changes them. Leadership moves three times (the leader
 * killed with SIGKILL: no Lease release) while Ingresses are created in the gaps. After each
 * move every Ingress of the class shows the new leader's addresses, and a watch from outside
 * never sees an Ingress's addresses cleared or go back to an old leader's.
 */
import type { ChildProcess } from "node:child_process";
import { K8s, kind } from "kubernetes-fluent-client";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { classAndGateway } from "../support/manifests";
import { Instance, startInstance, stopInstance, stopInstances } from "../support/instances";

const COUNT = 12;

describe("Ingress status.loadBalancer while leadership and addresses change", () => {
  let ns: string;
  const id = Date.now().toString(36);
  const gatewayClass = `ing-lead-${id}`;
  const ingressClass = `ing-lead-${id}`;
  const lease = "ingress-lead";
  const procs: ChildProcess[] = [];
  let watch: { close: () => void } | undefined;
  /** Per Ingress, every address list the watch delivered, in order (repeats collapsed). */
  const seen = new Map<string, string[]>();

  const start = (identity: string, address: string): Instance => {
    const inst = startInstance(ns, identity, lease, {
      KENGINE_INGRESS_STATUS_ADDRESSES: address,
    });
    procs.push(inst.proc);
    return inst;
  };
  const ingress = (name: string) => `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ${name}, namespace: ${ns}}
spec:
  ingressClassName: ${ingressClass}
  rules: [{host: ${name}.lead.test, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: echo, port: {number: 8080}}}}]}}]
`;
  const addresses = (): Map<string, string> =>
    new Map(
      kubectl([
        "get",
        "ingress",
        "-n",
        ns,
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}={.status.loadBalancer.ingress[*].ip}{'\\n'}{end}",
      ])
        .stdout.split("\n")
        .filter(l => l.includes("="))
        .map(l => l.split("=") as [string, string]),
    );
  /** Every Ingress shows `ip` (and there are `count` of them). */
  const allShow = (ip: string, count: number) =>
    eventually(
      `all ${count} Ingresses at ${ip}`,
      () => {
        const now = addresses();
        return now.size === count && [...now.values()].every(v => v === ip) ? now : undefined;
      },
      60_000,
      250,
    );
  const leaderOf = (insts: Instance[]) =>
    eventually("a leader", () => insts.find(i => i.leader), 30_000, 100);

  beforeAll(async () => {
    ns = createNamespace("ing-lead");
    kubectlOk(
      ["apply", "-f", "-"],
      `${classAndGateway(ns, gatewayClass, "{namespaces: {from: Same}}")}---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: ${ingressClass}}
spec:
  controller: kengine.io/ingress-controller
  parameters: {apiGroup: gateway.networking.k8s.io, kind: Gateway, scope: Namespace, namespace: ${ns}, name: gw}
`,
    );
    const w = K8s(kind.Ingress, { namespace: ns }).Watch(o => {
      const name = o.metadata?.name ?? "";
      const v = (o.status?.loadBalancer?.ingress ?? []).map(i => i.ip ?? i.hostname).join(",");
      const list = seen.get(name) ?? [];
      if (list[list.length - 1] !== v) list.push(v);
      seen.set(name, list);
    });
    await w.start();
    watch = { close: () => w.close() };
  });
  afterAll(async () => {
    watch?.close();
    await stopInstances(procs);
    kubectl(["delete", "ingressclass", ingressClass, "--ignore-not-found"]);
    kubectl(["delete", "gatewayclass", gatewayClass, "--ignore-not-found"]);
    if (ns) deleteNamespace(ns);
  });

  it("every Ingress follows the leader's addresses, never cleared, never back", async () => {
    for (let i = 0; i < COUNT; i++) kubectlOk(["apply", "-f", "-"], ingress(`ing-${i}`));
    const a = start("a", "203.0.113.1");
    await leaderOf([a]);
    await allShow("203.0.113.1", COUNT);
    const b = start("b", "203.0.113.2");
    // b waits behind a's Lease; a is killed (no release) and Ingresses arrive in the gap
    await eventually("b started", () => (b.started ? true : undefined), 60_000);
    await stopInstance(a.proc, "SIGKILL");
    for (let i = COUNT; i < COUNT + 3; i++) kubectlOk(["apply", "-f", "-"], ingress(`ing-${i}`));
    expect(await leaderOf([b])).toBe(b);
    await allShow("203.0.113.2", COUNT + 3);
    // and back: c with new addresses, b killed, more Ingresses in the gap
    const c = start("c", "203.0.113.3");
    await eventually("c started", () => (c.started ? true : undefined), 60_000);
    await stopInstance(b.proc, "SIGKILL");
    for (let i = COUNT + 3; i < COUNT + 6; i++)
      kubectlOk(["apply", "-f", "-"], ingress(`ing-${i}`));
    expect(await leaderOf([c])).toBe(c);
    await allShow("203.0.113.3", COUNT + 6);
    // a graceful stop (Lease released): the addresses stay
    await stopInstance(c.proc, "SIGTERM");
    await new Promise(r => setTimeout(r, 2000));
    expect([...addresses().values()]).toEqual(Array(COUNT + 6).fill("203.0.113.3"));

    // From outside: after the first address an Ingress never showed none, and never an
    // older leader's after a newer one's.
    const order = ["203.0.113.1", "203.0.113.2", "203.0.113.3"];
    expect(seen.size).toBe(COUNT + 6);
    for (const [name, list] of seen) {
      const written = list.slice(list.findIndex(v => v !== ""));
      expect({ name, cleared: written.includes("") }).toEqual({ name, cleared: false });
      const ranks = written.map(v => order.indexOf(v));
      expect({ name, ranks }).toEqual({ name, ranks: [...ranks].sort() });
    }
  }, 300_000);
});
