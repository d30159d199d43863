/**
 * Brings the local control plane up once for the integration run (hack/cluster.sh up is
 * idempotent). If it was already running (a developer's cluster), teardown leaves it be.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { repoRoot } from "./paths";

export default function globalSetup(): void {
  const status = execFileSync("bash", [join(repoRoot, "hack", "cluster.sh"), "status"], {
    encoding: "utf8",
  });
  const wasRunning = /kube-apiserver\s+running/.test(status);
  process.env.KG_CLUSTER_STARTED_BY_TESTS = wasRunning ? "0" : "1";
  // Every peer the tests use (cluster.sh builds only what the platform runs): a test-only peer
  // such as caddy-2.8 is built here, from the same cache, rather than inside a test's timeout.
  execFileSync("bash", [join(repoRoot, "hack", "build-peers.sh")], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  execFileSync("bash", [join(repoRoot, "hack", "cluster.sh"), "up"], { stdio: "inherit" });
}
