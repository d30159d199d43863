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
