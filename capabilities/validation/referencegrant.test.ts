import { MAX_VALUES } from "./budget";
import { referenceGrantProblems } from "./referencegrant";

describe("referenceGrantProblems", () => {
  it("refuses no grant of the API's shape, whatever kinds it names", () => {
    expect(
      referenceGrantProblems({
        spec: {
          from: [
            { group: "gateway.networking.k8s.io", kind: "HTTPRoute", namespace: "apps" },
            { group: "example.com", kind: "Other", namespace: "x" },
          ],
          to: [
            { group: "", kind: "Service" },
            { group: "", kind: "Secret", name: "cert" },
          ],
        },
      }),
    ).toEqual([]);
    expect(referenceGrantProblems({})).toEqual([]);
  });

  it("refuses malformed entries, each at its field", () => {
    expect(
      referenceGrantProblems({
        spec: { from: [{ group: "", kind: "HTTPRoute" }, "apps"], to: { kind: "Service" } },
      }),
    ).toEqual([
      { path: "spec.from[0].namespace", value: "", message: "must be a string" },
      {
        path: "spec.from[1]",
        value: "apps",
        message: "must be an object with string fields group, kind, namespace",
      },
      { path: "spec.to", value: '{"kind":"Service"}', message: "must be a list" },
    ]);
  });

  it("stops with a problem saying so on a hostile number of entries", () => {
    const to = Array.from({ length: MAX_VALUES + 10 }, () => ({ group: "", kind: "Service" }));
    const problems = referenceGrantProblems({ spec: { to } });
    expect(problems).toHaveLength(1);
    expect(problems[0].path).toBe(`spec.to[${MAX_VALUES}]`);
    expect(problems[0].message).toMatch(/^the object is too large to check/);
  });
});
