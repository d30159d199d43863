/**
 * The culprit search against a fake validator: a config is refused while any culprit is in
 * it, with that culprit's own error. Properties over random candidate lists and culprit sets.
 */
import fc from "fast-check";
import { findCulprits } from "./culprits";

const RUNS = Number(process.env.KG_PROPERTY_RUNS ?? 200);

/** Refuses while any of `culprits` is left in, naming the first one in; counts calls. */
function validator(culprits: ReadonlySet<number>) {
  const calls: number[][] = [];
  const validate = (excluded: readonly number[]) => {
    calls.push([...excluded]);
    const out = new Set(excluded);
    const left = [...culprits].filter(c => !out.has(c)).sort((a, b) => a - b);
    return Promise.resolve({
      ok: true as const,
      value:
        left.length === 0
          ? ({ accepted: true } as const)
          : ({ accepted: false, message: `object ${left[0]} is bad` } as const),
    });
  };
  return { validate, calls };
}

const scenario = fc.integer({ min: 1, max: 60 }).chain(n =>
  fc.record({
    candidates: fc.constant([...Array(n).keys()]),
    culprits: fc.uniqueArray(fc.integer({ min: 0, max: n - 1 }), { minLength: 1, maxLength: 5 }),
  }),
);

describe("findCulprits", () => {
  it("finds exactly the culprits, each with its own error, within the validation bound", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ candidates, culprits }) => {
        const { validate, calls } = validator(new Set(culprits));
        const r = await findCulprits({
          candidates,
          validate,
          maxValidations: 1000,
        });
        expect(r.kind).toBe("culprits");
        if (r.kind !== "culprits") return;
        expect(r.culprits.map(c => c.object).sort((a, b) => a - b)).toEqual(
          [...culprits].sort((a, b) => a - b),
        );
        for (const c of r.culprits) expect(c.message).toBe(`object ${c.object} is bad`);
        const bound = culprits.length * (Math.ceil(Math.log2(candidates.length)) + 1) + 2;
        expect(r.validations).toBeLessThanOrEqual(bound);
        expect(calls.length).toBe(r.validations);
      }),
      { numRuns: RUNS },
    );
  });

  it("reports the Gateway when the config stays refused with everything left out", async () => {
    const validate = () =>
      Promise.resolve({ ok: true as const, value: { accepted: false as const, message: "gw" } });
    const r = await findCulprits({ candidates: [1, 2, 3], validate });
    expect(r).toEqual({ kind: "gateway", message: "gw", validations: 2 });
    const none = await findCulprits({ candidates: [], validate });
    expect(none.kind).toBe("gateway");
  });

  it("stops at the validation budget and when the proxy cannot validate", async () => {
    const { validate } = validator(new Set([3, 17, 29, 41]));
    const r = await findCulprits({
      candidates: [...Array(50).keys()],
      validate,
      maxValidations: 5,
    });
    expect(r).toMatchObject({ kind: "unknown", validations: 5, confirmed: true });
    const failing = await findCulprits({
      candidates: [1],
      validate: () =>
        Promise.resolve({ ok: false as const, error: { message: "HTTP 404: not found" } }),
    });
    expect(failing).toEqual({
      kind: "unknown",
      message: "cannot validate: HTTP 404: not found",
      validations: 1,
      confirmed: false,
    });
  });

  it("blames nothing when the whole config validates (refused for something else)", async () => {
    const { validate, calls } = validator(new Set());
    const r = await findCulprits({ candidates: [0, 1, 2], validate });
    expect(r).toEqual({ kind: "accepted", validations: 1 });
    expect(calls).toEqual([[]]);
  });

  it("does not loop when leaving objects out makes a config invalid (a validator that lies)", async () => {
    // valid only with everything out, refused otherwise: each object looks like a culprit
    const validate = (excluded: readonly number[]) =>
      Promise.resolve({
        ok: true as const,
        value:
          excluded.length === 4
            ? ({ accepted: true } as const)
            : ({ accepted: false, message: "no" } as const),
      });
    const r = await findCulprits({ candidates: [0, 1, 2, 3], validate });
    expect(r.kind).toBe("culprits");
    if (r.kind === "culprits") expect(r.culprits).toHaveLength(4);
  });
});
