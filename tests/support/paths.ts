import { join } from "node:path";

export const repoRoot = join(__dirname, "..", "..");
/** The local platform's state (hack/cluster.sh honours the same KG_LOCAL_DIR). */
export const localDir = process.env.KG_LOCAL_DIR ?? join(repoRoot, ".local");
export const kubeconfigPath = join(localDir, "kubeconfig");
export const kubectlBin = join(localDir, "bin", "kubectl");
