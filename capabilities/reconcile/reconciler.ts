/**
 * The controller's loop, as a plain class the Pepr capability starts: lifecycle (start, resync
 * timers, stop), leadership hooks and the wiring of the stages. The informer lists and watches
 * into the snapshot; relevant bursts are batched; each build runs the stages in order: build
 * (translate, plan), push, provisioning, status, the admin CA's step (docs/architecture.md §6).
 * Only the elected leader provisions, pushes and writes; followers keep their snapshot warm.
 */
import { LeaderElector } from "../election";
import { ingestMetrics, startupMetrics } from "../metrics";
import { AdminChannels, AdminClient, Fleet, ProxyState } from "../proxies";
import { DEFAULT_PROXY_SETTINGS } from "../provision";
import { Batcher, KINDS, Kind, KubeObject, Snapshot } from "../snapshot";
import { kubeStatusApi } from "../status";
import { IngressReportStage } from "./ingress-report-stage";
import { AdminCa } from "../pki/admin-ca";
import { ProvisionQueue } from "./provision-queue";
import { KengineProxyWrites, StatusQueue } from "./status-queue";
import { DEFAULT_RETRY, StartError, retrying } from "./list";
import { EventRecorder, lastGoodTooLarge } from "./events";
import { BuildLoop } from "./dirty-set";
import { BuildTimings } from "./build-timings";
import { Informer, startupRetryDeps } from "./informer";
import { leaderElector } from "./leadership";
import { BuildStage } from "./build-stage";
import { PushStage, managedFleetCurrent } from "./push-stage";
import { StatusStage, readBundleVersion } from "./status-stage";
import { TrafficStage } from "./traffic-stage";
import { LastGoodWriter } from "./last-good-writer";
import { DEFAULT_LAST_GOOD_POLICY } from "./last-good";
import { Isolation } from "./isolation";

export { CONTROLLER_NAME } from "../ownership";
export { StartError } from "./list";
import { AcmeManager } from "../acme/manager";

export type { Logger } from "./logger";
export type { ReconcilerOptions } from "./options";
import { TRAFFIC_INTERVAL_MS, type ReconcilerOptions } from "./options";

export class Reconciler {
  // The stages, in the order a build runs them (docs/architecture.md §6).
  /** Informer stage: lists and watches into the snapshot and the dirty set (informer.ts). */
  readonly #informer: Informer;
  /** Build stage: translation and plans (build-stage.ts). */
  readonly #builder: BuildStage;
  /** Push stage: configs to the fleet, and the fleet's events (push-stage.ts). */
  readonly #pusher: PushStage;
  /** Provisioning stage: each Gateway's objects applied off the build path (provision-queue.ts). */
  readonly #provision: ProvisionQueue;
  /** Status stage: Programmed decided by the fleet, status writes queued (status-stage.ts). */
  readonly #status: StatusStage;
  /** Status and KengineProxy writes off the build path (status-queue.ts). */
  readonly #statusQueue: StatusQueue;
  readonly #proxyWrites: KengineProxyWrites;
  /** Traffic stage: the proxies' own /metrics summed per Gateway and route (traffic-stage.ts). */
  readonly #traffic: TrafficStage;

  // What the stages share: the admin CA and channels, the fleet, isolation, Events, last good.
  /** The admin CA: signing, trust, this replica's client certificate, rotation (pki/). */
  readonly #ca: AdminCa;
  #admin: AdminChannels | undefined;
  #fleet: Fleet | undefined;
  /** Objects the proxies refuse, left out of their Gateway's config (isolation.ts). */
  readonly #isolation: Isolation;
  readonly #events: EventRecorder;
  /** Ingress Events and status.loadBalancer, after the status stage (ingress-report-stage.ts). */
  readonly #ingressReport: IngressReportStage;
  /** Stores each Gateway's last accepted config (last-good.ts), off the build path. */
  readonly #lastGood: LastGoodWriter;
  /** Automatic HTTPS: the leader's ACME orders (acme/manager.ts). */
  readonly #acme: AcmeManager;
  /** The installed Gateway API CRDs' bundle-version (undefined: could not be read). */
  #bundleVersion: string | undefined;

  // Lifecycle and scheduling.
  /** Builds one at a time, requests coalesced (dirty-set.ts). */
  readonly #loop: BuildLoop;
  readonly #batcher: Batcher;
  readonly #elector: LeaderElector;
  /** Per-phase timings of the builds (metrics and one debug line per build). */
  readonly #timings = new BuildTimings();
  readonly #sleep: (ms: number) => Promise<void>;
  #timers: NodeJS.Timeout[] = [];
  #stopped = false;
  #stopping: Promise<void> | undefined;

  constructor(private readonly o: ReconcilerOptions) {
    this.#sleep = o.sleep ?? (ms => new Promise(r => setTimeout(r, ms)));
    this.#loop = new BuildLoop(
      // a build's end is activity: events queued behind it are a burst, not a lone change
      () => this.#build().finally(() => this.#batcher.activity()),
      e =>
        o.log.error("build failed", {
          error: e instanceof Error ? (e.stack ?? e.message) : String(e),
        }),
    );
    this.#batcher = new Batcher(() => this.requestBuild());
    this.#informer = new Informer({
      kube: o.kube,
      log: o.log,
      watch: o.watch,
      watchSilenceMs: o.watchSilenceMs,
      retry: o.startupRetry ?? DEFAULT_RETRY,
      sleep: this.#sleep,
      stopped: () => this.#stopped,
      notify: change => this.#batcher.notify(change),
      requestBuild: () => this.requestBuild(),
      timings: this.#timings,
    });
    this.#provision = new ProvisionQueue({
      kube: o.kube,
      log: o.log,
      snapshot: () => this.#current(),
      isLeader: () => this.#elector.isLeader(),
      slowMs: o.provisionWaitMs,
      onSpace: () => this.requestBuild(),
    });
    this.#statusQueue = new StatusQueue(o.log);
    this.#ca = new AdminCa({
      kube: o.kube,
      namespace: o.namespace,
      identity: o.identity,
      log: o.log,
      graceMs: o.caRotationGraceMs,
      onCredentials: c => this.#admin?.replaceOwn(new AdminClient(c)),
      onChange: () => this.requestBuild(),
    });
    this.#proxyWrites = new KengineProxyWrites({
      kube: o.kube,
      log: o.log,
      fleet: () => this.#fleet,
      admin: () => this.#admin,
      recheck: () => this.requestBuild(),
    });
    this.#isolation = new Isolation({
      // A Gateway's config as it would be pushed now without `refused` (build-stage.ts).
      configOf: (gateway, refused) => {
        const signing = this.#ca.signing;
        const ca = signing && { signing, trusted: this.#ca.trusted };
        return ca && this.#builder.configOf(this.#current(), ca, gateway, refused);
      },
      validate: (endpoint, config) =>
        this.#admin
          ? this.#admin.validate(endpoint, config)
          : Promise.resolve({ ok: false, error: { kind: "connect", message: "stopped" } }),
      onChange: () => {
        this.#informer.markAll();
        this.requestBuild();
      },
      log: (message, meta) => o.log.info(message, meta),
    });
    this.#builder = new BuildStage({
      defaults: o.defaults ?? DEFAULT_PROXY_SETTINGS,
      namespace: o.namespace,
      log: o.log,
      isolation: this.#isolation,
    });
    this.#acme = new AcmeManager({ kube: o.kube, log: o.log, namespace: o.namespace, ...o.acme });
    this.#events = new EventRecorder({
      kube: o.kube,
      instance: o.identity,
      onError: e => o.log.debug("cannot write Event", { error: String(e) }),
    });
    this.#lastGood = new LastGoodWriter({
      kube: o.kube,
      isLeader: () => this.#elector.isLeader(),
      log: o.log,
      ...(o.lastGoodIntervalMs !== undefined
        ? { policy: { ...DEFAULT_LAST_GOOD_POLICY, intervalMs: o.lastGoodIntervalMs } }
        : {}),
      onTooLarge: (gw, bytes, max) => this.#events.record(gw, lastGoodTooLarge(bytes, max)),
    });
    this.#traffic = new TrafficStage(o.log);
    this.#pusher = new PushStage({
      log: o.log,
      lastGood: this.#lastGood,
      timings: this.#timings,
      isolation: this.#isolation,
      events: this.#events,
      onFleetEvent: o.onFleetEvent,
      notify: () => this.#batcher.notify(),
    });
    this.#elector = leaderElector(o, {
      lead: () => {
        this.#provision.newTerm(); // re-apply and rewrite everything we own
        this.#proxyWrites.forget();
        this.#ingressReport.newTerm();
        this.requestBuild();
      },
      follow: () => {
        this.#fleet?.update([]);
        this.#provision.clear();
        this.#statusQueue.clear();
        this.#lastGood.clear();
        this.#acme.stop();
      },
    });
    this.#ingressReport = new IngressReportStage({
      kube: o.kube,
      isLeader: () => this.#elector.isLeader(),
      events: this.#events,
      staticAddresses: o.ingressStatusAddresses,
      log: o.log,
    });
    this.#status = new StatusStage({
      api: kubeStatusApi(o.kube),
      isLeader: () => this.#elector.isLeader(),
      log: o.log,
      queue: this.#statusQueue,
      proxyWrites: this.#proxyWrites,
    });
  }

  get snapshot(): Snapshot {
    return this.#current();
  }

  /** The snapshot with every event ingested so far. */
  #current(): Snapshot {
    return this.#informer.current();
  }

  isLeader(): boolean {
    return this.#elector.isLeader();
  }

  proxyStates(): ReadonlyMap<string, ProxyState> {
    return this.#fleet?.states() ?? new Map();
  }

  /** A Watch event (or an initial-list item): into the snapshot (informer.ts). */
  ingest(kind: Kind, type: "upsert" | "delete", object: KubeObject): void {
    this.#informer.ingest(kind, type, object);
  }

  /** Sizes of what ingest remembers besides the snapshot (tests: churn leaves nothing behind). */
  get ingestState(): { readonly remembered: number; readonly reading: number } {
    return this.#informer.state;
  }

  /**
   * Starts the election at once (it runs while the caches fill: a restarted replica is leader
   * by the time its snapshot is whole), lists every kind once (each list one batch into the
   * snapshot, then that kind's watch from the list's resourceVersion; all listed = "synced"),
   * then pushing and building. Start-up requests are retried while their failure can pass
   * (list.ts); a kind the API server does not serve (its CRD is not installed) counts as empty
   * and is reported. Rejects with a StartError when start-up cannot succeed (the Lease is
   * released first): the caller exits the process.
   */
  async start(): Promise<void> {
    this.#elector.start();
    try {
      await this.#start();
    } catch (e) {
      await this.#elector.stop();
      throw e;
    }
  }

  async #start(): Promise<void> {
    const startedAt = performance.now();
    startupMetrics.state("starting");
    const retry = this.o.startupRetry ?? DEFAULT_RETRY;
    const deps = startupRetryDeps(this.o.log, this.#sleep, () => this.#stopped);
    const authority = await retrying("admin CA", () => this.#ca.load(), retry, deps);
    if (this.#stopped) return;
    if (!authority.ok) throw StartError.of("admin CA", authority);
    this.#bundleVersion = await readBundleVersion(this.o.kube, this.o.log);
    await this.#informer.start(retry, deps);
    if (this.#stopped) return;
    const own = this.#ca.issue();
    this.#admin = new AdminChannels(new AdminClient(own));
    this.#fleet = new Fleet({
      client: this.#admin,
      onEvent: e => this.#pusher.observe(e, this.#elector.isLeader()),
      adoptRunning: true,
      // an ex-leader never pushes: asked again right before every POST /load
      mayPush: () => this.#elector.isLeader(),
    });
    this.#fleet.start(this.o.verifyIntervalMs ?? 10_000);
    this.o.log.info(
      "snapshot synced",
      Object.fromEntries(KINDS.map(k => [k, this.#current().objects[k].size])),
    );
    startupMetrics.state("synced");
    ingestMetrics.firstSnapshot((performance.now() - startedAt) / 1000);
    this.#every(this.o.resyncIntervalMs ?? 60_000, () => {
      void this.#ca.refresh();
      void this.#informer.relistMissing(retry, deps);
      this.renewClientCertificate();
      this.#provision.reapplyAll();
      this.requestBuild();
    });
    const trafficEvery = this.o.trafficIntervalMs ?? TRAFFIC_INTERVAL_MS;
    if (trafficEvery > 0) this.#every(trafficEvery, () => void this.collectTraffic());
    this.requestBuild();
  }

  /** Runs `fn` every `ms` until stopped (the timer keeps no process alive). */
  #every(ms: number, fn: () => void): void {
    const timer = setInterval(fn, ms);
    timer.unref();
    this.#timers.push(timer);
  }

  /** Kinds the API server does not serve (their CRD is not installed): empty and synced. */
  get missingKinds(): readonly Kind[] {
    return this.#informer.missingKinds;
  }

  /**
   * Reads every proxy's own /metrics over the admin channel and adds its new traffic to the
   * per-Gateway, per-route totals (leader only: followers have no proxies). Never throws; an
   * unreachable proxy is read next time.
   */
  async collectTraffic(): Promise<void> {
    const admin = this.#admin;
    if (!admin) return;
    await this.#traffic.collect({
      admin,
      snapshot: this.#current(),
      leader: this.#elector.isLeader(),
    });
  }

  /** Renews the admin channel's client certificate if it is due (pki/admin-ca.ts). */
  renewClientCertificate(now = new Date()): boolean {
    return this.#admin !== undefined && this.#ca.renewIfDue(now);
  }

  /** Stops everything once; later calls wait for the same stop (closing twice would throw). */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    this.#stopped = true;
    this.#batcher.cancel();
    for (const t of this.#timers) clearInterval(t);
    this.#proxyWrites.stop();
    this.#ca.stop();
    await this.#isolation.stop();
    await this.#informer.stop();
    await this.#loop.stop();
    this.#provision.clear();
    this.#statusQueue.clear();
    await Promise.all([this.#provision.idle(), this.#statusQueue.idle()]);
    this.#status.close();
    await this.#elector.stop();
    this.#fleet?.close();
    this.#lastGood.close();
    this.#acme.stop();
    await this.#admin?.close();
  }

  /** Runs a build now, or once more after the one in progress. */
  requestBuild(): void {
    if (this.#stopped) return;
    this.#loop.request();
  }

  /** Resolves when no build runs or is queued and the provisioning and status queues are empty. */
  async idle(): Promise<void> {
    for (;;) {
      while (this.#loop.running || this.#batcher.pending)
        await (this.#loop.running ?? new Promise(r => setTimeout(r, 20)));
      await Promise.all([this.#provision.idle(), this.#statusQueue.idle(), this.#informer.idle()]);
      if (!this.#loop.running && !this.#batcher.pending && this.#informer.reading === 0) return;
    }
  }

  /** Resolves when the Events recorded so far are written. */
  eventsFlushed(): Promise<void> {
    return this.#events.flushed();
  }

  async #build(): Promise<void> {
    const fleet = this.#fleet;
    if (!this.#ca.signing || !fleet) return;
    const input = this.#informer.take();
    if (!input) return;
    const snapshot = input.snapshot;
    const leader = this.#elector.isLeader();
    const caRead = this.#ca.read;
    const run = this.#timings.begin();
    const now = new Date();
    // Build stage: snapshot → translation → plans (build-stage.ts).
    const built = this.#builder.run({
      snapshot,
      translate: input.translate,
      ca: { signing: this.#ca.signing, trusted: this.#ca.trusted },
      now,
      translated: () => run.mark("translate"),
    });
    const { plans, statuses, planFailures, entries } = built;
    const counts = { ...built.counts, pushed: 0 };
    // A build ended: its phase times into the metrics, and one debug line.
    const ended = () => this.o.log.debug("build", { ...run.end(counts), entries });
    this.#informer.planned(built.secrets);
    this.#admin?.setChannels(new Map(built.channels));
    run.mark("render");
    if (!leader) return ended();
    // The derived snapshot: an Ingress's automatic HTTPS names are ordered too (docs/ingress.md).
    this.#acme.update(built.derived, now);
    // Push stage: plans → the fleet (push-stage.ts).
    const pushed = this.#pusher.push({ plans, snapshot, fleet, receivedAt: run.receivedAt });
    counts.pushed = pushed.pushed;
    this.#traffic.follow(pushed.traffic);
    run.mark("push");
    // Provisioning stage: each Gateway's objects applied in their own queue (provision-queue.ts).
    for (const p of plans) this.#provision.offer(p);
    // An IngressClass's fleet no class wants any more is deleted (retired-fleets.ts).
    for (const r of built.retiredFleets)
      this.#provision.offer({ key: r.key, manifests: [], stale: r.stale });
    run.mark("provision");
    // Status stage: Programmed and addresses decided by the fleet, writes queued (status-stage.ts).
    const decided = this.#status.run({
      plans,
      statuses,
      planFailures,
      snapshot,
      fleet,
      bundleVersion: this.#bundleVersion,
      missingKinds: this.missingKinds,
      now,
    });
    this.#ingressReport.run(snapshot, built, decided.addresses);
    run.mark("status");
    // The admin CA's rotation steps on once every managed proxy runs a config made under it.
    if (caRead && caRead === this.#ca.read) {
      const { current, proxies } = managedFleetCurrent(plans, fleet);
      await this.#ca.step(caRead, current, proxies);
    }
    ended();
  }
}
