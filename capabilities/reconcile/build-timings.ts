/**
 * Per-phase timings of the controller's builds: from a watched change's
 * arrival through the snapshot, translation, rendering, provisioning and the push, to the
 * proxy's acknowledgement and the status writes. Observed as metrics (metrics/build.ts) and
 * returned per build for one debug log line. The clock is injected (tests use a manual one).
 */
import { BUILD_PHASES, BuildObserver, BuildPhase, buildMetrics } from "../metrics/build";

/** Milliseconds on a monotonic clock. */
export type Clock = () => number;

/** What one build redid: Gateways translated, reused unchanged, rendered, proxies pushed. */
export interface BuildCounts {
  readonly translated: number;
  readonly reused: number;
  readonly rendered: number;
  readonly pushed: number;
}

/** One build as logged: each phase's milliseconds, the changes it took in, what it redid. */
export interface BuildRecord extends BuildCounts {
  readonly ms: Readonly<Partial<Record<BuildPhase, number>>>;
  readonly totalMs: number;
  /** Watched changes since the previous build started. */
  readonly changes: number;
}

/** The changes a build took in: when the first arrived, how many, time spent ingesting them. */
interface Intake {
  readonly firstAt: number | undefined;
  readonly count: number;
  readonly snapshotMs: number;
}

/** A config handed to a proxy and not yet acknowledged. */
interface Sent {
  readonly hash: string;
  readonly sentAt: number;
  /** Shared by the proxies of one build: propagation is observed once, at the first answer. */
  readonly origin: { readonly receivedAt: number | undefined; acknowledged: boolean };
}

const round = (ms: number) => Math.round(ms * 100) / 100;

export class BuildTimings {
  #intake: { firstAt: number | undefined; count: number; snapshotMs: number } = {
    firstAt: undefined,
    count: 0,
    snapshotMs: 0,
  };
  readonly #sent = new Map<string, Sent>();
  readonly #lastHash = new Map<string, string>();

  constructor(
    private readonly clock: Clock = () => performance.now(),
    private readonly observer: BuildObserver = buildMetrics,
  ) {}

  now(): number {
    return this.clock();
  }

  /** A watched change arrived at `at` and took `snapshotMs` to apply to the snapshot. */
  received(at: number, snapshotMs: number): void {
    this.#intake.firstAt ??= at;
    this.#intake.count++;
    this.#intake.snapshotMs += snapshotMs;
  }

  /** A build starts: it takes in every change received so far. */
  begin(): BuildRun {
    const intake: Intake = this.#intake;
    this.#intake = { firstAt: undefined, count: 0, snapshotMs: 0 };
    return new BuildRun(this, intake);
  }

  /**
   * Remembers the configs handed to proxies (`targets`: proxy name and config hash); returns
   * how many differ from what each was handed before (the push engine sends those).
   */
  sent(targets: readonly { name: string; hash: string }[], receivedAt: number | undefined): number {
    const at = this.clock();
    const origin = { receivedAt, acknowledged: false };
    let pushed = 0;
    const current = new Set<string>();
    for (const t of targets) {
      current.add(t.name);
      if (this.#lastHash.get(t.name) === t.hash) continue;
      pushed++;
      this.#lastHash.set(t.name, t.hash);
      this.#sent.set(t.name, { hash: t.hash, sentAt: at, origin });
    }
    for (const name of [...this.#lastHash.keys()])
      if (!current.has(name)) {
        this.#lastHash.delete(name);
        this.#sent.delete(name);
      }
    return pushed;
  }

  /** A proxy answered that it runs `hash`: the push's round trip and, once per build, propagation. */
  acknowledged(proxy: string, hash: string): void {
    const sent = this.#sent.get(proxy);
    if (!sent || sent.hash !== hash) return;
    this.#sent.delete(proxy);
    const at = this.clock();
    this.observer.phase("acknowledged", (at - sent.sentAt) / 1000);
    if (sent.origin.acknowledged || sent.origin.receivedAt === undefined) return;
    sent.origin.acknowledged = true;
    this.observer.propagation((at - sent.origin.receivedAt) / 1000);
  }

  /** @internal */ observe(phase: BuildPhase, ms: number): void {
    this.observer.phase(phase, ms / 1000);
  }

  /** @internal */ stages(counts: BuildCounts): void {
    this.observer.stage("translated", counts.translated);
    this.observer.stage("reused", counts.reused);
    this.observer.stage("rendered", counts.rendered);
    this.observer.stage("pushed", counts.pushed);
  }
}

/** One build in progress: `mark(phase)` closes the phase that ran since the previous mark. */
export class BuildRun {
  readonly #ms: Partial<Record<BuildPhase, number>> = {};
  readonly #started: number;
  #last: number;

  constructor(
    private readonly timings: BuildTimings,
    private readonly intake: Intake,
  ) {
    this.#started = this.#last = timings.now();
    if (intake.count > 0) {
      this.#ms.queued = this.#started - (intake.firstAt ?? this.#started);
      this.#ms.snapshot = intake.snapshotMs;
    }
  }

  /** When the first change this build took in arrived (undefined: a build of no change). */
  get receivedAt(): number | undefined {
    return this.intake.firstAt;
  }

  mark(phase: BuildPhase): void {
    const at = this.timings.now();
    this.#ms[phase] = (this.#ms[phase] ?? 0) + (at - this.#last);
    this.#last = at;
  }

  /** The build ended (early ones too): observes its phases and returns its log record. */
  end(counts: BuildCounts): BuildRecord {
    const ms: Partial<Record<BuildPhase, number>> = {};
    for (const phase of BUILD_PHASES) {
      const v = this.#ms[phase];
      if (v === undefined) continue;
      this.timings.observe(phase, v);
      ms[phase] = round(v);
    }
    this.timings.stages(counts);
    return {
      ms,
      totalMs: round(this.timings.now() - this.#started),
      changes: this.intake.count,
      ...counts,
    };
  }
}
