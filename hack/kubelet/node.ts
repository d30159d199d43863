/** Registers the Node, keeps its Lease renewed and its status (Ready, addresses) fresh. */
import { cpus, totalmem, hostname, release } from "node:os";
import { Api, ApiError, sleep } from "./api";
import type { Logger } from "./log";

export const kubeletVersion = "v1.36.3";
const leaseDurationSeconds = 40;
const leaseRenewMs = 10_000;
const statusEveryMs = 20_000;

export interface NodeConfig {
  readonly name: string;
  readonly internalIP: string;
  readonly port: number;
  readonly podCIDR: string;
  readonly maxPods: number;
}

/** The Node object the kubelet creates (pure). */
export function nodeObject(cfg: NodeConfig) {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: cfg.name,
      labels: {
        "kubernetes.io/hostname": cfg.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": process.arch === "x64" ? "amd64" : process.arch,
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": process.arch === "x64" ? "amd64" : process.arch,
      },
    },
    spec: { podCIDR: cfg.podCIDR, podCIDRs: [cfg.podCIDR] },
  };
}

/** The Node status the kubelet reports (pure apart from the clock it is given). */
export function nodeStatus(cfg: NodeConfig, now: string, readySince: string) {
  const resources = {
    cpu: String(cpus().length),
    memory: `${Math.floor(totalmem() / 1024)}Ki`,
    pods: String(cfg.maxPods),
    "ephemeral-storage": "100Gi",
  };
  const cond = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: now,
    lastTransitionTime: readySince,
  });
  return {
    capacity: resources,
    allocatable: resources,
    addresses: [
      { type: "InternalIP", address: cfg.internalIP },
      { type: "Hostname", address: cfg.name },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: cfg.port } },
    nodeInfo: {
      machineID: "",
      systemUUID: "",
      bootID: "",
      kernelVersion: release(),
      osImage: `kengine-local on ${hostname()}`,
      containerRuntimeVersion: "kengine-local://processes",
      kubeletVersion,
      kubeProxyVersion: "",
      operatingSystem: "linux",
      architecture: process.arch === "x64" ? "amd64" : process.arch,
    },
    conditions: [
      cond(
        "MemoryPressure",
        "False",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
      ),
      cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
      cond(
        "PIDPressure",
        "False",
        "KubeletHasSufficientPID",
        "kubelet has sufficient PID available",
      ),
      cond("Ready", "True", "KubeletReady", "kengine-local kubelet is posting ready status"),
    ],
  };
}

export class NodeAgent {
  private stopped = false;
  private uid = "";
  private readonly readySince = new Date().toISOString();

  constructor(
    private readonly api: Api,
    private readonly cfg: NodeConfig,
    private readonly log: Logger,
  ) {}

  /** Creates the Node (or adopts an existing one) and posts a first Ready status. */
  async register(): Promise<void> {
    for (;;) {
      try {
        try {
          const n = await this.api.post<{ metadata: { uid: string } }>(
            "/api/v1/nodes",
            nodeObject(this.cfg),
          );
          this.uid = n.metadata.uid;
          this.log.info(`registered node ${this.cfg.name}`);
        } catch (e) {
          if (!(e instanceof ApiError && e.status === 409)) throw e;
          const n = await this.api.get<{ metadata: { uid: string } }>(
            `/api/v1/nodes/${this.cfg.name}`,
          );
          this.uid = n.metadata.uid;
          this.log.info(`node ${this.cfg.name} already exists; adopting it`);
        }
        await this.postStatus();
        await this.renewLease();
        return;
      } catch (e) {
        this.log.warn(`node registration failed: ${String(e)}; retrying`);
        await sleep(1000);
      }
    }
  }

  /** Runs the heartbeat loops until stop(). */
  run(): void {
    void this.every(leaseRenewMs, () => this.renewLease());
    void this.every(statusEveryMs, () => this.postStatus());
  }

  stop(): void {
    this.stopped = true;
  }

  /**
   * Reports the node NotReady as the kubelet goes away, so a later `cluster.sh up` waits for
   * the next kubelet's fresh Ready instead of seeing this one's.
   */
  async markNotReady(): Promise<void> {
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    await this.api.patch(
      `/api/v1/nodes/${this.cfg.name}/status`,
      {
        status: {
          conditions: [
            {
              type: "Ready",
              status: "False",
              reason: "KubeletNotReady",
              message: "kengine-local kubelet stopped",
              lastHeartbeatTime: now,
              lastTransitionTime: now,
            },
          ],
        },
      },
      "strategic",
    );
  }

  private async every(ms: number, fn: () => Promise<void>): Promise<void> {
    while (!this.stopped) {
      await sleep(ms);
      try {
        await fn();
      } catch (e) {
        this.log.warn(`node heartbeat: ${String(e)}`);
      }
    }
  }

  private async postStatus(): Promise<void> {
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    await this.api.patch(
      `/api/v1/nodes/${this.cfg.name}/status`,
      { status: nodeStatus(this.cfg, now, this.readySince.replace(/\.\d+Z$/, "Z")) },
      "strategic",
    );
  }

  private async renewLease(): Promise<void> {
    const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${this.cfg.name}`;
    const renewTime = new Date().toISOString().replace("Z", "000Z");
    try {
      await this.api.patch(path, { spec: { renewTime, holderIdentity: this.cfg.name } });
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 404)) throw e;
      await this.api.post("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: {
          name: this.cfg.name,
          namespace: "kube-node-lease",
          ownerReferences: [{ apiVersion: "v1", kind: "Node", name: this.cfg.name, uid: this.uid }],
        },
        spec: { holderIdentity: this.cfg.name, leaseDurationSeconds, renewTime },
      });
    }
  }
}
