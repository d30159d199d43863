/**
 * Pepr's controller image (`ghcr.io/defenseunicorns/pepr/controller:v<version>`), run the way
 * the image runs it: its entrypoint is `node`, its working directory `/app`, which holds
 * `node_modules/` (pepr and its dependencies). `npx pepr deploy` and `npm run build` write
 * admission and watcher Deployments that pass `/app/node_modules/pepr/dist/controller.js <hash>`
 * as args; the controller reads the module from `/app/load` (the module Secret), writes
 * `/app/module-<hash>.js` and forks it.
 *
 * Here the image's contents are the installed `pepr` package: the node running this kubelet
 * is the process, a private per-container directory is bind-mounted at `/app` (writable, like
 * the image's layer) and the repository's `node_modules` at `/app/node_modules` (read-only).
 * Only the version installed can run: another tag is an ErrImagePull, as on a node without it.
 */
import { basename, posix } from "node:path";
import { repositoryOf } from "./images";
import type { Result } from "./oci";
import type { Mount } from "./runtime";

export const peprControllerRepository = "ghcr.io/defenseunicorns/pepr/controller";
/** The image's working directory, where the controller expects its files. */
export const peprAppDir = "/app";

export interface InstalledPepr {
  /** pepr's version in node_modules/pepr/package.json, e.g. "1.1.4". */
  readonly version: string;
  /** The node_modules directory that holds pepr (mounted at /app/node_modules). */
  readonly nodeModules: string;
  /** The node executable (the image's entrypoint). */
  readonly node: string;
}

export interface PeprProcess {
  readonly binaryPath: string;
  readonly args: readonly string[];
  /** Mounts the image's file system needs, before the pod's volume mounts. */
  readonly mounts: readonly Mount[];
  readonly env: Readonly<Record<string, string>>;
}

/** The tag of an image reference, if it has one (no digest). */
export function tagOf(image: string): string | undefined {
  const noDigest = image.split("@")[0];
  const repo = repositoryOf(noDigest);
  return noDigest.length > repo.length ? noDigest.slice(repo.length + 1) : undefined;
}

/**
 * What a container of Pepr's controller image runs (pure): undefined when the image is not
 * Pepr's controller; an error when the tag is not the installed version or the command is not
 * the image's node. `appDir` is the container's private directory mounted at /app.
 */
export function peprControllerProcess(
  c: {
    readonly image?: string;
    readonly command?: readonly string[];
    readonly args?: readonly string[];
  },
  installed: InstalledPepr | undefined,
  appDir: string,
): Result<PeprProcess> | undefined {
  const image = c.image ?? "";
  if (repositoryOf(image) !== peprControllerRepository) return undefined;
  if (!installed) {
    return {
      ok: false,
      reason: "ErrImagePull",
      message: `image "${image}" is not available on the kengine-local node (no pepr package installed)`,
    };
  }
  const tag = tagOf(image);
  if (image.includes("@") || (tag !== undefined && tag.replace(/^v/, "") !== installed.version)) {
    return {
      ok: false,
      reason: "ErrImagePull",
      message:
        `image "${image}" is not available on the kengine-local node: it holds Pepr's controller ` +
        `v${installed.version} (the installed pepr package) only`,
    };
  }
  const command = c.command ?? [];
  if (command.length > 0 && basename(command[0]) !== "node") {
    return {
      ok: false,
      reason: "CreateContainerError",
      message: `command "${command[0]}" is not available in the local image for "${image}" (can run: node)`,
    };
  }
  return {
    ok: true,
    value: {
      binaryPath: installed.node,
      args: [...command.slice(1), ...(c.args ?? [])],
      mounts: [
        { source: appDir, target: peprAppDir, readOnly: false },
        {
          source: installed.nodeModules,
          target: posix.join(peprAppDir, "node_modules"),
          readOnly: true,
        },
      ],
      env: { NODE_ENV: "production" },
    },
  };
}

/**
 * Where a mount point must exist before a bind mount onto `target` (pure): a target inside an
 * earlier image mount (e.g. /app/load inside /app) lives in that mount's source directory;
 * any other target is the host path itself.
 */
export function mountPointFor(target: string, imageMounts: readonly Mount[]): string {
  let best: Mount | undefined;
  for (const m of imageMounts) {
    const inside = target === m.target || target.startsWith(m.target + "/");
    if (inside && (!best || m.target.length > best.target.length)) best = m;
  }
  if (!best || best.target === target) return target;
  return posix.join(best.source, target.slice(best.target.length + 1));
}
