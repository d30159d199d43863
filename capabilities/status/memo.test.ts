/**
 * StatusMemo (issue 16): skipping objects found in place last time gives the same updates as
 * computing every object, over random snapshots and random changes of the stored objects.
 */
import fc from "fast-check";
import { arbitrarySnapshot } from "../../tests/support/arbitrary-snapshot";
import { snapshotOf } from "../snapshot";
import { translate } from "../translate";
import { StatusKind, StatusMemo, StoredObject, computeStatusUpdates } from "./compute";

const RUNS = Number(process.env.KG_PROPERTY_RUNS ?? 100);

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
            const input = {
              results: results[which]!,
              current,
              controllerName: "kengine.io/gateway-controller",
              now: `2026-11-24T00:00:0${rounds.length}Z`,
            };
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
