/**
 * Property tests: for random valid snapshots (tests/support/arbitrary-snapshot.ts) the
 * translator never throws, every route gets a status, and the output (statuses, IR and Caddy
 * JSON bytes) does not depend on the order the objects arrived in. The real-Caddy half (a
 * sample of these configs loaded into Caddy) is tests/integration/property-caddy.test.ts.
 */
import fc from "fast-check";
import { renderGolden } from "../../hack/translate";
import { arbitrarySnapshot } from "../../tests/support/arbitrary-snapshot";
import { snapshotOf } from "../snapshot";
import { translate } from "./translate";

const RUNS = Number(process.env.KG_PROPERTY_RUNS ?? 200);

describe("translator properties (random valid snapshots)", () => {
  it("never throws and reports every route's parent", () => {
    fc.assert(
      fc.property(arbitrarySnapshot, objects => {
        const result = translate(snapshotOf(objects));
        const routes = objects.filter(o => o.kind === "HTTPRoute").length;
        expect(result.statuses.routes.length).toBe(routes);
        expect(result.gateways.length).toBe(1);
      }),
      { numRuns: RUNS },
    );
  });

  it("is deterministic: the same objects in any order give the same bytes", () => {
    fc.assert(
      fc.property(
        arbitrarySnapshot.chain(objects =>
          fc.tuple(
            fc.constant(objects),
            fc.shuffledSubarray(objects, { minLength: objects.length }),
          ),
        ),
        ([objects, shuffled]) => {
          const a = renderGolden(objects);
          const b = renderGolden(shuffled);
          expect(b.out).toBe(a.out);
          expect(b.caddy).toBe(a.caddy);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
