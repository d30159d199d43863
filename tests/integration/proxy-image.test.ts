/**
 * The local kubelet runs the proxy image by what the image holds: a pod of the default proxy
 * image (capabilities/provision/settings.ts) runs the executable from the image's OCI layout
 * that hack/build-peers.sh wrote (proxy/image), unpacked into the node's image cache, with the
 * image's environment under the pod's; a command the image does not hold cannot start.
 */
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { peersCache } from "../../hack/peers";
import { DEFAULT_PROXY_IMAGE } from "../../capabilities/provision/settings";
import { createNamespace, deleteNamespace, eventually, kubectlOk } from "../support/kube";
import { describeLocalKubelet } from "../support/node";

interface PodJson {
  status: {
    phase?: string;
    containerStatuses?: {
      state: { waiting?: { reason: string; message?: string }; running?: object };
    }[];
  };
}

const pod = (ns: string, name: string): PodJson =>
  JSON.parse(kubectlOk(["get", "pod", "-n", ns, name, "-o", "json"])) as PodJson;

/** Processes whose executable is `exe` and whose environment has `marker`. */
function processesOf(exe: string, marker: string): number[] {
  const found: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readlinkSync(`/proc/${d}/exe`) !== exe) continue;
      if (readFileSync(`/proc/${d}/environ`, "utf8").split("\0").includes(marker))
        found.push(Number(d));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

describeLocalKubelet("the proxy image on the local kubelet", () => {
  let ns: string;
  const cache = peersCache(["image"]);
  const index = JSON.parse(readFileSync(join(cache, "image", "index.json"), "utf8")) as {
    manifests: { digest: string; annotations: Record<string, string> }[];
  };
  const digest = index.manifests[0].digest;
  const rootfs = join(dirname(cache), "rootfs", digest.replace(":", "-"));

  beforeAll(() => {
    ns = createNamespace("proxy-image");
  });
  afterAll(() => deleteNamespace(ns));

  it("the layout names the default proxy image", () => {
    expect(index.manifests.map(m => m.annotations["org.opencontainers.image.ref.name"])).toEqual([
      DEFAULT_PROXY_IMAGE,
    ]);
  });

  it("runs the image's entrypoint and cmd from the unpacked image, with the image's env under the pod's", async () => {
    const marker = `KG_MARK=${randomBytes(6).toString("hex")}`;
    kubectlOk(
      ["apply", "-n", ns, "-f", "-"],
      `
apiVersion: v1
kind: ConfigMap
metadata: {name: bootstrap}
data: {caddy.json: '{"admin": {"disabled": true}}'}
---
apiVersion: v1
kind: Pod
metadata: {name: default-cmd}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: proxy
    image: ${DEFAULT_PROXY_IMAGE}
    env:
    - {name: ${marker.split("=")[0]}, value: "${marker.split("=")[1]}"}
    - {name: XDG_DATA_HOME, value: /pod-wins}
    volumeMounts: [{name: bootstrap, mountPath: /etc/kengine/bootstrap}]
  volumes: [{name: bootstrap, configMap: {name: bootstrap}}]
`,
    );
    await eventually(
      "default-cmd Running",
      () =>
        pod(ns, "default-cmd").status.containerStatuses?.[0]?.state.running ? true : undefined,
      60_000,
    );
    // The process is the image's /usr/bin/caddy, unpacked under the manifest digest.
    const pids = await eventually("the pod's process", () => {
      const p = processesOf(join(rootfs, "usr/bin/caddy"), marker);
      return p.length > 0 ? p : undefined;
    });
    expect(pids).toHaveLength(1);
    const cmdline = readFileSync(`/proc/${pids[0]}/cmdline`, "utf8").split("\0").slice(1, -1);
    expect(cmdline).toEqual(["run", "--config", "/etc/kengine/bootstrap/caddy.json"]);
    const env = readFileSync(`/proc/${pids[0]}/environ`, "utf8").split("\0");
    expect(env).toContain("XDG_CONFIG_HOME=/var/lib/kengine/config"); // the image's
    expect(env).toContain("XDG_DATA_HOME=/pod-wins"); // the pod's wins over the image's
    expect(env).toContain("PATH=/usr/bin");
    const events = kubectlOk([
      "get",
      "events",
      "-n",
      ns,
      "--field-selector",
      "involvedObject.name=default-cmd,reason=Pulled",
      "-o",
      "jsonpath={.items[*].message}",
    ]);
    expect(events).toContain(`(${digest}) runs its /usr/bin/caddy`);
  });

  it("a command the image does not hold (no shell) cannot start", async () => {
    kubectlOk(
      ["apply", "-n", ns, "-f", "-"],
      `
apiVersion: v1
kind: Pod
metadata: {name: wants-a-shell}
spec:
  containers: [{name: proxy, image: ${DEFAULT_PROXY_IMAGE}, command: [sh, -c, "caddy version"]}]
`,
    );
    // ContainerCreating comes first (the kubelet reports it while it prepares the container),
    // as on any node; the error is the state that follows it.
    const waiting = await eventually(
      "wants-a-shell waiting with an error",
      () => {
        const w = pod(ns, "wants-a-shell").status.containerStatuses?.[0]?.state.waiting;
        return w && w.reason !== "ContainerCreating" ? w : undefined;
      },
      60_000,
    );
    expect(waiting).toEqual({
      reason: "CreateContainerError",
      message: 'executable "sh" not found in the image (looked at /usr/bin/sh)',
    });
  });
});
