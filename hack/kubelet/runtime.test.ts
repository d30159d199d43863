import { launchScript } from "./runtime";

describe("launchScript", () => {
  it("bind-mounts volumes (read-only when asked), quoting paths, then execs", () => {
    const s = launchScript("pod'1", [
      { source: "/state/v/cfg", target: "/etc/caddy", readOnly: true },
      { source: "/state/v/x y", target: "/data", readOnly: false },
    ]);
    expect(s).toBe(
      [
        "set -e",
        "hostname 'pod'\\''1' 2>/dev/null || true",
        "mount --bind '/state/v/cfg' '/etc/caddy'",
        "mount -o remount,bind,ro '/etc/caddy'",
        "mount --bind '/state/v/x y' '/data'",
        'exec "$@"',
        "",
      ].join("\n"),
    );
  });
});
