/** Runs the module with `pepr dev` against the test cluster. */
import { PeprDev, startPeprDev } from "../../hack/pepr-dev";
import { kubeconfigPath, kubectlBin } from "./paths";

export type { PeprDev };
export const startModule = (): Promise<PeprDev> =>
  startPeprDev({ kubeconfig: kubeconfigPath, kubectl: kubectlBin });
