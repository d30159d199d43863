import { Collector } from "./budget";

describe("Collector", () => {
  it("stops at the problem limit with a closing problem", () => {
    const c = new Collector({ problems: 2, values: 100, characters: 100 });
    c.add([1, 2, 3, 4].map(i => ({ path: `p${i}`, value: "", message: "m" })));
    expect(c.problems().map(p => p.path)).toEqual(["p1", "p2", "p3"]);
    expect(c.problems()[2].message).toBe("more than 2 problems; the rest were not checked");
    expect(c.done).toBe(true);
  });
  it("stops when values or characters run out", () => {
    const c = new Collector({ problems: 5, values: 2, characters: 100 });
    expect(c.spend("a", 1)).toBe(true);
    expect(c.spend("b", 1)).toBe(true);
    expect(c.spend("c", 1)).toBe(false);
    expect(c.problems()).toEqual([expect.objectContaining({ path: "c" })]);
    const d = new Collector({ problems: 5, values: 10, characters: 10 });
    expect(d.spend("a", 11)).toBe(false);
  });
});
