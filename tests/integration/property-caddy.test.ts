/**
 * The real-Caddy half of the translator's property tests: a fixed-seed sample of random valid
 * snapshots (tests/support/arbitrary-snapshot.ts) is translated and every config is POSTed to a
 * real Caddy (with caddy-l4) through /load; each must be accepted. The pure half
 * (never throws, deterministic) is capabilities/translate/property.test.ts.
 */
import fc from "fast-check";
import { renderCaddyJSON, toCaddyConfig } from "../../capabilities/caddy";
import { snapshotOf } from "../../capabilities/snapshot";
import { translate } from "../../capabilities/translate";
import { arbitrarySnapshot } from "../support/arbitrary-snapshot";
import { Caddy, startCaddy } from "../support/caddy";
import { freePort, listenerPortOffset } from "../support/ports";

const SAMPLE = Number(process.env.KG_PROPERTY_SAMPLE ?? 40);
const SEED = Number(process.env.KG_PROPERTY_SEED ?? 20261121);

let caddy: Caddy | undefined;
let errorAddr = "";

beforeAll(async () => {
  caddy = await startCaddy({ name: "property-caddy" });
  errorAddr = `127.0.0.1:${await freePort()}`;
});

afterAll(async () => {
  await caddy?.stop();
});

describe(`random valid snapshots (seed ${SEED}): Caddy accepts every config`, () => {
  const samples = fc.sample(arbitrarySnapshot, { numRuns: SAMPLE, seed: SEED });
  it.each(samples.map((objects, i) => [i, objects] as const))("sample %i", async (_i, objects) => {
    const result = translate(snapshotOf(objects));
    for (const ir of result.gateways) {
      const config = toCaddyConfig(ir, {
        bindHost: "127.0.0.1",
        portOffset: listenerPortOffset(),
        errorResponderListen: errorAddr,
        management: { adminListen: caddy!.adminAddress },
      });
      const res = await caddy!.load(renderCaddyJSON(config));
      const refusal =
        res.status === 200 ? "" : `Caddy refused the config (${res.status}): ${res.text}`;
      expect(refusal).toBe("");
    }
  });
});
