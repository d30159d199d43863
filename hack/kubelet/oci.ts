/**
 * Images the node holds as an OCI image layout (the proxy image hack/build-peers.sh writes with
 * proxy/image): a container whose image is in the layout runs the image's own binary, found
 * the way a container runtime finds it (entrypoint and cmd, or the pod's command looked up on
 * the image's PATH), with the image's environment under the pod's. Each image's layers are
 * unpacked once into a cache directory named by the manifest digest.
 *
 * Not a container runtime: the process still sees the host's file system (plus the pod's
 * volume mounts), so of the image's files only the executable is used; it runs as root.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { join, posix } from "node:path";

/** The parts of an OCI image config a kubelet uses. */
export interface ImageConfig {
  readonly Entrypoint?: readonly string[] | null;
  readonly Cmd?: readonly string[] | null;
  readonly Env?: readonly string[] | null;
  readonly WorkingDir?: string;
  readonly User?: string;
}

export interface LocalImage {
  readonly reference: string;
  readonly digest: string;
  readonly config: ImageConfig;
  /** Where the layers are unpacked. */
  readonly rootfs: string;
}

export type Result<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly reason: string; readonly message: string };

/** `NAME=value` lines → a record; a later line wins. */
export function envRecord(env: readonly string[] | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of env ?? []) {
    const eq = line.indexOf("=");
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

export interface ImageProcess {
  /** Absolute path of the executable inside the image. */
  readonly path: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/**
 * What a container runs from its image (pure; `exists` tells whether a path inside the image
 * is a file). Kubernetes' rules: `command` replaces the entrypoint and drops the image's cmd;
 * `args` replaces the cmd. A name without "/" is looked up on the image's PATH.
 */
export function imageProcess(
  c: { readonly command?: readonly string[]; readonly args?: readonly string[] },
  config: ImageConfig,
  exists: (pathInImage: string) => boolean,
): Result<ImageProcess> {
  const argv =
    c.command && c.command.length > 0
      ? [...c.command, ...(c.args ?? [])]
      : [...(config.Entrypoint ?? []), ...(c.args ?? config.Cmd ?? [])];
  const env = envRecord(config.Env);
  if (argv.length === 0) {
    return {
      ok: false,
      reason: "CreateContainerError",
      message: "the image has no entrypoint or cmd and the container sets no command",
    };
  }
  const [name, ...args] = argv;
  const candidates = name.includes("/")
    ? [posix.resolve(config.WorkingDir || "/", name)]
    : (env.PATH ?? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        .split(":")
        .filter(d => d.startsWith("/"))
        .map(d => posix.join(d, name));
  const path = candidates.find(exists);
  if (!path) {
    return {
      ok: false,
      reason: "CreateContainerError",
      message: `executable "${name}" not found in the image (looked at ${candidates.join(", ")})`,
    };
  }
  return { ok: true, value: { path, args, env } };
}

interface Descriptor {
  readonly mediaType: string;
  readonly digest: string;
  readonly annotations?: Readonly<Record<string, string>>;
}

const refAnnotation = "org.opencontainers.image.ref.name";

/** An OCI image layout directory (index.json + blobs/), read when a pod asks for an image. */
export class OciLayout {
  constructor(
    private readonly dir: string,
    private readonly cacheDir: string,
  ) {}

  private blob(digest: string): Buffer {
    const [alg, hex] = digest.split(":");
    if (!alg || !hex || !/^[a-f0-9]+$/.test(hex)) throw new Error(`bad digest "${digest}"`);
    return readFileSync(join(this.dir, "blobs", alg, hex));
  }

  /** The image `reference` names (by its ref annotation or its manifest digest), if the layout holds it. */
  find(reference: string): Result<LocalImage> | undefined {
    const indexPath = join(this.dir, "index.json");
    if (!existsSync(indexPath)) return undefined;
    let manifests: readonly Descriptor[];
    try {
      manifests =
        (JSON.parse(readFileSync(indexPath, "utf8")) as { manifests?: Descriptor[] }).manifests ??
        [];
    } catch (e) {
      return pullError(reference, `cannot read ${indexPath}: ${String(e)}`);
    }
    const byDigest = reference.includes("@") ? reference.slice(reference.indexOf("@") + 1) : "";
    const desc = manifests.find(
      m => m.annotations?.[refAnnotation] === reference || (byDigest && m.digest === byDigest),
    );
    if (!desc) return undefined;
    try {
      const manifest = JSON.parse(this.blob(desc.digest).toString("utf8")) as {
        config: Descriptor;
        layers: readonly Descriptor[];
      };
      const config =
        (JSON.parse(this.blob(manifest.config.digest).toString("utf8")) as { config?: ImageConfig })
          .config ?? {};
      const rootfs = join(this.cacheDir, desc.digest.replace(":", "-"));
      if (!existsSync(rootfs)) this.unpack(manifest.layers, rootfs);
      return { ok: true, value: { reference, digest: desc.digest, config, rootfs } };
    } catch (e) {
      return pullError(reference, `cannot unpack it from ${this.dir}: ${String(e)}`);
    }
  }

  /** Layers in order into a fresh directory, renamed into place when complete. */
  private unpack(layers: readonly Descriptor[], rootfs: string): void {
    const tmp = `${rootfs}.tmp.${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    for (const l of layers) {
      if (!/^application\/vnd\.oci\.image\.layer\.v1\.tar(\+gzip)?$/.test(l.mediaType)) {
        throw new Error(`layer ${l.digest}: media type ${l.mediaType} is not supported`);
      }
      const [alg, hex] = l.digest.split(":");
      execFileSync("tar", ["-x", "-f", join(this.dir, "blobs", alg, hex), "-C", tmp], {
        stdio: ["ignore", "ignore", "pipe"],
      });
    }
    mkdirSync(this.cacheDir, { recursive: true });
    try {
      renameSync(tmp, rootfs);
    } catch (e) {
      // Another kubelet process unpacked the same digest first.
      rmSync(tmp, { recursive: true, force: true });
      if (!existsSync(rootfs)) throw e;
    }
  }
}

function pullError(reference: string, why: string): Result<never> {
  return { ok: false, reason: "ErrImagePull", message: `image "${reference}": ${why}` };
}

/** Whether a path inside an unpacked image is an executable file. */
export function fileInImage(rootfs: string): (pathInImage: string) => boolean {
  return p => {
    try {
      const st = statSync(join(rootfs, p));
      return st.isFile() && (st.mode & 0o111) !== 0;
    } catch {
      return false;
    }
  };
}
