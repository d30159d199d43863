/**
 * The local cluster's node (hack/node/node.sh: containerd, runc, CNI, the kubelet, kube-proxy,
 * CoreDNS; hack/node/README.md), read from the host.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { localDir } from "./paths";

/** crictl on the node's containerd, from the host. */
export const crictl = (...args: string[]): string => {
  const bin = readFileSync(join(localDir, "node", "bin"), "utf8").trim();
  return execFileSync(
    join(bin, "crictl"),
    [
      // named, or crictl warns on every call that /etc/crictl.yaml does not exist
      "--config",
      join(bin, "crictl.yaml"),
      "--runtime-endpoint",
      `unix://${join(localDir, "node", "containerd.sock")}`,
      ...args,
    ],
    { encoding: "utf8" },
  ).trim();
};

/**
 * The network namespace of the pod with this uid, as a path `nsenter --net=` takes: the pod
 * sandbox's, as containerd reports it.
 */
export function podNetnsPath(uid: string): string {
  const sandbox = crictl("pods", "-q", "--label", `io.kubernetes.pod.uid=${uid}`).split("\n")[0];
  if (!sandbox) throw new Error(`no pod sandbox for pod ${uid}`);
  const info = JSON.parse(crictl("inspectp", sandbox)) as {
    info?: { runtimeSpec?: { linux?: { namespaces?: { type: string; path?: string }[] } } };
  };
  const path = info.info?.runtimeSpec?.linux?.namespaces?.find(n => n.type === "network")?.path;
  if (!path) throw new Error(`pod sandbox ${sandbox} names no network namespace`);
  return path;
}

/** What the kernel applies to a container's main process, read from the host. */
export interface ContainerFacts {
  /** /proc/<pid>/status: Uid and Gid (real, effective, saved, filesystem), capability sets. */
  readonly uid: readonly string[];
  readonly gid: readonly string[];
  readonly capEff: string;
  readonly capBnd: string;
  readonly seccomp: string;
  readonly noNewPrivs: string;
  /** The memory cgroup's limit in bytes (cgroup v1 memory.limit_in_bytes, or v2 memory.max). */
  readonly memoryLimit: string;
  /** Whether a file can be created at the root of the container's filesystem. */
  readonly rootWritable: boolean;
  /** The process, and its environment as the kernel holds it (/proc/<pid>/environ). */
  readonly pid: number;
  readonly env: Readonly<Record<string, string>>;
}

/** The facts of container `name` of the pod with this uid, through CRI and /proc. */
export function containerFacts(podUid: string, name: string): ContainerFacts {
  const id = crictl(
    "ps",
    "-q",
    "--name",
    `^${name}$`,
    "--label",
    `io.kubernetes.pod.uid=${podUid}`,
  );
  if (!id) throw new Error(`no running container ${name} in pod ${podUid}`);
  const pid = crictl(
    "inspect",
    "-o",
    "go-template",
    "--template",
    "{{.info.pid}}",
    id.split("\n")[0],
  );
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (f: string): string => new RegExp(`^${f}:\\s*(.*)$`, "m").exec(status)?.[1] ?? "";
  // cgroup v1 "N:memory:/path", or v2 "0::/path"
  const cgroups = readFileSync(`/proc/${pid}/cgroup`, "utf8").split("\n");
  const v1 = cgroups.find(l => /^\d+:[^:]*\bmemory\b[^:]*:/.test(l));
  const memoryLimit = v1
    ? readFileSync(`/sys/fs/cgroup/memory${v1.split(":")[2]}/memory.limit_in_bytes`, "utf8")
    : readFileSync(
        `/sys/fs/cgroup${cgroups.find(l => l.startsWith("0::"))?.slice(3)}/memory.max`,
        "utf8",
      );
  let rootWritable = true;
  const probe = `/proc/${pid}/root/.kg-write-test-${Date.now()}`;
  try {
    writeFileSync(probe, "x");
    rmSync(probe);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EROFS") throw e;
    rootWritable = false;
  }
  const env = Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, "utf8")
      .split("\0")
      .filter(Boolean)
      .map(kv => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
  );
  return {
    pid: Number(pid),
    env,
    uid: field("Uid").split(/\s+/),
    gid: field("Gid").split(/\s+/),
    capEff: field("CapEff"),
    capBnd: field("CapBnd"),
    seccomp: field("Seccomp"),
    noNewPrivs: field("NoNewPrivs"),
    memoryLimit: memoryLimit.trim(),
    rootWritable,
  };
}

/** Linux capability numbers of the names a securityContext adds (capability(7)). */
const CAPABILITY_BITS: Readonly<Record<string, number>> = {
  CHOWN: 0,
  DAC_OVERRIDE: 1,
  FOWNER: 3,
  KILL: 5,
  SETGID: 6,
  SETUID: 7,
  NET_BIND_SERVICE: 10,
  NET_ADMIN: 12,
  NET_RAW: 13,
  SYS_ADMIN: 21,
};

/** The capability mask (as /proc/<pid>/status prints it) of these capability names. */
export function capabilityMask(names: readonly string[]): string {
  let mask = 0n;
  for (const n of names) {
    const bit = CAPABILITY_BITS[n.replace(/^CAP_/, "")];
    if (bit === undefined) throw new Error(`capability ${n} is not in CAPABILITY_BITS`);
    mask |= 1n << BigInt(bit);
  }
  return mask.toString(16).padStart(16, "0");
}
