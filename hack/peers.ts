/** Where hack/build-peers.sh caches the test peers it builds (binaries and CRDs). */
import { execFileSync } from "node:child_process";
import { join } from "node:path";

const cached = new Map<string, string>();

/**
 * Builds the named peers if they are missing (none: only the Gateway API CRDs) and returns
 * the cache directory (…/kengine-gateway/<hash>, the same whichever peers are built).
 */
export function peersCache(peers: readonly string[] = ["--crds"]): string {
  const k = peers.join(" ");
  let dir = cached.get(k);
  if (dir === undefined) {
    dir = execFileSync("bash", [join(__dirname, "build-peers.sh"), ...peers], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    })
      .trim()
      .split("\n")
      .pop()!;
    cached.set(k, dir);
  }
  return dir;
}

/** A peer's binary, built on first use (e.g. caddy-2.8, which only some tests need). */
export const peerBin = (name: string): string => join(peersCache([name]), "bin", name);
