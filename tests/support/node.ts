import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { podNetNames } from "../../hack/kubelet/network";
import { localDir } from "./paths";

/**
 * Which node the local cluster runs: hack/kubelet (the default) or the real node
 * (`KENGINE_NODE=real`: containerd, runc, the real kubelet; hack/node/README.md).
 */
export const onRealNode = process.env.KENGINE_NODE === "real";

/**
 * `describe` for suites that test hack/kubelet itself (its processes, bridge, image cache and
 * messages): skipped on the real node, which has none of them; the real node has its own suite
 * (tests/node).
 */
export const describeLocalKubelet: jest.Describe = onRealNode ? describe.skip : describe;

/** crictl on the real node's containerd, from the host. */
export const crictl = (...args: string[]): string =>
  execFileSync(
    join(readFileSync(join(localDir, "node", "bin"), "utf8").trim(), "crictl"),
    ["--runtime-endpoint", `unix://${join(localDir, "node", "containerd.sock")}`, ...args],
    { encoding: "utf8" },
  ).trim();

/**
 * The network namespace of the pod with this uid, as a path `nsenter --net=` takes: the one
 * hack/kubelet made (`ip netns` name kg-<hash>), or on the real node the pod sandbox's, as
 * containerd reports it.
 */
export function podNetnsPath(uid: string): string {
  if (!onRealNode) return `/run/netns/${podNetNames(uid).netns}`;
  const sandbox = crictl("pods", "-q", "--label", `io.kubernetes.pod.uid=${uid}`).split("\n")[0];
  if (!sandbox) throw new Error(`no pod sandbox for pod ${uid}`);
  const info = JSON.parse(crictl("inspectp", sandbox)) as {
    info?: { runtimeSpec?: { linux?: { namespaces?: { type: string; path?: string }[] } } };
  };
  const path = info.info?.runtimeSpec?.linux?.namespaces?.find(n => n.type === "network")?.path;
  if (!path) throw new Error(`pod sandbox ${sandbox} names no network namespace`);
  return path;
}
