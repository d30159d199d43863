import { allocate } from "./ipam";

describe("pod IPs", () => {
  it("keeps a pod's IP, skips used ones, and moves on from the last handed out", () => {
    const m = new Map([["a", "10.244.0.2"]]);
    expect(allocate(m, "a")).toBe("10.244.0.2");
    expect(allocate(m, "b")).toBe("10.244.0.3");
    expect(allocate(new Map(), "c", 5)).toBe("10.244.0.6");
    expect(allocate(new Map(), "c", 254)).toBe("10.244.0.2");
    const full = new Map(Array.from({ length: 253 }, (_, i) => [`u${i}`, `10.244.0.${i + 2}`]));
    expect(allocate(full, "x")).toBeUndefined();
  });
});
