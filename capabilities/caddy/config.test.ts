import { hexBelow } from "./config";

describe("hexBelow (weighted backend choice from the request UUID)", () => {
  it("matches exactly the three-hex-digit prefixes below n, for every n", () => {
    const prefixes = Array.from({ length: 4096 }, (_, v) => v.toString(16).padStart(3, "0"));
    for (let n = 1; n < 4096; n++) {
      // Go's RE2 and JavaScript agree on this subset (anchors, classes, counted repeats).
      const re = new RegExp(hexBelow(n));
      const matched = prefixes.filter(p => re.test(`${p}e4f1-0000-4000-8000-000000000000`));
      expect(matched.length).toBe(n);
      expect(matched[matched.length - 1]).toBe((n - 1).toString(16).padStart(3, "0"));
    }
  });
});
