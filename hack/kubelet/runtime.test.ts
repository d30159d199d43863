import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { containerCommand, launchScript } from "./runtime";

describe("launchScript", () => {
  it("opens the binary, bind-mounts volumes (read-only when asked), quoting paths, then execs it through the open fd", () => {
    const s = launchScript("pod'1", [
      { source: "/state/v/cfg", target: "/etc/caddy", readOnly: true },
      { source: "/state/v/x y", target: "/data", readOnly: false },
    ]);
    expect(s).toBe(
      [
        "set -e",
        'exec 9<"$1"',
        "hostname 'pod'\\''1' 2>/dev/null || true",
        "mount --bind '/state/v/cfg' '/etc/caddy'",
        "mount -o remount,bind,ro '/etc/caddy'",
        "mount --bind '/state/v/x y' '/data'",
        "bin=$1",
        "shift",
        'exec -a "$bin" /proc/self/fd/9 "$@"',
        "",
      ].join("\n"),
    );
  });
});

// The real launch (nsenter, unshare, bash, mount) as the kubelet runs it: root only, as the
// local kubelet is.
const asRoot = process.getuid?.() === 0 ? describe : describe.skip;
asRoot("a container's launch", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "kg-launch-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("runs a binary that a volume mounted over its directory hides (a peer cache under /tmp, an emptyDir at /tmp), under its own name, with the volume mounted", () => {
    // The image unpacked under `cache`; the pod mounts its empty volume over `cache`.
    const cache = join(dir, "cache");
    const binary = join(cache, "rootfs", "usr", "bin", "prog");
    mkdirSync(join(cache, "rootfs", "usr", "bin"), { recursive: true });
    copyFileSync("/bin/bash", binary);
    const volume = join(dir, "volume");
    mkdirSync(volume);
    writeFileSync(join(volume, "in-volume"), "");
    const script = join(dir, "launch.sh");
    writeFileSync(
      script,
      launchScript("pod", [{ source: volume, target: cache, readOnly: false }]),
    );
    const [cmd, ...argv] = containerCommand("/proc/self/ns/net", script, binary, [
      "-c",
      `ls ${cache}; tr '\\0' ' ' </proc/$$/cmdline`,
    ]);
    const r = spawnSync(cmd, argv, { encoding: "utf8" });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: "" });
    const [listing, cmdline] = r.stdout.split("\n");
    expect(listing).toBe("in-volume"); // the volume hides the cache in the container
    expect(cmdline?.startsWith(`${binary} -c `)).toBe(true); // argv[0] is the binary's path
  });
});
