import { randomBytes } from "node:crypto";
import {
  BUNDLE_BUDGET_BYTES,
  HELM_RELEASE_BUDGET_BYTES,
  HELM_RELEASE_HEADROOM_BYTES,
  HELM_RELEASE_MAX_BYTES,
  checkBudgets,
  checkBundle,
  heapLimitProblems,
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

  // main at fdf8287 (undici in the bundle) and this branch after it
  const before = {
    bundleBytes: 1_034_948,
    gzipBytes: 334_734,
    secretBytes: 446_312,
    releaseBytes: 936_068,
  };

  it("prints the bundle, the module Secret and the Helm release, each with the budget left", () => {
    const at = (releaseBytes: number) => checkBudgets("m.js", { ...before, releaseBytes });
    const fits = at(HELM_RELEASE_MAX_BYTES - 100 * 1024);
    expect(fits.ok).toBe(true);
    const lines = fits.message.split("\n");
    expect(lines).toHaveLength(4);
    // 100 KiB of release left: 3/8 of it in gzipped code, the bundle's ratio in minified code
    expect(lines[1]).toMatch(
      /bundle m\.js: 1010\.7 KiB minified \(1034948 bytes\), 326\.9 KiB gzipped; the release budget leaves room for ~37\.5 KiB more gzipped code \(~115\.\d KiB minified\)/,
    );
    expect(lines[2]).toMatch(
      /module Secret \(gzip\+base64\): 435\.9 KiB \(446312 bytes\) of 900\.0 KiB: 464\.1 KiB left .*allows ~50\.0 KiB more/,
    );
    expect(lines[3]).toMatch(
      /Helm release Secret: ~\d+\.\d KiB .* of 826\.0 KiB: 100\.0 KiB left \(the budget keeps 150\.0 KiB of the 976\.0 KiB/,
    );
  });

  it("fails a release that leaves less than the headroom, and one Helm would refuse", () => {
    expect(HELM_RELEASE_MAX_BYTES).toBe(HELM_RELEASE_BUDGET_BYTES - HELM_RELEASE_HEADROOM_BYTES);
    const at = (releaseBytes: number) => checkBudgets("m.js", { ...before, releaseBytes });
    expect(at(HELM_RELEASE_MAX_BYTES).ok).toBe(true);
    const tight = at(HELM_RELEASE_MAX_BYTES + 1);
    expect(tight.ok).toBe(false);
    expect(tight.message).toMatch(
      /^the Helm release leaves less than 150\.0 KiB of 976\.0 KiB free:/,
    );
    expect(tight.message).toMatch(/: -0\.0 KiB left/);
    // main at fdf8287: 61.9 KiB to spare, under the headroom
    expect(at(before.releaseBytes).ok).toBe(false);
    const over = at(HELM_RELEASE_BUDGET_BYTES + 1);
    expect(over.message).toMatch(
      /would be refused \("Too long", a Secret holds at most 1024\.0 KiB\)/,
    );
  });

  it("fails a module Secret over its budget", () => {
    const r = checkBudgets("m.js", {
      ...before,
      secretBytes: BUNDLE_BUDGET_BYTES + 1,
      releaseBytes: 500_000,
    });
    expect(r.ok).toBe(false);
    expect(r.message).toMatch(/^the module Secret is over its budget of 900\.0 KiB/);
  });
});

describe("controller heap limit", () => {
  const deployment = (nodeOptions: string | undefined, memory: string | undefined) => ({
    kind: "Deployment",
    metadata: { name: "pepr-x-watcher" },
    spec: {
      template: {
        spec: {
          containers: [
            {
              env: nodeOptions === undefined ? [] : [{ name: "NODE_OPTIONS", value: nodeOptions }],
              resources: memory === undefined ? {} : { limits: { memory } },
            },
          ],
        },
      },
    },
  });

  it("accepts a heap limit within three quarters of the memory limit", () => {
    expect(
      heapLimitProblems([deployment("--max-old-space-size=320 --max-semi-space-size=4", "512Mi")]),
    ).toEqual([]);
  });

  it("names a container without a limit, with one too large, or without a memory limit", () => {
    expect(heapLimitProblems([deployment(undefined, "512Mi")])).toEqual([
      "pepr-x-watcher: no --max-old-space-size in NODE_OPTIONS",
    ]);
    expect(heapLimitProblems([deployment("--max-old-space-size=400", "512Mi")])).toEqual([
      "pepr-x-watcher: heap limit 400 MiB is over three quarters of the memory limit 512Mi",
    ]);
    expect(heapLimitProblems([deployment("--max-old-space-size=300", undefined)])).toEqual([
      "pepr-x-watcher: heap limit 300 MiB but no readable memory limit",
    ]);
    expect(heapLimitProblems([{ kind: "Service" }])).toEqual([]);
  });
});
