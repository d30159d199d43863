/**
 * Image → local binary. No image can be pulled here, so each image the project runs maps to
 * a binary built by hack/build-peers.sh. Add a row to `imageTable` for a new image (e.g. the
 * controller's proxy image).
 */
import { basename } from "node:path";

export interface ImageRule {
  /** Matches the image repository (no tag or digest), e.g. "registry.k8s.io/gateway-api/echo-basic". */
  readonly repository: RegExp;
  /** The peer binary's name in the peers bin directory. */
  readonly binary: string;
  /** What the image runs when the container sets neither command nor args. */
  readonly defaultArgs: readonly string[];
  /** A TypeScript stand-in (hack/kubelet/standins/<name>.ts) used while the binary is not built. */
  readonly standIn?: string;
}

export const imageTable: readonly ImageRule[] = [
  {
    // Gateway API v1.7.0 moved the image to registry.k8s.io/gateway-api/conformance/echo-basic
    // (built from sigs.k8s.io/gateway-api-conformance-images; hack/conformance.ts says why the
    // v1.6.1 echo-basic stands in for it).
    repository:
      /^(registry\.k8s\.io\/gateway-api\/(conformance\/)?echo-basic|gcr\.io\/k8s-staging-gateway-api\/echo-(basic|advanced))$/,
    binary: "echo-basic",
    defaultArgs: [],
  },
  {
    // The conformance suite's UDP backend. hack/build-peers.sh does not build CoreDNS yet; until
    // it does, standins/dns.ts answers in its place.
    repository: /^registry\.k8s\.io\/coredns\/coredns$/,
    binary: "coredns",
    defaultArgs: [],
    standIn: "dns",
  },
  {
    // The upstream Ingress conformance suite's echo server (hack/peers/ingress-conformance,
    // images/echoserver; npm run conformance:ingress).
    repository: /^(k8s\.gcr\.io|registry\.k8s\.io)\/ingressconformance\/echoserver$/,
    binary: "ingress-echo",
    defaultArgs: [],
  },
  {
    // caddy, docker.io/library/caddy, ghcr.io/kengine/kengine, …/caddy, …/kengine
    repository: /(^|\/)(caddy|kengine)$/,
    binary: "caddy",
    defaultArgs: ["run", "--config", "/etc/caddy/Caddyfile", "--adapter", "caddyfile"],
  },
];

/** Binaries a container's command may name directly (first element, by base name). */
export const commandBinaries: readonly string[] = ["echo-basic", "caddy", "kengine", "coredns"];
const commandAlias: Record<string, string> = { kengine: "caddy" };

/** The repository part of an image reference: no digest, no tag. */
export function repositoryOf(image: string): string {
  const noDigest = image.split("@")[0];
  const slash = noDigest.lastIndexOf("/");
  const colon = noDigest.lastIndexOf(":");
  return colon > slash ? noDigest.slice(0, colon) : noDigest;
}

export type Resolved =
  | {
      readonly ok: true;
      readonly binary: string;
      readonly args: readonly string[];
      readonly standIn?: string;
    }
  | { readonly ok: false; readonly reason: string; readonly message: string };

/**
 * What to run for a container: the binary and its arguments, or why it cannot run.
 * Follows Docker semantics: `command` replaces the entrypoint, `args` replaces the default
 * arguments; here the entrypoint is the mapped binary.
 */
export function resolveContainer(c: {
  readonly image?: string;
  readonly command?: readonly string[];
  readonly args?: readonly string[];
}): Resolved {
  const image = c.image ?? "";
  const rule = imageTable.find(r => r.repository.test(repositoryOf(image)));
  if (!rule) {
    return {
      ok: false,
      reason: "ErrImagePull",
      message:
        `image "${image}" is not available on the kengine-local node (no local binary maps to it; ` +
        `known: ${imageTable.map(r => r.binary).join(", ")})`,
    };
  }
  if (c.command && c.command.length > 0) {
    const name = basename(c.command[0]);
    if (!commandBinaries.includes(name)) {
      return {
        ok: false,
        reason: "CreateContainerError",
        message: `command "${c.command[0]}" is not available in the local image for "${image}" (can run: ${commandBinaries.join(", ")})`,
      };
    }
    const binary = commandAlias[name] ?? name;
    const standIn = imageTable.find(r => r.binary === binary)?.standIn;
    return {
      ok: true,
      binary,
      args: [...c.command.slice(1), ...(c.args ?? [])],
      ...(standIn ? { standIn } : {}),
    };
  }
  return {
    ok: true,
    binary: rule.binary,
    args: c.args ?? rule.defaultArgs,
    ...(rule.standIn ? { standIn: rule.standIn } : {}),
  };
}
