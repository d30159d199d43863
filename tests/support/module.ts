/**
 * Runs the module with `pepr dev` against the test cluster. With KG_MODULE_KUBECONFIG set
 * (tests/integration/rbac.test.ts), the module's own API requests use that kubeconfig.
 */
import { PeprDev, startPeprDev } from "../../hack/pepr-dev";
import { kubeconfigPath, kubectlBin } from "./paths";

export type { PeprDev };
export const startModule = (): Promise<PeprDev> =>
  startPeprDev({
    kubeconfig: kubeconfigPath,
    kubectl: kubectlBin,
    moduleKubeconfig: process.env.KG_MODULE_KUBECONFIG || undefined,
  });
