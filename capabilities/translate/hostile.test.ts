/**
 * The pure half of the hostile-object hunt (the real-proxy half is
 * tests/integration/property-caddy.test.ts): for tenant objects generated from the CRDs'
 * patterns, next to a healthy route on a shared Gateway, translation never throws, the healthy
 * route keeps its listener, and every object is refused at admission, programmed, or reported
 * in its own status with a message.
 */
import fc from "fast-check";
import { toCaddyConfig } from "../caddy";
import { KubeObject, snapshotOf } from "../snapshot";
import { translate } from "./translate";
import { arbitraryHostile, sharedGateway } from "../../tests/support/arbitrary-hostile";
import { REGRESSIONS } from "../../tests/support/hostile-regressions";
import { verdictOf } from "../../tests/support/hostile-verdict";

const check = (hostile: readonly KubeObject[]) => {
  const result = translate(snapshotOf([...sharedGateway(3000), ...hostile]));
  expect(result.gateways).toHaveLength(1);
  toCaddyConfig(result.gateways[0]!);
  const healthy = result.statuses.routes.find(r => r.name === "healthy");
  expect(healthy?.parents.flatMap(p => p.conditions).filter(c => c.status === "False")).toEqual([]);
  for (const obj of hostile.filter(o => o.kind !== "Secret"))
    expect(verdictOf(obj, result).kind).not.toBe("silent");
};

describe("hostile tenant objects (pure)", () => {
  it.each(Object.entries(REGRESSIONS))("regression: %s", (_name, hostile) => check(hostile));

  it("property: generated objects never take the healthy route down", () => {
    fc.assert(
      fc.property(arbitraryHostile, hostile => check(hostile)),
      { numRuns: 300 },
    );
  });
});
