/**
 * Runs the module with `pepr dev` against the test cluster. With KG_MODULE_KUBECONFIG set
 * (tests/integration/rbac.test.ts), or opts.moduleKubeconfig, the module's own API requests
 * use that kubeconfig.
 *
 * From a copy of the module (hack/pepr-dev.ts moduleCopy): in the repository, `pepr dev`
 * lints, checks the formatting of and type-checks the whole project before each start, and
 * rewrites every file's modification time. The project's own checks are `npm run lint` and
 * `npm run build` (tests/integration/rbac.test.ts builds it). `{ inPlace: true }` runs it in
 * the repository, as a developer does (tests/integration/pepr-dev.test.ts).
 */
import { rmSync } from "node:fs";
import { moduleCopy, PeprDev, PeprDevOptions, startPeprDev } from "../../hack/pepr-dev";
import { kubeconfigPath, kubectlBin } from "./paths";

export type { PeprDev };
export async function startModule(
  opts: Pick<PeprDevOptions, "moduleKubeconfig" | "readyTimeoutMs" | "echo"> & {
    readonly inPlace?: boolean;
  } = {},
): Promise<PeprDev> {
  const moduleDir = opts.inPlace ? undefined : moduleCopy();
  const remove = () => {
    if (moduleDir) rmSync(moduleDir, { recursive: true, force: true });
  };
  try {
    const dev = await startPeprDev({
      kubeconfig: kubeconfigPath,
      kubectl: kubectlBin,
      moduleKubeconfig: opts.moduleKubeconfig ?? (process.env.KG_MODULE_KUBECONFIG || undefined),
      readyTimeoutMs: opts.readyTimeoutMs,
      echo: opts.echo,
      moduleDir,
    });
    return {
      ...dev,
      stop: async () => {
        await dev.stop();
        remove();
      },
      kill: async () => {
        await dev.kill();
        remove();
      },
    };
  } catch (e) {
    remove();
    throw e;
  }
}
