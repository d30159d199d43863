import fc from "fast-check";
import { envRecord, ImageConfig, imageProcess } from "./oci";

const proxyImage: ImageConfig = {
  Entrypoint: ["/usr/bin/caddy"],
  Cmd: ["run", "--config", "/etc/kengine/bootstrap/caddy.json"],
  Env: ["PATH=/usr/bin", "XDG_DATA_HOME=/var/lib/kengine/data"],
  WorkingDir: "/var/lib/kengine",
};
const inImage = (files: readonly string[]) => (p: string) => files.includes(p);

describe("imageProcess", () => {
  it("runs the entrypoint with the image's cmd when the container sets neither", () => {
    expect(imageProcess({}, proxyImage, inImage(["/usr/bin/caddy"]))).toEqual({
      ok: true,
      value: {
        path: "/usr/bin/caddy",
        args: ["run", "--config", "/etc/kengine/bootstrap/caddy.json"],
        env: { PATH: "/usr/bin", XDG_DATA_HOME: "/var/lib/kengine/data" },
      },
    });
  });

  it("finds the managed pods' command (caddy run …) on the image's PATH, without the image's cmd", () => {
    const r = imageProcess(
      { command: ["caddy", "run", "--config", "/x.json"] },
      proxyImage,
      inImage(["/usr/bin/caddy"]),
    );
    expect(r).toMatchObject({
      ok: true,
      value: { path: "/usr/bin/caddy", args: ["run", "--config", "/x.json"] },
    });
  });

  it("args replace the cmd and keep the entrypoint", () => {
    const r = imageProcess({ args: ["version"] }, proxyImage, inImage(["/usr/bin/caddy"]));
    expect(r).toMatchObject({ ok: true, value: { path: "/usr/bin/caddy", args: ["version"] } });
  });

  it("resolves a relative path against the working directory", () => {
    const r = imageProcess(
      { command: ["./bin/x"] },
      proxyImage,
      inImage(["/var/lib/kengine/bin/x"]),
    );
    expect(r).toMatchObject({ ok: true, value: { path: "/var/lib/kengine/bin/x" } });
  });

  it("refuses a command the image does not hold, naming where it looked", () => {
    const r = imageProcess(
      { command: ["sh", "-c", "true"] },
      proxyImage,
      inImage(["/usr/bin/caddy"]),
    );
    expect(r).toEqual({
      ok: false,
      reason: "CreateContainerError",
      message: 'executable "sh" not found in the image (looked at /usr/bin/sh)',
    });
  });

  it("refuses an image with nothing to run", () => {
    expect(imageProcess({}, {}, () => true)).toMatchObject({
      ok: false,
      reason: "CreateContainerError",
    });
  });

  it("argv is the command, or the entrypoint, followed by args or the cmd (property)", () => {
    const word = fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/);
    fc.assert(
      fc.property(
        fc.option(fc.array(word, { minLength: 1, maxLength: 3 }), { nil: undefined }),
        fc.option(fc.array(word, { maxLength: 3 }), { nil: undefined }),
        fc.array(word, { minLength: 1, maxLength: 3 }),
        fc.array(word, { maxLength: 3 }),
        (command, args, entrypoint, cmd) => {
          const r = imageProcess(
            { command, args },
            { Entrypoint: entrypoint, Cmd: cmd, Env: ["PATH=/bin"] },
            () => true,
          );
          const argv = command ? [...command, ...(args ?? [])] : [...entrypoint, ...(args ?? cmd)];
          return (
            r.ok &&
            r.value.path === `/bin/${argv[0]}` &&
            r.value.args.join(" ") === argv.slice(1).join(" ")
          );
        },
      ),
    );
  });
});

describe("envRecord", () => {
  it("splits at the first '=' and lets a later line win", () => {
    expect(envRecord(["A=1", "B=x=y", "A=2", "junk"])).toEqual({ A: "2", B: "x=y" });
  });
});
