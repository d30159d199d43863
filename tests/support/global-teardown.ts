import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { repoRoot } from "./paths";

export default function globalTeardown(): void {
  if (process.env.KG_CLUSTER_STARTED_BY_TESTS === "1" && process.env.KG_KEEP_CLUSTER !== "1") {
    execFileSync("bash", [join(repoRoot, "hack", "cluster.sh"), "down"], { stdio: "inherit" });
  }
}
