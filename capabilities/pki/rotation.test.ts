import { Authority, createAuthority, generateKeyPair } from "./pki";
import {
  CA_STEP_SINCE_ANNOTATION,
  CaState,
  caStep,
  decodeCaSecret,
  encodeCaSecret,
  rotationStep,
  StepInput,
  trustedCaPems,
} from "./rotation";

const T = Date.parse("2026-11-21T10:00:00Z");
const authority = (cn: string, notBefore = T - 86_400_000, lifetimeDays = 3650): Authority => {
  const r = createAuthority({
    commonName: cn,
    keys: generateKeyPair(),
    notBefore: new Date(notBefore),
    lifetimeDays,
  });
  if (!r.ok) throw new Error(r.error);
  return r.value;
};
const A = authority("A");
const B = authority("B");
const input = (over: Partial<StepInput> = {}): StepInput => ({
  requested: false,
  fleetCurrent: false,
  now: T,
  graceMs: 60_000,
  newAuthority: () => B,
  ...over,
});

describe("rotationStep", () => {
  it("introduces, switches to and then alone trusts the new CA, each step once the fleet runs the last", () => {
    const stable: CaState = { signing: A, since: 0 };
    expect(caStep(stable)).toBe("Stable");
    expect(trustedCaPems(stable)).toEqual([A.certificatePem]);
    expect(rotationStep(stable, input())).toBeUndefined();

    const introducing = rotationStep(stable, input({ requested: true }))!;
    expect(caStep(introducing)).toBe("Introducing");
    expect(introducing.signing).toBe(A);
    expect(trustedCaPems(introducing)).toEqual([A.certificatePem, B.certificatePem]);
    // not before every proxy trusts B, and not before the grace period has passed
    expect(rotationStep(introducing, input({ now: T + 120_000 }))).toBeUndefined();
    expect(rotationStep(introducing, input({ fleetCurrent: true, now: T + 1000 }))).toBeUndefined();

    const switching = rotationStep(introducing, input({ fleetCurrent: true, now: T + 60_000 }))!;
    expect(caStep(switching)).toBe("Switching");
    expect(switching.signing).toBe(B);
    expect(trustedCaPems(switching)).toEqual([A.certificatePem, B.certificatePem]);
    expect(rotationStep(switching, input({ now: T + 200_000 }))).toBeUndefined();

    const done = rotationStep(switching, input({ fleetCurrent: true, now: T + 120_000 }))!;
    expect(caStep(done)).toBe("Stable");
    expect(done.signing).toBe(B);
    expect(trustedCaPems(done)).toEqual([B.certificatePem]);
    // a request that arrives mid-rotation does not start another one before this one ends
    expect(rotationStep(introducing, input({ requested: true, now: T + 1000 }))).toBeUndefined();
  });

  it("starts by itself once the CA has lived two thirds of its life", () => {
    const old = authority("old", T - 700 * 86_400_000, 1000);
    expect(caStep(rotationStep({ signing: old, since: 0 }, input())!)).toBe("Introducing");
  });
});

describe("the CA Secret", () => {
  const secretOf = (s: CaState) => {
    const { data, since } = encodeCaSecret(s);
    return { metadata: { annotations: { [CA_STEP_SINCE_ANNOTATION]: since } }, data };
  };

  it("round-trips every step", () => {
    for (const s of [
      { signing: A, since: T },
      { signing: A, next: B, since: T },
      { signing: B, previous: A.certificatePem, since: T },
    ] as CaState[]) {
      const back = decodeCaSecret(secretOf(s), "ns/ca");
      if (!back.ok) throw new Error(back.error);
      expect(caStep(back.value)).toBe(caStep(s));
      expect(trustedCaPems(back.value)).toEqual(trustedCaPems(s));
      expect(back.value.since).toBe(T);
    }
  });

  it("names the Secret and the key that is wrong", () => {
    const { data } = encodeCaSecret({ signing: A, next: B, since: T });
    const { "next.key": _k, ...noKey } = data;
    expect(decodeCaSecret({ metadata: {}, data: noKey }, "ns/ca")).toEqual({
      ok: false,
      error: "Secret ns/ca has next.crt without next.key",
    });
    expect(decodeCaSecret({ metadata: {}, data: {} }, "ns/ca")).toEqual({
      ok: false,
      error: "Secret ns/ca lacks tls.crt and tls.key",
    });
    const both = { ...data, "previous.crt": data["tls.crt"]! };
    expect(decodeCaSecret({ metadata: {}, data: both }, "ns/ca")).toMatchObject({
      ok: false,
      error: expect.stringContaining("both next.crt and previous.crt"),
    });
  });
});
