import { randomBytes } from "node:crypto";
import {
  HELM_RELEASE_BUDGET_BYTES,
  checkBundle,
  checkHelmRelease,
  helmReleaseBytes,
  namespacedRbac,
  wildcardProblems,
} from "./dist-check";

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

  it("estimates a Helm release with a file the templates render twice: in the chart and in the manifest", () => {
    const code = randomBytes(200_000); // gzipped code does not compress again
    const chart = (template: string) => [
      { path: "Chart.yaml", data: Buffer.from("name: x\nversion: 0.1.0\n") },
      { path: "values.yaml", data: Buffer.from("a: 1\n") },
      { path: "files/module.js.gz", data: code },
      { path: "templates/secret.yaml", data: Buffer.from(template) },
    ];
    const once = helmReleaseBytes(chart("data:\n  m: none\n"));
    const twice = helmReleaseBytes(
      chart('data:\n  m: {{ .Files.Get "files/module.js.gz" | b64enc }}\n'),
    );
    // in the chart: base64 in JSON, gzipped back to about the bytes, base64 again (4/3)
    expect(once).toBeGreaterThan((4 / 3) * code.length);
    expect(once).toBeLessThan(1.5 * code.length);
    // the manifest's base64 text: gzip takes it back to about the bytes, times 4/3 again
    expect(twice - once).toBeGreaterThan((4 / 3) * code.length);
    expect(twice - once).toBeLessThan(1.5 * code.length);
  });

  it("passes a Helm release within budget and fails one over it", () => {
    expect(checkHelmRelease("c", 934_708).ok).toBe(true);
    const over = checkHelmRelease("c", HELM_RELEASE_BUDGET_BYTES + 1);
    expect(over.ok).toBe(false);
    expect(over.message).toMatch(
      /would be refused \("Too long", a Secret holds at most 1024\.0 KiB\)/,
    );
  });
});
