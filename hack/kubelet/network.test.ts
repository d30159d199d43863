import { podNetNames } from "./network";

describe("pod network names", () => {
  it("are kg- prefixed, stable, and fit the 15-byte interface limit", () => {
    const n = podNetNames("0b4e7c52-1d6e-4a6e-9a59-2b1d1a0e0b7c");
    expect(n).toEqual(podNetNames("0b4e7c52-1d6e-4a6e-9a59-2b1d1a0e0b7c"));
    for (const v of Object.values(n)) expect(v).toMatch(/^kg-/);
    expect(n.hostVeth.length).toBeLessThanOrEqual(15);
    expect(n.podVeth.length).toBeLessThanOrEqual(15);
    expect(podNetNames("other").netns).not.toBe(n.netns);
  });
});
