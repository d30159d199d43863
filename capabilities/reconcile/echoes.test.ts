import fc from "fast-check";
import { KubeObject, Snapshot, SnapshotEvent, apply, emptySnapshot, snapshotOf } from "../snapshot";
import { HeldEchoes, MAX_HELD } from "./echoes";

/** Routes r0…r3 in namespace ns, each in one of two specs, with a status and a version. */
const route = (name: string, spec: number, status: number, rv: number): KubeObject =>
  ({
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: { name, namespace: "ns", resourceVersion: String(rv), generation: spec + 1 },
    spec: { hostnames: [`h${spec}.example`], parentRefs: [{ name: "gw" }] },
    status: { parents: [{ n: status }] },
  }) as unknown as KubeObject;

type Step =
  | { op: "upsert"; name: string; spec: number; status: number }
  /** A status write of the route as it stands (held whenever the route exists). */
  | { op: "echo"; name: string; status: number }
  | { op: "delete"; name: string }
  | { op: "read" };

const names = fc.constantFrom("r0", "r1", "r2", "r3");
const echo: fc.Arbitrary<Step> = fc.record({
  op: fc.constant("echo" as const),
  name: names,
  status: fc.integer({ min: 0, max: 3 }),
});
const step: fc.Arbitrary<Step> = fc.oneof(
  echo,
  fc.record({
    op: fc.constant("upsert" as const),
    name: fc.constantFrom("r0", "r1", "r2", "r3"),
    spec: fc.integer({ min: 0, max: 1 }),
    status: fc.integer({ min: 0, max: 3 }),
  }),
  fc.record({ op: fc.constant("delete" as const), name: names }),
  fc.constant({ op: "read" as const }),
);
/** Every run holds at least one echo: it starts with one of r0, which the start snapshot has. */
const steps: fc.Arbitrary<Step[]> = fc
  .tuple(
    fc.record({
      op: fc.constant("echo" as const),
      name: fc.constant("r0"),
      status: fc.integer({ min: 1, max: 3 }),
    }),
    fc.array(step, { maxLength: 60 }),
  )
  .map(([first, rest]) => [first, ...rest]);

/** The spec a route was made with (`route` sets generation = spec + 1). */
const specOf = (o: KubeObject): number => (o.metadata?.generation ?? 1) - 1;

describe("held status echoes", () => {
  it("give the snapshot that applying every event one by one gives, at every read", () => {
    let holds = 0;
    fc.assert(
      fc.property(steps, steps => {
        const start = snapshotOf([route("r0", 0, 0, 1), route("r1", 1, 0, 2)]);
        let reference: Snapshot = start;
        let held: Snapshot = start;
        const echoes = new HeldEchoes();
        let rv = 10;
        for (const s of steps) {
          if (s.op === "read") {
            held = echoes.flush(held);
            expect(echoes.size).toBe(0);
            expect([...held.objects.HTTPRoute.entries()]).toEqual([
              ...reference.objects.HTTPRoute.entries(),
            ]);
            continue;
          }
          const current = held.objects.HTTPRoute.get(`ns/${s.name}`);
          const event: SnapshotEvent =
            s.op === "delete"
              ? { type: "delete", kind: "HTTPRoute", object: route(s.name, 0, 0, rv++) }
              : {
                  type: "upsert",
                  kind: "HTTPRoute",
                  object: route(
                    s.name,
                    s.op === "echo" ? (current ? specOf(current) : 0) : s.spec,
                    s.status,
                    rv++,
                  ),
                };
          reference = apply(reference, event).snapshot;
          const replaced = echoes.hold(held, event);
          // a status write of a route the snapshot has is always held
          if (s.op === "echo" && current) expect(replaced).toBe(current);
          if (replaced) {
            holds++;
            // only an update that leaves everything but status and version alone is held
            const o = event.object as unknown as { spec: unknown };
            expect((replaced as unknown as { spec: unknown }).spec).toEqual(o.spec);
          } else held = apply(echoes.flush(held), event).snapshot;
        }
        held = echoes.flush(held);
        expect([...held.objects.HTTPRoute.entries()]).toEqual([
          ...reference.objects.HTTPRoute.entries(),
        ]);
      }),
      { numRuns: 300 },
    );
    expect(holds).toBeGreaterThanOrEqual(300); // every run held at least its first step
  });

  it("holds a status-only update of a synced snapshot, and nothing else", () => {
    const s = snapshotOf([route("r0", 0, 0, 1)]);
    const echoes = new HeldEchoes();
    const echo: SnapshotEvent = { type: "upsert", kind: "HTTPRoute", object: route("r0", 0, 1, 2) };
    expect(echoes.hold(s, echo)).toBe(s.objects.HTTPRoute.get("ns/r0"));
    // a spec change, a new object, a delete: applied at once
    expect(echoes.hold(s, { ...echo, object: route("r0", 1, 1, 3) })).toBeUndefined();
    expect(echoes.hold(s, { ...echo, object: route("r9", 0, 0, 4) })).toBeUndefined();
    expect(echoes.hold(s, { ...echo, type: "delete" })).toBeUndefined();
    // while the caches fill, every event is applied at once
    const filling = apply(emptySnapshot(), {
      type: "upsert",
      kind: "HTTPRoute",
      object: route("r0", 0, 0, 1),
    }).snapshot;
    expect(echoes.hold(filling, echo)).toBeUndefined();
    expect(echoes.size).toBe(1);
    const flushed = echoes.flush(s);
    expect(flushed.objects.HTTPRoute.get("ns/r0")).toBe(echo.object);
    expect(echoes.flush(flushed)).toBe(flushed);
  });

  it("holds at most MAX_HELD updates: the next is applied, after them", () => {
    const s = snapshotOf([route("r0", 0, 0, 1)]);
    const echoes = new HeldEchoes();
    let rv = 2;
    for (let i = 0; i < MAX_HELD; i++)
      expect(
        echoes.hold(s, { type: "upsert", kind: "HTTPRoute", object: route("r0", 0, i, rv++) }),
      ).toBeDefined();
    const last: SnapshotEvent = {
      type: "upsert",
      kind: "HTTPRoute",
      object: route("r0", 0, 9, rv),
    };
    expect(echoes.hold(s, last)).toBeUndefined();
    const applied = apply(echoes.flush(s), last).snapshot;
    expect(echoes.size).toBe(0);
    expect(applied.objects.HTTPRoute.get("ns/r0")).toBe(last.object);
  });
});
