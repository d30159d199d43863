/** Where hack/build-peers.sh caches the test peers it builds (binaries and CRDs). */
import { execFileSync } from "node:child_process";
import { join } from "node:path";

let cached: string | undefined;

/** Builds any missing peer and returns the cache directory (…/kengine-gateway/<hash>). */
export function peersCache(): string {
  cached ??= execFileSync("bash", [join(__dirname, "build-peers.sh")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  })
    .trim()
    .split("\n")
    .pop()!;
  return cached;
}

export const peerBin = (name: string): string => join(peersCache(), "bin", name);
