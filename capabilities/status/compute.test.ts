import fc from "fast-check";
import { StatusResults } from "../translate";
import {
  StoredObject,
  computeStatusUpdates,
  gatewayStatus,
  policyStatus,
  routeStatus,
  stampConditions,
} from "./compute";

const CTRL = "kengine.io/gateway-controller";
const T0 = "2026-01-01T00:00:00Z";
const T1 = "2026-01-02T00:00:00Z";
const accepted = (status: "True" | "False", gen = 1) => ({
  type: "Accepted",
  status,
  reason: status === "True" ? "Accepted" : "Invalid",
  message: "m",
  observedGeneration: gen,
});

describe("stampConditions", () => {
  it("keeps lastTransitionTime while the status stays, moves it when the status changes", () => {
    const stored = [{ ...accepted("True"), lastTransitionTime: T0 }];
    expect(stampConditions(stored, [accepted("True", 2)], T1)[0]).toMatchObject({
      lastTransitionTime: T0,
      observedGeneration: 2,
    });
    expect(stampConditions(stored, [accepted("False")], T1)[0].lastTransitionTime).toBe(T1);
    expect(stampConditions(undefined, [accepted("True")], T1)[0].lastTransitionTime).toBe(T1);
  });
});

describe("stampConditions with conditions of types we never write", () => {
  const ours = ["Accepted", "Programmed", "ResolvedRefs"] as const;
  const stored = (type: string, status: "True" | "False" | "Unknown", gen: number) => ({
    type,
    status,
    reason: "Seeded",
    message: `${type} seeded`,
    observedGeneration: gen,
    lastTransitionTime: T0,
  });
  it("keeps every foreign condition unchanged and drops our types we no longer report", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(
          fc.record({
            type: fc.oneof(
              fc.constantFrom(...ours, "Conflicted"),
              fc.stringMatching(/^[a-z]{1,8}\.example\.com\/[A-Z][A-Za-z]{0,10}$/),
            ),
            status: fc.constantFrom("True" as const, "False" as const, "Unknown" as const),
            gen: fc.nat(5),
          }),
          { selector: c => c.type, maxLength: 8 },
        ),
        fc.subarray([...ours]),
        (existing, desiredTypes) => {
          const before = existing.map(c => stored(c.type, c.status, c.gen));
          const desired = desiredTypes.map(t => ({ ...accepted("True", 7), type: t }));
          const out = stampConditions(before, desired, T1);
          const foreign = before.filter(c => c.type.includes("/"));
          // ours first, as desired; then each foreign condition exactly as stored
          expect(out.map(c => c.type)).toEqual([...desiredTypes, ...foreign.map(c => c.type)]);
          expect(out.slice(desired.length)).toEqual(foreign);
          // a type of ours that is no longer desired (e.g. Conflicted) is gone
          expect(out.some(c => c.type === "Conflicted")).toBe(false);
        },
      ),
    );
  });
});

describe("routeStatus", () => {
  it("keeps other controllers' parent entries and replaces only ours", () => {
    const current: StoredObject = {
      status: {
        parents: [
          {
            parentRef: { name: "theirs" },
            controllerName: "example.com/other",
            conditions: [{ ...accepted("True"), lastTransitionTime: T0 }],
          },
          {
            parentRef: { name: "gw" },
            controllerName: CTRL,
            conditions: [{ ...accepted("True"), lastTransitionTime: T0 }],
          },
          { parentRef: { name: "gone" }, controllerName: CTRL, conditions: [] },
        ],
      },
    };
    const next = routeStatus(
      current,
      {
        kind: "HTTPRoute",
        namespace: "ns",
        name: "r",
        parents: [
          { parentRef: { name: "gw" }, controllerName: CTRL, conditions: [accepted("True")] },
        ],
      },
      CTRL,
      T1,
    );
    expect(next.parents).toHaveLength(2);
    expect(next.parents[0]).toEqual(current.status!.parents[0]);
    expect(next.parents[1]).toMatchObject({
      parentRef: { group: "gateway.networking.k8s.io", kind: "Gateway", name: "gw" },
      controllerName: CTRL,
    });
    expect(next.parents[1].conditions?.[0]?.lastTransitionTime).toBe(T0);
  });
});

describe("computeStatusUpdates", () => {
  const results: StatusResults = {
    gatewayClasses: [
      { name: "kengine", conditions: [accepted("True")], supportedFeatures: [{ name: "Gateway" }] },
    ],
    gateways: [
      {
        namespace: "ns",
        name: "gw",
        conditions: [accepted("True")],
        listeners: [
          {
            name: "http",
            supportedKinds: [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute" }],
            attachedRoutes: 1,
            conditions: [accepted("True")],
          },
        ],
      },
    ],
    listenerSets: [],
    routes: [{ kind: "HTTPRoute", namespace: "ns", name: "missing", parents: [] }],
  };
  const objects: Record<string, StoredObject> = {
    "GatewayClass//kengine": { metadata: { name: "kengine", resourceVersion: "5" }, status: {} },
    "Gateway/ns/gw": {
      metadata: { name: "gw", namespace: "ns", resourceVersion: "7" },
      status: {},
    },
  };
  const current = (k: string, ns: string | undefined, n: string) =>
    objects[`${k}/${ns ?? ""}/${n}`];

  it("writes every object whose status differs, conditional on the version it read", () => {
    const updates = computeStatusUpdates({
      results,
      current,
      controllerName: CTRL,
      addresses: new Map([["ns/gw", [{ value: "127.20.0.1" }]]]),
      now: T0,
    });
    expect(updates.map(u => `${u.kind}/${u.name}@${u.resourceVersion}`)).toEqual([
      "GatewayClass/kengine@5",
      "Gateway/gw@7",
    ]);
    expect(updates[1].status).toMatchObject({
      addresses: [{ type: "IPAddress", value: "127.20.0.1" }],
      listeners: [{ name: "http", attachedRoutes: 1 }],
    });
  });

  it("marks updates that change a condition's status or reason or an address as urgent", () => {
    const stored: StoredObject = {
      metadata: { name: "gw", namespace: "ns", resourceVersion: "7" },
      status: computeStatusUpdates({ results, current, controllerName: CTRL, now: T0 })[1].status,
    };
    const at = (r: StatusResults, addresses?: Map<string, { value: string }[]>) =>
      computeStatusUpdates({
        results: r,
        current: (k, ns, n) => (k === "Gateway" ? stored : current(k, ns, n)),
        controllerName: CTRL,
        addresses,
        now: T1,
      }).find(u => u.kind === "Gateway");
    const count = (n: number): StatusResults => ({
      ...results,
      gateways: [
        {
          ...results.gateways[0],
          listeners: [{ ...results.gateways[0].listeners[0], attachedRoutes: n }],
        },
      ],
    });
    expect(at(count(5))?.urgent).toBe(false);
    expect(at(count(1), new Map([["ns/gw", [{ value: "127.20.0.9" }]]]))?.urgent).toBe(true);
    const rejected: StatusResults = {
      ...results,
      gateways: [{ ...results.gateways[0], conditions: [accepted("False")] }],
    };
    expect(at(rejected)?.urgent).toBe(true);
  });

  it("writes nothing when the stored status already matches", () => {
    const first = computeStatusUpdates({ results, current, controllerName: CTRL, now: T0 });
    const stored: Record<string, StoredObject> = {};
    for (const u of first)
      stored[`${u.kind}/${u.namespace ?? ""}/${u.name}`] = {
        metadata: { name: u.name },
        status: u.status,
      };
    const again = computeStatusUpdates({
      results,
      current: (k, ns, n) => stored[`${k}/${ns ?? ""}/${n}`],
      controllerName: CTRL,
      now: T1,
    });
    expect(again).toEqual([]);
  });

  it("writes an empty routability explicitly, and once stored without it (CRDs before v1.7 prune it) writes nothing again", () => {
    const addresses = new Map([["ns/gw", [{ value: "127.20.0.1", routability: "" }]]]);
    const gwUpdate = (stored: StoredObject | undefined) =>
      computeStatusUpdates({
        results,
        current: (k, ns, n) => (k === "Gateway" ? stored : current(k, ns, n)),
        controllerName: CTRL,
        addresses,
        now: T1,
      }).find(u => u.kind === "Gateway");
    const first = gwUpdate(objects["Gateway/ns/gw"])!;
    const written = first.status as { addresses: Record<string, unknown>[] };
    expect(written.addresses).toEqual([
      { type: "IPAddress", value: "127.20.0.1", routability: "" },
    ]);
    const meta = { name: "gw", namespace: "ns", resourceVersion: "8" };
    // as a v1.7 API server stores it, and as a v1.6 one does (the field pruned)
    expect(gwUpdate({ metadata: meta, status: first.status })).toBeUndefined();
    const pruned = { ...first.status, addresses: [{ type: "IPAddress", value: "127.20.0.1" }] };
    expect(gwUpdate({ metadata: meta, status: pruned })).toBeUndefined();
    // any other routability is a change
    const cluster = {
      ...first.status,
      addresses: [{ ...written.addresses[0], routability: "Cluster" }],
    };
    expect(gwUpdate({ metadata: meta, status: cluster })).toBeDefined();
  });
});

describe("gatewayStatus attachedListenerSets", () => {
  const result = {
    namespace: "ns",
    name: "gw",
    conditions: [accepted("True")],
    listeners: [],
  };
  it("writes the count when the translator gives one, 0 included", () => {
    expect(gatewayStatus(undefined, { ...result, attachedListenerSets: 2 }, T0)).toMatchObject({
      attachedListenerSets: 2,
    });
    expect(gatewayStatus(undefined, { ...result, attachedListenerSets: 0 }, T0)).toMatchObject({
      attachedListenerSets: 0,
    });
  });
  it("leaves the field out when not counted, resetting a stored count to 0", () => {
    expect(gatewayStatus(undefined, result, T0)).not.toHaveProperty("attachedListenerSets");
    expect(gatewayStatus({ status: { attachedListenerSets: 0 } }, result, T0)).not.toHaveProperty(
      "attachedListenerSets",
    );
    expect(gatewayStatus({ status: { attachedListenerSets: 3 } }, result, T0)).toMatchObject({
      attachedListenerSets: 0,
    });
  });
});

describe("policyStatus", () => {
  it("replaces our ancestor entries and keeps other controllers'", () => {
    const theirs = {
      ancestorRef: { name: "other-gw" },
      controllerName: "example.com/other",
      conditions: [],
    };
    const next = policyStatus(
      {
        status: {
          ancestors: [
            theirs,
            { ancestorRef: { name: "gone" }, controllerName: CTRL, conditions: [] },
          ],
        },
      },
      {
        namespace: "ns",
        name: "p",
        ancestors: [
          {
            ancestorRef: { namespace: "ns", name: "gw" },
            controllerName: CTRL,
            conditions: [accepted("True")],
          },
        ],
      },
      CTRL,
      T1,
    );
    expect(next.ancestors).toEqual([
      theirs,
      {
        ancestorRef: {
          group: "gateway.networking.k8s.io",
          kind: "Gateway",
          namespace: "ns",
          name: "gw",
        },
        controllerName: CTRL,
        conditions: [{ ...accepted("True"), lastTransitionTime: T1 }],
      },
    ]);
  });
});
