import { IngressEvents } from "./ingress-events";

const problem = {
  path: "spec.rules[0].http.paths[0].path",
  value: "/(.*)",
  message: "looks like a regular expression",
};

describe("Ingress Events", () => {
  it("a Warning once per new problem list, a Normal Event when served again", () => {
    const e = new IngressEvents();
    const first = e.observe(
      new Map([
        ["team/a", [problem]],
        ["team/b", []],
      ]),
    );
    expect(first.map(([k, ev]) => [k, ev.reason, ev.type])).toEqual([
      ["team/a", "IngressNotServed", "Warning"],
    ]);
    expect(first[0]![1].note).toContain("spec.rules[0].http.paths[0].path");
    expect(e.observe(new Map([["team/a", [problem]]]))).toEqual([]);
    expect(e.observe(new Map([["team/a", []]])).map(([, ev]) => ev.reason)).toEqual([
      "IngressServed",
    ]);
    expect(e.observe(new Map([["team/a", []]]))).toEqual([]);
  });

  it("a new term reports again what is still wrong", () => {
    const e = new IngressEvents();
    e.observe(new Map([["team/a", [problem]]]));
    e.forget();
    expect(e.observe(new Map([["team/a", [problem]]])).length).toBe(1);
  });
});
