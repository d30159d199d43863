/**
 * One Pod on the node: its network namespace and IP, volumes, init and regular containers,
 * and the status it reports. A failure here is reported in the pod's status and never
 * escapes to the kubelet.
 */
import { appendFileSync, existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { Api, ApiError, keyOf } from "./api";
import { containerEnv, referencedObjects } from "./env";
import { resolveContainer } from "./images";
import { fileInImage, imageProcess, OciLayout } from "./oci";
import { apiServiceEnv, ApiService } from "./apiservice";
import { InstalledPepr, mountPointFor, peprControllerProcess } from "./pepr-image";
import type { EventRecorder, EventType } from "./events";
import { Ipam } from "./ipam";
import { preStopPlan } from "./lifecycle";
import type { Logger } from "./log";
import { setupPodNetwork, teardownPodNetwork, podNetNames } from "./network";
import { ContainerRunner, Mount } from "./runtime";
import { ContainerView, podStatus, PodView } from "./status";
import type { ConfigMap, Container, ContainerState, Pod, Secret } from "./types";
import { safeJoin, tokenRequests, volumeFiles, writeVolume } from "./volumes";

export interface PodDeps {
  readonly api: Api;
  readonly log: Logger;
  readonly ipam: Ipam;
  readonly peersBin: string;
  /** Images the node holds (the proxy image's OCI layout): run from what the image holds. */
  readonly images?: OciLayout;
  /** Pepr's controller image: the installed pepr package (see pepr-image.ts). */
  readonly pepr?: InstalledPepr;
  /** The `kubernetes` Service pods reach the API server through (see apiservice.ts). */
  readonly apiService?: ApiService;
  readonly stateDir: string;
  readonly hostIP: string;
  readonly events: EventRecorder;
}

/** How often mounted ConfigMaps/Secrets are refreshed, and ServiceAccount tokens renewed. */
const volumeResyncMs = 10_000;
const tokenRefreshMs = 45 * 60_000;
const retryableReasons = new Set(["CreateContainerConfigError", "ContainerCreating"]);
const now = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

/**
 * A pod this kubelet finds already running (it was restarted) has its containers started
 * again; count that as a restart instead of starting from zero (pure).
 */
export function carriedRestarts(pod: Pod, container: string, init: boolean): number {
  const list = init ? pod.status?.initContainerStatuses : pod.status?.containerStatuses;
  const prev = list?.find(s => s.name === container);
  if (!prev) return 0;
  const ran =
    "running" in prev.state || "terminated" in prev.state || "terminated" in prev.lastState;
  return prev.restartCount + (ran ? 1 : 0);
}

export class PodWorker {
  podIP: string | undefined;
  private readonly runners = new Map<string, ContainerRunner>();
  /** Containers that cannot run, with the waiting state that says why. */
  private readonly blocked = new Map<string, ContainerState>();
  private initDone = false;
  private sandboxReady = false;
  private readonly startTime = now();
  private lastWritten = "";
  private statusTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private quiet = false;
  /** Files written per volume, so a resync can drop keys that went away. */
  private readonly volumePaths = new Map<string, Set<string>>();
  private tokens: { readonly at: number; readonly value: Map<string, string> } | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private writing = Promise.resolve();
  /** The network setup in progress; stop() waits for it so it never leaks a namespace. */
  private sandboxSetup: Promise<void> = Promise.resolve();
  readonly dir: string;
  private readonly carried: {
    readonly init: Map<string, number>;
    readonly regular: Map<string, number>;
  };

  constructor(
    public pod: Pod,
    private readonly deps: PodDeps,
  ) {
    this.dir = join(deps.stateDir, "pods", pod.metadata.uid ?? "unknown");
    // Read before this worker writes its first status over what a previous kubelet reported.
    this.carried = {
      init: new Map(
        (pod.spec.initContainers ?? []).map(c => [c.name, carriedRestarts(pod, c.name, true)]),
      ),
      regular: new Map(pod.spec.containers.map(c => [c.name, carriedRestarts(pod, c.name, false)])),
    };
  }

  get key(): string {
    return keyOf(this.pod);
  }
  get uid(): string {
    return this.pod.metadata.uid ?? "";
  }

  /** The runner of a container, for log serving. */
  runner(name: string): ContainerRunner | undefined {
    return this.runners.get(name);
  }

  /** Why a container that has no process yet is waiting, if it is one of this pod's. */
  waitingReason(container: string): string | undefined {
    const c = this.allContainers().find(x => x.name === container);
    if (!c) return undefined;
    const b = this.blocked.get(container);
    if (b && "waiting" in b) return `${b.waiting.reason}: ${b.waiting.message ?? ""}`;
    return "ContainerCreating";
  }

  logDir(container: string): string {
    return join(this.dir, "logs", container);
  }

  update(pod: Pod): void {
    this.pod = pod;
    this.scheduleStatus();
  }

  async start(): Promise<void> {
    const { log, ipam } = this.deps;
    this.scheduleStatus();
    try {
      mkdirSync(join(this.dir, "scripts"), { recursive: true });
      this.podIP = ipam.allocate(this.uid);
      this.sandboxSetup = setupPodNetwork(this.uid, this.podIP).then(() => undefined);
      await this.sandboxSetup;
      this.sandboxReady = true;
      log.info(`pod ${this.key}: network ${podNetNames(this.uid).netns} ip ${this.podIP}`);
    } catch (e) {
      log.error(`pod ${this.key}: sandbox setup failed: ${String(e)}`);
      for (const c of this.allContainers()) {
        this.blocked.set(c.name, {
          waiting: { reason: "ContainerCreating", message: `sandbox: ${String(e)}` },
        });
      }
      this.scheduleStatus();
      this.retryLater();
      return;
    }
    if (this.stopped) return;
    await this.runAll();
  }

  private allContainers(): Container[] {
    return [...(this.pod.spec.initContainers ?? []), ...this.pod.spec.containers];
  }

  private retryLater(): void {
    if (this.stopped || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (this.stopped) return;
      const wasSandbox = !this.sandboxReady;
      void (wasSandbox ? this.start() : this.runAll());
    }, 5000);
  }

  /** What volumes and env read: referenced ConfigMaps and Secrets, ServiceAccount tokens. */
  private async sources() {
    const [configMaps, secrets, tokens] = await Promise.all([
      this.fetchAll<ConfigMap>("configmaps", referencedObjects(this.pod).configMaps),
      this.fetchAll<Secret>("secrets", referencedObjects(this.pod).secrets),
      this.fetchTokens(),
    ]);
    return { configMaps, secrets, tokens, podIP: this.podIP ?? "", hostIP: this.deps.hostIP };
  }

  /** Writes every volume; returns a message if one cannot be built. */
  private writeVolumes(src: Awaited<ReturnType<PodWorker["sources"]>>): string | undefined {
    for (const v of this.pod.spec.volumes ?? []) {
      const r = volumeFiles(this.pod, v, src);
      if (!r.ok) return r.message;
      try {
        const dir = join(this.dir, "volumes", v.name);
        this.volumePaths.set(v.name, writeVolume(dir, r.files, this.volumePaths.get(v.name)));
      } catch (e) {
        return `volume ${v.name}: ${String(e)}`;
      }
    }
    return undefined;
  }

  /** Like a kubelet's periodic sync: ConfigMap/Secret changes reach mounted volumes. */
  private async resyncVolumes(): Promise<void> {
    if (this.stopped) return;
    try {
      const problem = this.writeVolumes(await this.sources());
      if (problem) this.deps.log.warn(`pod ${this.key}: volume resync: ${problem}`);
    } catch (e) {
      this.deps.log.warn(`pod ${this.key}: volume resync: ${String(e)}`);
    }
  }

  /** Fetches what the pod references, writes volumes, runs init containers then the rest. */
  private async runAll(): Promise<void> {
    const { log } = this.deps;
    let src: Awaited<ReturnType<PodWorker["sources"]>>;
    try {
      src = await this.sources();
    } catch (e) {
      log.warn(`pod ${this.key}: ${String(e)}`);
      this.retryLater();
      return;
    }
    const problem = this.writeVolumes(src);
    if (problem) return this.blockAll("CreateContainerConfigError", problem);
    if (this.stopped) return;
    if (!this.resyncTimer && (this.pod.spec.volumes ?? []).length > 0) {
      this.resyncTimer = setInterval(() => void this.resyncVolumes(), volumeResyncMs);
    }
    if (!this.initDone) {
      for (const c of this.pod.spec.initContainers ?? []) {
        // An init container already started (by an earlier pass) is awaited, not skipped.
        const existing = this.runners.get(c.name);
        const r = existing ?? this.prepare(c, src, true);
        if (!r) return;
        if (!existing) r.start();
        const code = await r.finished;
        if (this.stopped) return;
        if (code !== 0) return; // restartPolicy Never: the pod fails (see status)
      }
      this.initDone = true;
      this.scheduleStatus();
    }
    for (const c of this.pod.spec.containers) {
      if (this.runners.has(c.name) || this.stopped) continue;
      this.prepare(c, src, false)?.start();
    }
  }

  private blockAll(reason: string, message: string): void {
    for (const c of this.allContainers()) {
      if (!this.runners.has(c.name)) this.blocked.set(c.name, { waiting: { reason, message } });
    }
    this.scheduleStatus();
    this.retryLater();
  }

  /** Builds the runner for a container, or records why it cannot run. */
  private prepare(
    c: Container,
    src: { configMaps: Map<string, ConfigMap>; secrets: Map<string, Secret> },
    init: boolean,
  ): ContainerRunner | undefined {
    const block = (reason: string, message: string) => {
      const before = this.blocked.get(c.name);
      if (!before || !("waiting" in before) || before.waiting.message !== message) {
        this.event(c.name, "Warning", "Failed", `Error: ${reason}: ${message}`);
      }
      this.blocked.set(c.name, { waiting: { reason, message } });
      this.scheduleStatus();
      if (retryableReasons.has(reason)) this.retryLater();
      return undefined;
    };
    const held = this.deps.images?.find(c.image ?? "");
    if (held && !held.ok) return block(held.reason, held.message);
    const appDir = join(this.dir, "image", c.name);
    const pepr = peprControllerProcess(c, this.deps.pepr, appDir);
    if (pepr && !pepr.ok) return block(pepr.reason, pepr.message);
    let binaryPath: string;
    let args: readonly string[];
    let imageEnv: Readonly<Record<string, string>> = {};
    let imageMounts: readonly Mount[] = [];
    let pulled: string;
    if (pepr) {
      ({ binaryPath, args, env: imageEnv, mounts: imageMounts } = pepr.value);
      mkdirSync(appDir, { recursive: true });
      pulled = `Container image "${c.image}" runs the installed pepr ${this.deps.pepr?.version} controller with ${binaryPath}`;
    } else if (held) {
      const img = held.value;
      const proc = imageProcess(c, img.config, fileInImage(img.rootfs));
      if (!proc.ok) return block(proc.reason, proc.message);
      binaryPath = join(img.rootfs, proc.value.path);
      args = proc.value.args;
      imageEnv = proc.value.env;
      pulled = `Container image "${c.image}" (${img.digest}) runs its ${proc.value.path}`;
    } else {
      const image = resolveContainer(c);
      if (!image.ok) return block(image.reason, image.message);
      binaryPath = join(this.deps.peersBin, image.binary);
      args = image.args;
      if (!existsSync(binaryPath) && image.standIn) {
        // Run the TypeScript stand-in with this node and its tsx loader flags.
        args = [...process.execArgv, join(__dirname, "standins", `${image.standIn}.ts`), ...args];
        binaryPath = process.execPath;
      }
      if (!existsSync(binaryPath)) {
        return block(
          "CreateContainerError",
          `image "${c.image}" maps to the local binary ${binaryPath}, which is missing (hack/build-peers.sh builds the peers)`,
        );
      }
      pulled = `Container image "${c.image}" runs the local ${image.binary} binary`;
    }
    const env = containerEnv(this.pod, c, {
      ...src,
      podIP: this.podIP ?? "",
      hostIP: this.deps.hostIP,
    });
    if (!env.ok) return block("CreateContainerConfigError", env.message);
    const mounts: Mount[] = [];
    for (const m of imageMounts) {
      this.ensureMountPoint(mountPointFor(m.target, mounts), true);
      mounts.push(m);
    }
    for (const m of c.volumeMounts ?? []) {
      const volDir = join(this.dir, "volumes", m.name);
      if (!existsSync(volDir))
        return block("CreateContainerConfigError", `volume "${m.name}" not found`);
      const source = m.subPath ? safeJoin(volDir, m.subPath) : volDir;
      if (!source)
        return block("CreateContainerConfigError", `subPath "${m.subPath}" escapes the volume`);
      if (!existsSync(source)) mkdirSync(source, { recursive: true });
      this.ensureMountPoint(
        mountPointFor(m.mountPath, imageMounts),
        statSync(source).isDirectory(),
      );
      mounts.push({ source, target: m.mountPath, readOnly: m.readOnly ?? false });
    }
    const home = join(this.dir, "home", c.name);
    mkdirSync(home, { recursive: true });
    this.blocked.delete(c.name);
    this.event(c.name, "Normal", "Pulled", pulled);
    this.event(c.name, "Normal", "Created", `Created container ${c.name}`);
    const runner = new ContainerRunner(
      {
        container: c,
        podName: this.pod.spec.hostname ?? this.pod.metadata.name,
        podKey: this.key,
        podUID: this.uid,
        netnsPath: `/run/netns/${podNetNames(this.uid).netns}`,
        podIP: this.podIP ?? "",
        binaryPath,
        args,
        env: {
          PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
          HOSTNAME: this.pod.metadata.name,
          HOME: home,
          ...(this.deps.apiService ? apiServiceEnv(this.deps.apiService) : {}),
          ...imageEnv,
          ...env.env,
        },
        mounts,
        restartPolicy: this.pod.spec.restartPolicy ?? "Always",
        logDir: this.logDir(c.name),
        scriptDir: join(this.dir, "scripts"),
        init,
        graceMs: (this.pod.spec.terminationGracePeriodSeconds ?? 30) * 1000,
        restartCount: (init ? this.carried.init : this.carried.regular).get(c.name) ?? 0,
        event: (type, reason, message) => this.event(c.name, type, reason, message),
      },
      () => this.scheduleStatus(),
      this.deps.log,
    );
    this.runners.set(c.name, runner);
    return runner;
  }

  /**
   * Bind mounts need their target to exist. A missing one is created on the host file system
   * (the mount itself stays private) and recorded so cleanup.sh removes it.
   */
  private ensureMountPoint(target: string, isDir: boolean): void {
    if (existsSync(target)) return;
    let top = target;
    while (!existsSync(dirname(top))) top = dirname(top);
    appendFileSync(join(this.deps.stateDir, "created-paths"), top + "\n");
    if (isDir) mkdirSync(target, { recursive: true });
    else {
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, "");
    }
  }

  private event(
    container: string | undefined,
    type: EventType,
    reason: string,
    message: string,
  ): void {
    this.deps.events.record(this.pod.metadata, container, type, reason, message);
  }

  private async fetchAll<T>(kind: string, names: Set<string>): Promise<Map<string, T>> {
    const out = new Map<string, T>();
    for (const name of names) {
      try {
        out.set(
          name,
          await this.deps.api.get<T>(
            `/api/v1/namespaces/${this.pod.metadata.namespace}/${kind}/${name}`,
          ),
        );
      } catch (e) {
        if (!(e instanceof ApiError && (e.status === 404 || e.status === 403))) throw e;
      }
    }
    return out;
  }

  private async fetchTokens(): Promise<Map<string, string>> {
    if (this.tokens && Date.now() - this.tokens.at < tokenRefreshMs) return this.tokens.value;
    const out = new Map<string, string>();
    const sa = this.pod.spec.serviceAccountName ?? "default";
    for (const t of tokenRequests(this.pod)) {
      try {
        const r = await this.deps.api.post<{ status: { token: string } }>(
          `/api/v1/namespaces/${this.pod.metadata.namespace}/serviceaccounts/${sa}/token`,
          {
            apiVersion: "authentication.k8s.io/v1",
            kind: "TokenRequest",
            spec: {
              ...(t.audience ? { audiences: [t.audience] } : {}),
              expirationSeconds: t.expirationSeconds,
              boundObjectRef: {
                apiVersion: "v1",
                kind: "Pod",
                name: this.pod.metadata.name,
                uid: this.uid,
              },
            },
          },
        );
        out.set(t.key, r.status.token);
      } catch (e) {
        this.deps.log.warn(`pod ${this.key}: service account token: ${String(e)} (left out)`);
      }
    }
    this.tokens = { at: Date.now(), value: out };
    return out;
  }

  private view(c: Container, init: boolean): ContainerView {
    const r = this.runners.get(c.name);
    const image = c.image ?? "";
    if (r) {
      const finishedForGood = "terminated" in r.state;
      return {
        name: c.name,
        image,
        state: r.state,
        lastState: r.lastState,
        restartCount: r.restartCount,
        ready: r.ready,
        started: r.started,
        finished: finishedForGood && !this.willRestart(r, init),
      };
    }
    const state =
      this.blocked.get(c.name) ??
      ({
        waiting: {
          reason:
            init || this.initDone || !this.pod.spec.initContainers?.length
              ? "ContainerCreating"
              : "PodInitializing",
        },
      } as const);
    return {
      name: c.name,
      image,
      state,
      lastState: {},
      restartCount: 0,
      ready: false,
      started: false,
      finished: false,
    };
  }

  private willRestart(r: ContainerRunner, init: boolean): boolean {
    if (!("terminated" in r.state)) return true;
    if (init && r.state.terminated.exitCode === 0) return false;
    const policy = this.pod.spec.restartPolicy ?? "Always";
    if (this.stopped) return false;
    return policy === "Always" || (policy === "OnFailure" && r.state.terminated.exitCode !== 0);
  }

  statusView(): PodView {
    return {
      podIP: this.podIP,
      hostIP: this.deps.hostIP,
      startTime: this.startTime,
      sandboxReady: this.sandboxReady,
      initDone: this.initDone || !this.pod.spec.initContainers?.length,
      init: (this.pod.spec.initContainers ?? []).map(c => this.view(c, true)),
      containers: this.pod.spec.containers.map(c => this.view(c, false)),
      uid: this.uid,
    };
  }

  scheduleStatus(): void {
    if (this.statusTimer) return;
    this.statusTimer = setTimeout(() => {
      this.statusTimer = undefined;
      this.writing = this.writing.then(() => this.writeStatus());
    }, 100);
  }

  private async writeStatus(): Promise<void> {
    if (this.quiet) return;
    const status = podStatus(this.pod, this.statusView(), now());
    const json = JSON.stringify(status);
    if (json === this.lastWritten) return;
    try {
      await this.deps.api.patch(
        `/api/v1/namespaces/${this.pod.metadata.namespace}/pods/${this.pod.metadata.name}/status`,
        { metadata: { uid: this.uid }, status },
      );
      this.lastWritten = json;
    } catch (e) {
      if (e instanceof ApiError && (e.status === 404 || e.status === 409)) return;
      this.deps.log.warn(`pod ${this.key}: status update: ${String(e)}`);
      setTimeout(() => this.scheduleStatus(), 1000);
    }
  }

  /**
   * Stops every container (SIGTERM, SIGKILL after graceMs), then removes the sandbox.
   * `quiet` (kubelet shutdown) writes no status: the pod is not over, the next kubelet runs it.
   * `preStop` (the pod was deleted): each running container's preStop hook first, inside the
   * grace period (lifecycle.ts), while the container still serves.
   */
  async stop(graceMs: number, quiet = false, preStop = false): Promise<void> {
    this.stopped = true;
    if (quiet) this.quiet = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    await this.sandboxSetup.catch(() => undefined);
    for (const r of this.runners.values()) {
      if (r.running) this.event(r.name, "Normal", "Killing", `Stopping container ${r.name}`);
    }
    await Promise.all(
      [...this.runners.values()].map(async r => {
        const container = this.pod.spec.containers.find(c => c.name === r.name);
        const plan =
          preStop && r.running && container
            ? preStopPlan(container, graceMs)
            : { sleepMs: 0, graceAfterMs: graceMs };
        if (plan.skipped) this.deps.log.warn(`pod ${this.key}: ${r.name}: ${plan.skipped}`);
        if (plan.sleepMs > 0) await new Promise(res => setTimeout(res, plan.sleepMs));
        await r.stop(plan.graceAfterMs);
      }),
    );
    await teardownPodNetwork(this.uid).catch(e =>
      this.deps.log.warn(`pod ${this.key}: ${String(e)}`),
    );
    this.sandboxReady = false;
  }

  /** Writes the final status right away (used before deleting the pod object). */
  async flushStatus(): Promise<void> {
    if (this.statusTimer) {
      clearTimeout(this.statusTimer);
      this.statusTimer = undefined;
    }
    await this.writing;
    await this.writeStatus();
  }
}
