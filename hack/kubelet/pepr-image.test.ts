import fc from "fast-check";
import { mountPointFor, peprControllerProcess, peprAppDir, tagOf } from "./pepr-image";

const installed = { version: "1.1.4", nodeModules: "/repo/node_modules", node: "/usr/bin/node" };
const appDir = "/state/pods/uid/image/server";
// What `npm run build` writes for both Deployments (the hash varies per build).
const args = ["/app/node_modules/pepr/dist/controller.js", "60142f95d2a2d7c7"];

describe("peprControllerProcess", () => {
  it("runs the installed node with the Deployment's args, /app private and node_modules read-only", () => {
    const r = peprControllerProcess(
      { image: "ghcr.io/defenseunicorns/pepr/controller:v1.1.4", args },
      installed,
      appDir,
    );
    expect(r).toEqual({
      ok: true,
      value: {
        binaryPath: "/usr/bin/node",
        args,
        mounts: [
          { source: appDir, target: "/app", readOnly: false },
          { source: "/repo/node_modules", target: "/app/node_modules", readOnly: true },
        ],
        env: { NODE_ENV: "production" },
      },
    });
  });

  it("accepts a command naming node (the image's entrypoint) and appends the args", () => {
    const r = peprControllerProcess(
      { image: "ghcr.io/defenseunicorns/pepr/controller:1.1.4", command: ["node", "-e"], args },
      installed,
      appDir,
    );
    expect(r?.ok && r.value.args).toEqual(["-e", ...args]);
  });

  it("leaves other images to the other rules", () => {
    for (const image of ["caddy:2", "ghcr.io/defenseunicorns/pepr/other:v1.1.4", "controller"])
      expect(peprControllerProcess({ image, args }, installed, appDir)).toBeUndefined();
  });

  it("refuses a tag other than the installed version, a digest, or a missing pepr package", () => {
    for (const image of [
      "ghcr.io/defenseunicorns/pepr/controller:v1.1.5",
      "ghcr.io/defenseunicorns/pepr/controller@sha256:0123",
    ]) {
      const r = peprControllerProcess({ image, args }, installed, appDir);
      expect(r).toMatchObject({ ok: false, reason: "ErrImagePull" });
      expect(!r?.ok && r?.message).toContain("v1.1.4");
    }
    const none = peprControllerProcess(
      { image: "ghcr.io/defenseunicorns/pepr/controller:v1.1.4", args },
      undefined,
      appDir,
    );
    expect(none).toMatchObject({ ok: false, reason: "ErrImagePull" });
  });

  it("refuses a command the image does not hold", () => {
    const r = peprControllerProcess(
      { image: "ghcr.io/defenseunicorns/pepr/controller:v1.1.4", command: ["/bin/sh"] },
      installed,
      appDir,
    );
    expect(r).toMatchObject({ ok: false, reason: "CreateContainerError" });
  });
});

describe("tagOf", () => {
  it.each([
    ["ghcr.io/defenseunicorns/pepr/controller:v1.1.4", "v1.1.4"],
    ["ghcr.io/defenseunicorns/pepr/controller", undefined],
    ["localhost:5000/pepr/controller", undefined],
    ["localhost:5000/pepr/controller:v1@sha256:ab", "v1"],
  ])("%s → %s", (image, tag) => expect(tagOf(image)).toBe(tag));
});

describe("mountPointFor", () => {
  const image = [
    { source: appDir, target: peprAppDir, readOnly: false },
    { source: "/repo/node_modules", target: "/app/node_modules", readOnly: true },
  ];

  it("puts mount points inside /app into the container's private /app directory", () => {
    expect(mountPointFor("/app/load", image)).toBe(`${appDir}/load`);
    expect(mountPointFor("/app/api-path", image)).toBe(`${appDir}/api-path`);
    expect(mountPointFor("/app/node_modules", image.slice(0, 1))).toBe(`${appDir}/node_modules`);
    expect(mountPointFor("/app/node_modules/x", image)).toBe("/repo/node_modules/x");
  });

  it("leaves paths outside every image mount (and the mount targets themselves) on the host", () => {
    expect(mountPointFor("/etc/certs", image)).toBe("/etc/certs");
    expect(mountPointFor("/application", image)).toBe("/application");
    expect(mountPointFor("/app", image)).toBe("/app");
  });

  it("never maps a path outside the mount's source (property)", () => {
    const segment = fc.stringMatching(/^[a-z.]{1,8}$/).filter(s => s !== "." && s !== "..");
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 4 }), parts => {
        const target = `/app/${parts.join("/")}`;
        const p = mountPointFor(target, image.slice(0, 1));
        return p === `${appDir}/${parts.join("/")}`;
      }),
    );
  });
});
