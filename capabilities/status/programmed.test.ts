import type { ProxyState } from "../proxies";
import type { Condition, GatewayStatusResult, ListenerSetStatusResult } from "../translate";
import {
  FleetView,
  listenerSetWithParent,
  programmedCondition,
  withFleet,
  withListenerSetParents,
} from "./programmed";

const H = "d".repeat(64);
const ok: ProxyState = { phase: "Programmed", desiredHash: H, hash: H, at: 1, verifiedAt: 1 };
const failed = (message: string): ProxyState => ({
  phase: "Failed",
  desiredHash: H,
  applied: undefined,
  error: { kind: "rejected", status: 400, message },
  message,
  attempts: 1,
  since: 1,
  nextAttemptAt: 2,
});
const address = [{ type: "IPAddress", value: "127.20.0.1" }];

describe("programmedCondition", () => {
  it("names the failing proxies, grouped by the proxy's message", () => {
    const c = programmedCondition(
      undefined,
      {
        proxies: [
          { ...failed("address in use"), name: "gw-a" },
          { ...failed("address in use"), name: "gw-b" },
          { ...failed("bad"), name: "gw-c" },
        ],
        desiredHash: H,
        serviceExists: true,
      },
      address,
    );
    expect(c).toMatchObject({
      status: "False",
      message: "0/3 proxies run the current configuration: gw-a, gw-b: address in use; gw-c: bad",
    });
    const some = programmedCondition(
      undefined,
      {
        proxies: [
          { ...ok, name: "gw-a" },
          { ...failed("bad"), name: "gw-b" },
        ],
        desiredHash: H,
        serviceExists: true,
      },
      address,
    );
    expect(some).toMatchObject({
      status: "True",
      message: "1/2 proxies run the current configuration; failing: gw-b: bad",
    });
  });

  it("says which Service is missing", () => {
    expect(
      programmedCondition(
        undefined,
        {
          proxies: [],
          desiredHash: H,
          serviceExists: false,
          noServiceMessage: "no Service labelled x",
        },
        [],
      ),
    ).toMatchObject({
      status: "False",
      reason: "AddressNotAssigned",
      message: "no Service labelled x",
    });
  });

  it("keeps the stored condition through a rollout, and shows failures and new pods at once", () => {
    const H0 = "c".repeat(64);
    const rolling: ProxyState = { phase: "Pending", desiredHash: H, applied: { hash: H0, at: 1 } };
    const stored: Condition = {
      type: "Programmed",
      status: "True",
      reason: "Programmed",
      message: "2/2 proxies run the current configuration",
    };
    const view = (proxies: (ProxyState & { name?: string })[], s = stored): FleetView => ({
      proxies,
      desiredHash: H,
      serviceExists: true,
      stored: s,
    });
    // one proxy has the new config, the other is loading it: still 2/2, nothing to rewrite
    expect(programmedCondition(undefined, view([ok, rolling]), address, 3)).toEqual({
      ...stored,
      observedGeneration: 3,
    });
    expect(programmedCondition(undefined, view([rolling, rolling]), address)).toMatchObject({
      status: "True",
      message: "2/2 proxies run the current configuration",
    });
    // nothing stored (or something else stored): the truth
    expect(
      programmedCondition(undefined, { ...view([rolling, rolling]), stored: undefined }, address),
    ).toMatchObject({ status: "False", message: "0/2 proxies run the current configuration" });
    expect(
      programmedCondition(
        undefined,
        view([ok, rolling], { ...stored, message: "1/2 proxies run the current configuration" }),
        address,
      ),
    ).toMatchObject({ status: "True", message: "1/2 proxies run the current configuration" });
    // a failing proxy is named at once
    expect(
      programmedCondition(undefined, view([rolling, { ...failed("bad"), name: "gw-b" }]), address),
    ).toMatchObject({
      status: "False",
      message: "0/2 proxies run the current configuration: gw-b: bad",
    });
    // a new pod (nothing applied yet) changes the count at once
    const fresh: ProxyState = { phase: "Pending", desiredHash: H, applied: undefined };
    expect(programmedCondition(undefined, view([ok, rolling, fresh]), address)).toMatchObject({
      status: "True",
      message: "1/3 proxies run the current configuration",
    });
  });
});

describe("listenerSetWithParent", () => {
  const cond = (type: string, ok: boolean, reason: string, gen = 2): Condition => ({
    type,
    status: ok ? "True" : "False",
    reason,
    message: "m",
    observedGeneration: gen,
  });
  const set: ListenerSetStatusResult = {
    namespace: "team",
    name: "set",
    conditions: [cond("Accepted", true, "Accepted"), cond("Programmed", true, "Programmed")],
    listeners: [
      {
        name: "ok",
        supportedKinds: [],
        attachedRoutes: 1,
        conditions: [cond("Accepted", true, "Accepted"), cond("Programmed", true, "Programmed")],
      },
      {
        name: "clash",
        supportedKinds: [],
        attachedRoutes: 0,
        conditions: [
          cond("Accepted", false, "HostnameConflict"),
          cond("Programmed", false, "HostnameConflict"),
        ],
      },
    ],
  };
  const gateway = (programmed: Condition): GatewayStatusResult => ({
    namespace: "default",
    name: "gw",
    conditions: [cond("Accepted", true, "Accepted", 1), programmed],
    listeners: [],
  });

  it("leaves the set alone while its Gateway is programmed, or when the set is not", () => {
    expect(listenerSetWithParent(set, gateway(cond("Programmed", true, "Programmed", 1)))).toBe(
      set,
    );
    const refused = {
      ...set,
      conditions: [cond("Accepted", false, "NotAllowed"), cond("Programmed", false, "NotAllowed")],
    };
    expect(listenerSetWithParent(refused, gateway(cond("Programmed", false, "Pending", 1)))).toBe(
      refused,
    );
  });

  it("is ParentNotProgrammed, its served listeners Pending, while the Gateway is not", () => {
    const pending = { ...cond("Programmed", false, "Pending", 1), message: "0/2 proxies run it" };
    const got = listenerSetWithParent(set, gateway(pending));
    expect(got.conditions[0]).toEqual(set.conditions[0]);
    expect(got.conditions[1]).toEqual({
      type: "Programmed",
      status: "False",
      reason: "ParentNotProgrammed",
      message: "parent Gateway default/gw is not programmed: 0/2 proxies run it",
      observedGeneration: 2,
    });
    expect(got.listeners[0].conditions[1]).toMatchObject({
      reason: "Pending",
      observedGeneration: 2,
    });
    expect(got.listeners[1]).toEqual(set.listeners[1]);
  });

  it("finds each set's parent by key", () => {
    const pending = cond("Programmed", false, "Pending", 1);
    const results = {
      gatewayClasses: [],
      gateways: [gateway(pending)],
      listenerSets: [set, { ...set, name: "orphan" }],
      routes: [],
    };
    const got = withListenerSetParents(results, ls =>
      ls.name === "set" ? "default/gw" : undefined,
    );
    expect(got.listenerSets[0].conditions[1].reason).toBe("ParentNotProgrammed");
    expect(got.listenerSets[1]).toEqual(results.listenerSets[1]);
  });
});

describe("programmedCondition: the stored condition while the proxies are unknown", () => {
  const pending: ProxyState = {
    phase: "Pending",
    desiredHash: H,
    applied: undefined,
  } as ProxyState;
  const view = (stored: object) => ({
    proxies: [pending],
    desiredHash: H,
    serviceExists: true,
    stored: stored as never,
  });
  const stored = (status: string, observedGeneration: number) => ({
    type: "Programmed",
    status,
    reason: status === "True" ? "Programmed" : "AddressNotAssigned",
    message: "as stored",
    observedGeneration,
  });

  it("keeps a stored True of this generation (a new leader does not flap it)", () => {
    expect(programmedCondition(undefined, view(stored("True", 3)), address, 3)).toEqual(
      stored("True", 3),
    );
  });

  it("never writes back an older generation or a stale False", () => {
    for (const s of [stored("True", 2), stored("False", 3)]) {
      const c = programmedCondition(undefined, view(s), address, 3);
      expect(c).toMatchObject({ status: "False", reason: "Pending", observedGeneration: 3 });
    }
  });
});

describe("withFleet: AddressesAssigned (GEP-5093)", () => {
  const result: GatewayStatusResult = {
    namespace: "ns",
    name: "gw",
    conditions: [
      { type: "Accepted", status: "True", reason: "Accepted", message: "", observedGeneration: 3 },
      {
        type: "Programmed",
        status: "True",
        reason: "Programmed",
        message: "",
        observedGeneration: 3,
      },
    ],
    listeners: [],
  };
  const view: FleetView = { proxies: [ok], desiredHash: H, serviceExists: true };

  it("is written from the address outcome on the Gateway's generation, and omitted while undecided", () => {
    const assigned = withFleet(
      result,
      { ...view, addressAssignment: { status: "True", reason: "AddressesAssigned", message: "m" } },
      address,
    );
    expect(assigned.conditions.find(c => c.type === "AddressesAssigned")).toEqual({
      type: "AddressesAssigned",
      status: "True",
      reason: "AddressesAssigned",
      message: "m",
      observedGeneration: 3,
    });
    expect(withFleet(result, view, address).conditions.map(c => c.type)).toEqual([
      "Accepted",
      "Programmed",
    ]);
  });
});
