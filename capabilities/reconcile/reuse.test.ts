import fc from "fast-check";
import type { GatewayIR } from "../ir";
import { sameData } from "../same-data";
import { IrReuse } from "./reuse";

const json = fc.jsonValue({ maxDepth: 4 });

describe("sameData", () => {
  it("equals JSON text equality for JSON data", () => {
    fc.assert(
      fc.property(json, json, (a, b) => {
        expect(sameData(a, b)).toBe(JSON.stringify(a) === JSON.stringify(b));
        expect(sameData(a, structuredClone(a))).toBe(true);
      }),
    );
  });

  it("tells apart key order, arrays from objects, and a missing key from an undefined one", () => {
    expect(sameData({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false);
    expect(sameData([], {})).toBe(false);
    expect(sameData({ a: undefined }, {})).toBe(false);
    expect(sameData(null, {})).toBe(false);
  });
});

describe("IrReuse", () => {
  const ir = (name: string, hosts: string[]) =>
    ({ namespace: "ns", name, servers: [{ hosts }] }) as unknown as GatewayIR;

  it("keeps the previous IR object of a Gateway whose translation is equal", () => {
    const reuse = new IrReuse();
    const a1 = ir("a", ["x"]);
    const b1 = ir("b", ["y"]);
    expect(reuse.reuse([a1, b1]).changed).toEqual(["ns/a", "ns/b"]);
    const a2 = ir("a", ["x"]);
    const b2 = ir("b", ["y", "z"]);
    const second = reuse.reuse([a2, b2]);
    expect(second.gateways[0]).toBe(a1);
    expect(second.gateways[1]).toBe(b2);
    expect(second.changed).toEqual(["ns/b"]);
    // a Gateway gone and back is new
    reuse.reuse([b2]);
    const back = reuse.reuse([ir("a", ["x"]), b2]);
    expect(back.gateways[0]).not.toBe(a1);
    expect(back.changed).toEqual(["ns/a"]);
  });
});
