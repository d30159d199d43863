/**
 * StatusMemo: skipping objects found in place last time gives the same updates as
 * computing every object, over random snapshots and random changes of the stored objects.
 */
import fc from "fast-check";
import { arbitrarySnapshot } from "../../tests/support/arbitrary-snapshot";
import { KubeObject, Snapshot, applyAll, snapshotOf } from "../snapshot";
import { translate } from "../translate";
import {
  StatusKind,
  StatusMemo,
  StoredObject,
  StoredSource,
  computeStatusUpdates,
} from "./compute";

const RUNS = Number(process.env.KG_PROPERTY_RUNS ?? 100);

/** One computation's input (without a memo). */
const inputOf = (
  results: ReturnType<typeof translate>["statuses"],
  current: (kind: StatusKind, ns: string | undefined, name: string) => StoredObject | undefined,
  n: number,
) => ({
  results,
  current,
  controllerName: "kengine.io/gateway-controller",
  now: `2026-11-24T00:00:0${n}Z`,
});

describe("StatusMemo", () => {
  it("gives the updates a full computation gives, build after build", () => {
    fc.assert(
      fc.property(
        arbitrarySnapshot,
        arbitrarySnapshot,
        fc.array(fc.tuple(fc.nat(), fc.boolean(), fc.boolean()), { maxLength: 6 }),
        (a, b, rounds) => {
          const results = [translate(snapshotOf(a)).statuses, translate(snapshotOf(b)).statuses];
          const stored = new Map<string, StoredObject>();
          const current = (kind: StatusKind, ns: string | undefined, name: string) => {
            const key = `${kind}/${ns ?? ""}/${name}`;
            if (!stored.has(key))
              stored.set(key, { metadata: { resourceVersion: "1" }, status: {} });
            return stored.get(key);
          };
          const memo = new StatusMemo();
          let which = 0;
          for (const [pick, write, switchResults] of [[0, true, false] as const, ...rounds]) {
            if (switchResults) which = 1 - which;
            const input = inputOf(results[which]!, current, rounds.length);
            const withMemo = computeStatusUpdates({ ...input, memo });
            expect(withMemo).toEqual(computeStatusUpdates(input));
            // the API server stores some of the writes (new objects), or someone resets one
            const keys = [...stored.keys()];
            if (write)
              for (const u of withMemo)
                stored.set(`${u.kind}/${u.namespace ?? ""}/${u.name}`, {
                  metadata: { resourceVersion: "2" },
                  status: u.status,
                });
            else if (keys.length > 0)
              stored.set(keys[pick % keys.length]!, {
                metadata: { resourceVersion: "3" },
                status: {},
              });
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("with a StoredSource, skips unread routes yet gives the updates a full computation gives", () => {
    fc.assert(
      fc.property(
        arbitrarySnapshot,
        arbitrarySnapshot,
        fc.array(fc.tuple(fc.nat({ max: 3 }), fc.nat({ max: 3 }), fc.boolean()), { maxLength: 12 }),
        (a, b, rounds) => {
          const results = [translate(snapshotOf(a)).statuses, translate(snapshotOf(b)).statuses];
          // The stored objects as the controller's snapshot holds them; the writer's answers
          // (what `freshest` may give before the watch delivers them) in `written`.
          let stored: Snapshot = snapshotOf([...a, ...b]);
          const written = new Map<string, StoredObject>();
          const log: string[] = [];
          const current = (kind: StatusKind, ns: string | undefined, name: string) => {
            const key = `${kind}/${ns ?? ""}/${name}`;
            return written.get(key) ?? stored.objects[kind].get(ns ? `${ns}/${name}` : name);
          };
          const source = (): StoredSource => ({
            routes: {
              HTTPRoute: stored.objects.HTTPRoute,
              GRPCRoute: stored.objects.GRPCRoute,
              TLSRoute: stored.objects.TLSRoute,
              TCPRoute: stored.objects.TCPRoute,
              UDPRoute: stored.objects.UDPRoute,
            },
            version: log.length,
            writtenSince: v => new Set(log.slice(v)),
          });
          const memo = new StatusMemo();
          // Every write gets a new resourceVersion, as the API server gives it: the snapshot
          // ignores an upsert whose resourceVersion it already holds (a watch replay).
          let version = 0;
          let which = 0;
          for (const [pick, how, switchResults] of [[0, 0, false] as const, ...rounds]) {
            if (switchResults) which = 1 - which;
            const input = inputOf(results[which]!, current, rounds.length);
            const withMemo = computeStatusUpdates({ ...input, memo, stored: source() });
            expect(withMemo).toEqual(computeStatusUpdates(input));
            const u = withMemo[pick % Math.max(1, withMemo.length)];
            const keys = [...stored.objects.HTTPRoute.keys()];
            const k = keys[pick % Math.max(1, keys.length)];
            if (how === 0 && u) {
              // a write answered: the writer holds it until the watch delivers it
              const key = `${u.kind}/${u.namespace ?? ""}/${u.name}`;
              const o = current(u.kind, u.namespace, u.name);
              written.set(key, {
                metadata: { ...o?.metadata, resourceVersion: `w${++version}` },
                status: u.status,
              });
              log.push(key);
            } else if (how === 1) {
              // the watch delivers every answered write
              stored = applyAll(
                stored,
                [...written].flatMap(([key, w]) => {
                  const [kind, ns, name] = key.split("/") as [StatusKind, string, string];
                  const o = stored.objects[kind].get(ns ? `${ns}/${name}` : name);
                  return o
                    ? [
                        {
                          type: "upsert" as const,
                          kind,
                          object: {
                            ...o,
                            metadata: w.metadata,
                            status: w.status,
                          } as unknown as KubeObject,
                        },
                      ]
                    : [];
                }),
              ).snapshot;
              written.clear();
            } else if (how === 2 && k !== undefined) {
              // someone resets a route's status
              const o = stored.objects.HTTPRoute.get(k)!;
              stored = applyAll(stored, [
                {
                  type: "upsert",
                  kind: "HTTPRoute",
                  object: {
                    ...o,
                    metadata: { ...o.metadata, resourceVersion: `r${++version}` },
                    status: {},
                  } as KubeObject,
                },
              ]).snapshot;
            }
          }
        },
      ),
      { numRuns: RUNS * 3 },
    );
  });

  it("skips reading the stored status of routes found in place, and only those", () => {
    const results = translate(
      snapshotOf(fc.sample(arbitrarySnapshot, { numRuns: 1, seed: 7 })[0]!),
    ).statuses;
    expect(results.routes.length).toBeGreaterThan(0);
    let reads = 0;
    const stored = new Map<string, StoredObject>();
    const counted = (status: unknown): StoredObject => ({
      get status() {
        reads++;
        return status;
      },
    });
    const current = (kind: StatusKind, ns: string | undefined, name: string) => {
      const key = `${kind}/${ns ?? ""}/${name}`;
      if (!stored.has(key)) stored.set(key, counted({}));
      return stored.get(key);
    };
    const input = { results, current, controllerName: "kengine.io/gateway-controller", now: "t" };
    for (const u of computeStatusUpdates(input))
      stored.set(`${u.kind}/${u.namespace ?? ""}/${u.name}`, counted(u.status));
    const memo = new StatusMemo();
    expect(computeStatusUpdates({ ...input, memo })).toEqual([]);
    reads = 0;
    expect(computeStatusUpdates({ ...input, memo })).toEqual([]);
    const withMemo = reads;
    reads = 0;
    expect(computeStatusUpdates(input)).toEqual([]);
    // every route's stored status is read without the memo, none with it
    expect(reads).toBeGreaterThan(withMemo);
    // a route whose stored object changed is computed again (and needs a write)
    const r = results.routes[0]!;
    stored.set(`${r.kind}/${r.namespace}/${r.name}`, counted({}));
    expect(computeStatusUpdates({ ...input, memo }).map(u => u.name)).toEqual([r.name]);
  });
});
