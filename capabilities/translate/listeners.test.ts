/**
 * ListenerSet listener merging (Gateway API v1.6.1 ListenerSetSpec.listeners): properties over
 * random Gateways with random ListenerSets. The served listeners never conflict with each
 * other; a Gateway's own listeners come out the same with or without ListenerSets; a listener
 * that is not served for a conflict is indistinct from a listener that wins over it; the
 * result does not depend on the order the ListenerSets arrive in.
 */
import fc from "fast-check";
import { KubeObject, Listener, snapshotOf } from "../snapshot";
import { ResolvedListener, listenerSetsOf, resolveListeners } from "./listeners";

const GW = "gateway.networking.k8s.io/v1";
const RUNS = Number(process.env.KG_PROPERTY_RUNS ?? 200);

const listener = fc.record({
  port: fc.constantFrom(80, 8080, 9000),
  protocol: fc.constantFrom("HTTP", "TCP", "UDP"),
  hostname: fc.constantFrom(undefined, "a.example.com", "b.example.com", "*.example.com"),
});

/** Listeners as the API server stores them: names unique, (port, protocol, hostname) unique. */
const listeners = (prefix: string) =>
  fc
    .uniqueArray(listener, {
      minLength: 1,
      maxLength: 4,
      selector: l => `${l.port}/${l.protocol}/${l.protocol === "HTTP" ? (l.hostname ?? "") : ""}`,
    })
    .map(ls =>
      ls.map(
        (l, i): Listener => ({
          name: `${prefix}-${i}`,
          port: l.port,
          protocol: l.protocol,
          ...(l.protocol === "HTTP" && l.hostname !== undefined && { hostname: l.hostname }),
        }),
      ),
    );

const scenario = fc
  .tuple(
    listeners("gw"),
    fc.array(
      fc.tuple(listeners("ls"), fc.constantFrom("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z")),
      { maxLength: 4 },
    ),
  )
  .map(([own, sets]) => {
    const gateway: KubeObject = {
      apiVersion: GW,
      kind: "Gateway",
      metadata: { name: "gw", namespace: "default", generation: 1 },
      spec: {
        gatewayClassName: "kengine",
        allowedListeners: { namespaces: { from: "Same" } },
        listeners: own,
      },
    } as KubeObject;
    const listenerSets = sets.map(
      ([ls, created], i) =>
        ({
          apiVersion: GW,
          kind: "ListenerSet",
          metadata: {
            name: `set-${i}`,
            namespace: "default",
            generation: 1,
            creationTimestamp: created,
          },
          spec: { parentRef: { name: "gw" }, listeners: ls },
        }) as KubeObject,
    );
    return { gateway, listenerSets };
  });

function resolve(objects: readonly KubeObject[]): ResolvedListener[] {
  const s = snapshotOf(objects);
  const gw = s.objects.Gateway.get("default/gw")!;
  return resolveListeners(s, gw, listenerSetsOf(s, gw).allowed);
}

const transport = (p: string) => (p === "UDP" ? "udp" : "tcp");
/** Whether two listeners cannot both be served (the spec's conflict rules, stated anew). */
const indistinct = (a: Listener, b: Listener): boolean =>
  a.port === b.port &&
  transport(a.protocol) === transport(b.protocol) &&
  (a.protocol !== b.protocol ||
    a.protocol !== "HTTP" ||
    (a.hostname ?? "").toLowerCase() === (b.hostname ?? "").toLowerCase());
const conflicted = (l: ResolvedListener) =>
  l.conditions.find(c => c.type === "Conflicted")?.status === "True";

describe("ListenerSet listener merging (random Gateways and ListenerSets)", () => {
  it("never serves two indistinct listeners", () => {
    fc.assert(
      fc.property(scenario, ({ gateway, listenerSets }) => {
        const served = resolve([gateway, ...listenerSets]).filter(l => l.served);
        for (const a of served)
          for (const b of served)
            if (a !== b) expect(indistinct(a.listener, b.listener)).toBe(false);
      }),
      { numRuns: RUNS },
    );
  });

  it("leaves the Gateway's own listeners as they are without ListenerSets", () => {
    fc.assert(
      fc.property(scenario, ({ gateway, listenerSets }) => {
        const own = (ls: ResolvedListener[]) =>
          ls.filter(l => l.owner.kind === "Gateway").map(l => [l.id, l.served, l.conditions]);
        expect(own(resolve([gateway, ...listenerSets]))).toEqual(own(resolve([gateway])));
      }),
      { numRuns: RUNS },
    );
  });

  it("conflicts a listener only with a served one of higher precedence or a sibling that did not lose", () => {
    fc.assert(
      fc.property(scenario, ({ gateway, listenerSets }) => {
        const all = resolve([gateway, ...listenerSets]);
        // a listener that lost to a served one of higher precedence
        const lost = (o: ResolvedListener) =>
          all.some(
            p =>
              p.served &&
              p.owner.precedence < o.owner.precedence &&
              indistinct(p.listener, o.listener),
          );
        for (const l of all.filter(conflicted)) {
          const cause = all.some(
            o =>
              o !== l &&
              indistinct(o.listener, l.listener) &&
              ((o.served && o.owner.precedence < l.owner.precedence) ||
                (o.owner.precedence === l.owner.precedence && !lost(o))),
          );
          expect(cause).toBe(true);
        }
        // and a listener no served listener of higher precedence or sibling beats is served
        for (const l of all.filter(l => !l.served)) expect(conflicted(l)).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it("does not depend on the order ListenerSets arrive in", () => {
    fc.assert(
      fc.property(
        scenario.chain(sc =>
          fc.tuple(
            fc.constant(sc),
            fc.shuffledSubarray(sc.listenerSets, { minLength: sc.listenerSets.length }),
          ),
        ),
        ([{ gateway, listenerSets }, shuffled]) => {
          expect(resolve([gateway, ...shuffled])).toEqual(resolve([gateway, ...listenerSets]));
        },
      ),
      { numRuns: RUNS },
    );
  });
});
