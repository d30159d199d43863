import { checkBundle, namespacedRbac, wildcardProblems } from "./dist-check";

describe("npm run build checks", () => {
  it("passes a bundle within budget and fails one over it with the sizes", () => {
    expect(checkBundle("m.js", 815_957, 346_000).ok).toBe(true);
    // the budget is the module Secret's (what Pepr's 1 MiB limit applies to), not the raw size
    expect(checkBundle("m.js", 950 * 1024, 400_000).ok).toBe(true);
    const over = checkBundle("m.js", 2100 * 1024, 950 * 1024);
    expect(over.ok).toBe(false);
    expect(over.message).toMatch(
      /over budget: m\.js: 2100\.0 KiB .* module Secret \(gzip\+base64\) 950\.0 KiB \(972800 bytes\); the budget is 900\.0 KiB/,
    );
  });

  it("finds wildcards in roles", () => {
    expect(
      wildcardProblems([
        {
          kind: "ClusterRole",
          metadata: { name: "x" },
          rules: [{ apiGroups: ["*"], resources: ["pods"], verbs: ["get"] }],
        },
      ]),
    ).toEqual([expect.stringMatching(/ClusterRole x: rules\[0\]\.apiGroups contains "\*"/)]);
    expect(wildcardProblems(namespacedRbac("u") as never)).toEqual([]);
  });
});
