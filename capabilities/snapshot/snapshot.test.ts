import { KINDS, KubeObject } from "./types";
import { apply, applyAll, emptySnapshot, isSynced, snapshotOf } from "./snapshot";
import { Batcher, Clock, batchDeadline, batchDue, batchLeads, batchNotify } from "./batch";

const obj = (
  kind: string,
  name: string,
  extra: Record<string, unknown> = {},
  namespace = "default",
  rv = "1",
): KubeObject => {
  const { metadata, ...rest } = extra;
  return {
    kind,
    ...rest,
    metadata: { name, namespace, resourceVersion: rv, ...((metadata as object) ?? {}) },
  } as KubeObject;
};

const base = (): KubeObject[] => [
  {
    kind: "GatewayClass",
    metadata: { name: "k", resourceVersion: "1" },
    spec: { controllerName: "kengine.io/gateway-controller" },
  } as KubeObject,
  obj("Gateway", "gw", {
    spec: {
      gatewayClassName: "k",
      listeners: [
        { name: "h", port: 443, protocol: "HTTPS", tls: { certificateRefs: [{ name: "cert" }] } },
      ],
    },
  }),
  obj("HTTPRoute", "r", {
    spec: { parentRefs: [{ name: "gw" }], rules: [{ backendRefs: [{ name: "web", port: 80 }] }] },
  }),
];

describe("snapshot", () => {
  it("builds nothing before every kind has synced", () => {
    let s = emptySnapshot();
    let r = apply(s, { type: "upsert", kind: "HTTPRoute", object: base()[2] });
    expect(r.relevant).toBe(false);
    s = r.snapshot;
    for (const k of KINDS.slice(0, -1)) {
      r = apply(s, { type: "synced", kind: k });
      expect(r.relevant).toBe(false);
      s = r.snapshot;
    }
    r = apply(s, { type: "synced", kind: KINDS[KINDS.length - 1] });
    expect(isSynced(r.snapshot)).toBe(true);
    expect(r.relevant).toBe(true);
  });

  it("never mutates the input snapshot", () => {
    const s = snapshotOf(base());
    const r = apply(s, { type: "delete", kind: "HTTPRoute", object: base()[2] });
    expect(s.objects.HTTPRoute.size).toBe(1);
    expect(r.snapshot.objects.HTTPRoute.size).toBe(0);
    expect(r.snapshot.objects.Gateway).toBe(s.objects.Gateway); // untouched kinds are shared
  });

  it("ignores unreferenced Services, EndpointSlices and Secrets, and replays of the same version", () => {
    const s = snapshotOf(base());
    expect(
      apply(s, { type: "upsert", kind: "Service", object: obj("Service", "other") }).relevant,
    ).toBe(false);
    expect(
      apply(s, { type: "upsert", kind: "Secret", object: obj("Secret", "unrelated") }).relevant,
    ).toBe(false);
    expect(
      apply(s, {
        type: "upsert",
        kind: "EndpointSlice",
        object: obj("EndpointSlice", "other-x", {
          metadata: { labels: { "kubernetes.io/service-name": "other" } },
        }),
      }).relevant,
    ).toBe(false);
    expect(apply(s, { type: "upsert", kind: "HTTPRoute", object: base()[2] }).relevant).toBe(false);
  });

  it("rebuilds for referenced Services, their EndpointSlices, certificate Secrets and our routes", () => {
    const s = snapshotOf(base());
    expect(
      apply(s, { type: "upsert", kind: "Service", object: obj("Service", "web") }).relevant,
    ).toBe(true);
    expect(
      apply(s, {
        type: "upsert",
        kind: "EndpointSlice",
        object: obj("EndpointSlice", "web-x", {
          metadata: { labels: { "kubernetes.io/service-name": "web" } },
        }),
      }).relevant,
    ).toBe(true);
    expect(
      apply(s, { type: "upsert", kind: "Secret", object: obj("Secret", "cert") }).relevant,
    ).toBe(true);
    expect(
      apply(s, {
        type: "upsert",
        kind: "HTTPRoute",
        object: obj("HTTPRoute", "r", { spec: { parentRefs: [{ name: "gw" }] } }, "default", "2"),
      }).relevant,
    ).toBe(true);
  });

  it("rebuilds for the ConfigMaps and Secret a Gateway's spec.tls names, not for others", () => {
    const [gc, gw, route] = base();
    const withTLS = obj("Gateway", "gw", {
      spec: {
        ...(gw as unknown as { spec: object }).spec,
        tls: {
          backend: { clientCertificateRef: { name: "client", namespace: "certs" } },
          frontend: {
            default: {
              validation: { caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "ca" }] },
            },
            perPort: [
              {
                port: 8443,
                tls: {
                  validation: {
                    caCertificateRefs: [
                      { group: "", kind: "ConfigMap", name: "ca2", namespace: "o" },
                    ],
                  },
                },
              },
            ],
          },
        },
      },
    });
    const s = snapshotOf([gc, withTLS, route]);
    const relevant = (kind: "ConfigMap" | "Secret", name: string, ns = "default") =>
      apply(s, { type: "upsert", kind, object: obj(kind, name, {}, ns) }).relevant;
    expect(relevant("ConfigMap", "ca")).toBe(true);
    expect(relevant("ConfigMap", "ca2", "o")).toBe(true);
    expect(relevant("Secret", "client", "certs")).toBe(true);
    expect(relevant("ConfigMap", "unrelated")).toBe(false);
    expect(relevant("Secret", "client")).toBe(false); // other namespace than the ref's
  });

  it("ignores routes and Gateways of other controllers", () => {
    const s = snapshotOf(base());
    expect(
      apply(s, {
        type: "upsert",
        kind: "HTTPRoute",
        object: obj("HTTPRoute", "x", { spec: { parentRefs: [{ name: "elsewhere" }] } }),
      }).relevant,
    ).toBe(false);
    expect(
      apply(s, {
        type: "upsert",
        kind: "Gateway",
        object: obj("Gateway", "g2", { spec: { gatewayClassName: "other" } }),
      }).relevant,
    ).toBe(false);
  });

  it("counts a route that stops referencing a Service: the old state matters", () => {
    const s = snapshotOf([...base(), obj("Service", "web")]);
    const r = applyAll(s, [
      {
        type: "upsert",
        kind: "HTTPRoute",
        object: obj(
          "HTTPRoute",
          "r",
          { spec: { parentRefs: [{ name: "gw" }], rules: [] } },
          "default",
          "2",
        ),
      },
    ]);
    expect(r.relevant).toBe(true);
    expect(
      apply(r.snapshot, {
        type: "upsert",
        kind: "Service",
        object: obj("Service", "web", {}, "default", "9"),
      }).relevant,
    ).toBe(false);
  });

  it("cares about Namespace labels only when a listener selects namespaces", () => {
    const s = snapshotOf(base());
    const ns = { kind: "Namespace", metadata: { name: "team", labels: { a: "1" } } } as KubeObject;
    expect(apply(s, { type: "upsert", kind: "Namespace", object: ns }).relevant).toBe(false);
    const sel = snapshotOf([
      ...base(),
      obj("Gateway", "gw2", {
        spec: {
          gatewayClassName: "k",
          listeners: [
            {
              name: "h",
              port: 80,
              protocol: "HTTP",
              allowedRoutes: {
                namespaces: { from: "Selector", selector: { matchLabels: { a: "1" } } },
              },
            },
          ],
        },
      }),
    ]);
    expect(apply(sel, { type: "upsert", kind: "Namespace", object: ns }).relevant).toBe(true);
  });

  it("cares about a Namespace starting to terminate only when it holds an Ingress", () => {
    const ns = { kind: "Namespace", metadata: { name: "team" } } as KubeObject;
    const deleting = {
      kind: "Namespace",
      metadata: { name: "team", deletionTimestamp: "2026-11-28T12:00:00Z" },
    } as KubeObject;
    const without = snapshotOf([...base(), ns]);
    expect(apply(without, { type: "upsert", kind: "Namespace", object: deleting }).relevant).toBe(
      false,
    );
    const ingress = obj("Ingress", "shop", { spec: { ingressClassName: "k" } }, "team");
    const withIngress = snapshotOf([...base(), ns, ingress]);
    expect(
      apply(withIngress, { type: "upsert", kind: "Namespace", object: deleting }).relevant,
    ).toBe(true);
    // A later update of the terminating namespace (its conditions) changes nothing more.
    const again = apply(withIngress, { type: "upsert", kind: "Namespace", object: deleting });
    const later = { ...deleting, metadata: { ...deleting.metadata, labels: { x: "1" } } };
    expect(
      apply(again.snapshot, { type: "upsert", kind: "Namespace", object: later }).relevant,
    ).toBe(false);
  });

  it("cares about Namespace labels when an ACME issuer is granted by selector", () => {
    const ns = { kind: "Namespace", metadata: { name: "team", labels: { a: "1" } } } as KubeObject;
    const params = (allowedNamespaces: object) =>
      obj(
        "KengineParameters",
        "p",
        { spec: { acme: { issuers: [{ name: "le", server: "https://x/d", allowedNamespaces }] } } },
        "infra",
      );
    const all = snapshotOf([...base(), params({ from: "All" })]);
    expect(apply(all, { type: "upsert", kind: "Namespace", object: ns }).relevant).toBe(false);
    const sel = snapshotOf([
      ...base(),
      params({ from: "Selector", selector: { matchLabels: { a: "1" } } }),
    ]);
    expect(apply(sel, { type: "upsert", kind: "Namespace", object: ns }).relevant).toBe(true);
  });

  it("ignores the ACME Secret name in a ListenerSet's namespace; minds it in a Gateway's", () => {
    const acme = {
      name: "a",
      port: 443,
      protocol: "HTTPS",
      hostname: "shop.example.com",
      tls: { options: { "kengine.io/acme-issuer": "le" } },
    };
    const s = snapshotOf([
      ...base(),
      obj("Gateway", "own", { spec: { gatewayClassName: "k", listeners: [acme] } }, "shop"),
      obj(
        "ListenerSet",
        "ls",
        { spec: { parentRef: { name: "gw", namespace: "default" }, listeners: [acme] } },
        "team",
      ),
    ]);
    const secret = (ns: string) => obj("Secret", "kengine-acme-shop.example.com", { data: {} }, ns);
    expect(apply(s, { type: "upsert", kind: "Secret", object: secret("team") }).relevant).toBe(
      false,
    );
    expect(apply(s, { type: "upsert", kind: "Secret", object: secret("shop") }).relevant).toBe(
      true,
    );
  });
});

describe("batching", () => {
  const o = { holdOffMs: 50, maxWaitMs: 500, leading: false };
  it("waits for a quiet hold-off, but no longer than the maximum wait", () => {
    let st = batchNotify(undefined, 0);
    expect(batchDeadline(st, o)).toBe(50);
    st = batchNotify(st, 40);
    expect(batchDeadline(st, o)).toBe(90);
    expect(batchDue(st, 89, o)).toBe(false);
    expect(batchDue(st, 90, o)).toBe(true);
    for (let t = 80; t <= 480; t += 40) st = batchNotify(st, t);
    expect(batchDeadline(st, o)).toBe(500);
    expect(batchDue(undefined, 1000, o)).toBe(false);
  });

  it("leads after a quiet spell only: no event or build end for a hold-off before it", () => {
    const lead = { ...o, leading: true };
    expect(batchLeads(undefined, 0, lead)).toBe(true);
    expect(batchLeads(100, 149, lead)).toBe(false);
    expect(batchLeads(100, 150, lead)).toBe(true);
    expect(batchLeads(undefined, 0, o)).toBe(false);
    const st = batchNotify(undefined, 10, true);
    expect(batchDeadline(st, lead)).toBe(10);
    // later events of a leading burst do not push its deadline back
    expect(batchDeadline(batchNotify(st, 30), lead)).toBe(10);
  });

  function manualClock() {
    const clock = { t: 0 };
    const timers: { at: number; fn: () => void; id: number }[] = [];
    let nextId = 0;
    const c: Clock = {
      now: () => clock.t,
      setTimeout: (fn, ms) => {
        const t = { at: clock.t + ms, fn, id: nextId++ };
        timers.push(t);
        return t.id;
      },
      clearTimeout: id => {
        const i = timers.findIndex(t => t.id === id);
        if (i >= 0) timers.splice(i, 1);
      },
    };
    const advance = (to: number): void => {
      clock.t = to;
      for (const t of timers.filter(t => t.at <= to).sort((a, b) => a.at - b.at)) {
        timers.splice(timers.indexOf(t), 1);
        t.fn();
      }
    };
    return { clock: c, advance };
  }

  it("Batcher flushes once per burst with an injected clock", () => {
    const { clock, advance } = manualClock();
    let flushes = 0;
    const b = new Batcher(() => flushes++, o, clock);
    b.notify();
    advance(30);
    b.notify();
    advance(60);
    expect(flushes).toBe(0);
    advance(80);
    expect(flushes).toBe(1);
    expect(b.pending).toBe(false);
    for (let t = 100; t <= 700; t += 20) {
      advance(t);
      b.notify();
    }
    expect(flushes).toBe(2); // the burst from 100 on flushed at 600 (max wait)
  });

  it("leading Batcher: a lone event is built at once; a stream of events is still batched", () => {
    const { clock, advance } = manualClock();
    const at: number[] = [];
    const b = new Batcher(() => at.push(clock.now()), { ...o, leading: true }, clock);
    // a lone event after a quiet spell: flushed on the next turn, with the events of its turn
    b.notify();
    b.notify();
    expect(at).toEqual([]);
    advance(0);
    expect(at).toEqual([0]);
    // a stream, an event every 10 ms: none of it leads (each comes within the hold-off of the
    // previous one), whatever the flushes in between; bursts are cut by the maximum wait
    for (let t = 10; t <= 1000; t += 10) {
      advance(t);
      b.notify();
    }
    advance(1009);
    expect(at).toEqual([0, 510]);
    advance(1010);
    expect(at).toEqual([0, 510, 1010]);
    // quiet again: the next lone event leads
    advance(3000);
    b.notify();
    advance(3000);
    expect(at).toEqual([0, 510, 1010, 3000]);
    // an event just after it (within the hold-off) waits the hold-off
    advance(3020);
    b.notify();
    advance(3069);
    expect(at.length).toBe(4);
    advance(3070);
    expect(at).toEqual([0, 510, 1010, 3000, 3070]);
    // the events that queued behind a long build arrive together after it: not a lone change
    advance(4000);
    b.activity(); // a build ended just now
    advance(4010);
    b.notify();
    advance(4010);
    expect(at.length).toBe(5);
    advance(4060);
    expect(at).toEqual([0, 510, 1010, 3000, 3070, 4060]);
  });

  it("status-only events never lead and never hold a config change back", () => {
    const lead = { ...o, leading: true };
    // alone: trailing, on their own timings
    let st = batchNotify(undefined, 0, false, "status");
    expect(batchDeadline(st, lead)).toBe(50);
    for (let t = 40; t <= 480; t += 40) st = batchNotify(st, t, false, "status");
    expect(batchDeadline(st, lead)).toBe(500);
    // a config change joining them: the earlier of the two deadlines
    expect(batchDeadline(batchNotify(st, 300, true), lead)).toBe(300);
    expect(batchDeadline(batchNotify(st, 300, false), lead)).toBe(350);
    expect(batchDeadline(batchNotify(st, 480, false), lead)).toBe(500);
  });

  it("leading Batcher: a config change amid a stream of status echoes is built at once", () => {
    const { clock, advance } = manualClock();
    const at: number[] = [];
    const b = new Batcher(() => at.push(clock.now()), { ...o, leading: true }, clock);
    // our status writes coming back every 10 ms: batched (max wait), never leading
    for (let t = 0; t <= 1000; t += 10) {
      advance(t);
      b.notify("status");
    }
    expect(at).toEqual([500, 1000]);
    b.activity(); // the build of 1000 ended
    // a route change at 1060, amid the echoes, 60 ms after that build: built at once
    for (let t = 1010; t <= 1100; t += 10) {
      advance(t);
      if (t === 1060) b.notify();
      b.notify("status");
      advance(t); // the next turn of the event loop
    }
    expect(at).toEqual([500, 1000, 1060]);
    // the echoes after it go on batching on their own timings
    advance(1150);
    expect(at).toEqual([500, 1000, 1060, 1150]);
    // a config change within the hold-off of a build's end waits the hold-off, not the echoes'
    b.activity();
    for (let t = 1160; t <= 1400; t += 10) {
      advance(t);
      b.notify("status");
      if (t === 1170) b.notify();
    }
    expect(at).toEqual([500, 1000, 1060, 1150, 1220]);
  });
});
