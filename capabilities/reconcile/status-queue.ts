/**
 * Status stage: the build computes what every object's status should say and hands the writes
 * to this queue; it does not wait for them. Two lanes, each a slot where the latest hand-over
 * wins (keyed-queue.ts): "objects" (Gateway API status, through status/writer.ts, which keeps
 * its own per-object rate limits and conflict retries) and "proxies" (KengineProxy objects).
 * A lane writes one hand-over at a time; one handed over meanwhile replaces the one waiting, so
 * the last state is always written and a burst of builds costs one more write, not one each.
 */
import { KubeClient } from "../kube/client";
import { AdminChannels, Fleet } from "../proxies";
import { Clock, systemClock } from "../snapshot";
import { KeyedQueue } from "./keyed-queue";
import type { Logger } from "./logger";
import type { GatewayPlan } from "./plan";
import {
  KENGINE_PROXY_API,
  ProxyRecord,
  ProxyStatusTrack,
  decideProxyStatusWrite,
  kengineProxyObject,
  kengineProxyStatus,
  writtenTrack,
} from "./proxy-status";

const FIELD_MANAGER = "kengine-gateway";

export type StatusLane = "objects" | "proxies";

export class StatusQueue {
  readonly #queue: KeyedQueue<() => Promise<void>>;

  constructor(log: Pick<Logger, "error">) {
    this.#queue = new KeyedQueue<() => Promise<void>>({
      concurrency: 2,
      limit: 2,
      run: (_lane, write) => write(),
      onError: (lane, e) =>
        log.error("status write failed", {
          lane,
          error: e instanceof Error ? (e.stack ?? e.message) : String(e),
        }),
    });
  }

  /** Hands a lane's writes over (replacing those waiting in that lane). */
  offer(lane: StatusLane, write: () => Promise<void>): void {
    this.#queue.offer(lane, write);
  }

  /** Drops the writes waiting (leadership lost, stopping); running ones finish. */
  clear(): void {
    this.#queue.clear();
  }

  /** Resolves once nothing waits or is being written. */
  idle(): Promise<void> {
    return this.#queue.idle();
  }
}

export interface KengineProxyWritesOptions {
  readonly kube: Pick<KubeClient, "request">;
  readonly log: Pick<Logger, "debug">;
  readonly fleet: () => Pick<Fleet, "state"> | undefined;
  readonly admin: () => Pick<AdminChannels, "peerCertificate"> | undefined;
  /** Comes back for changes held back (a build writes them). */
  readonly recheck: () => void;
  readonly clock?: Clock;
}

/**
 * KengineProxy objects: created once per pod (owned by it); status written at once on the
 * transitions a user must see, and routine changes once they settle (proxy-status.ts), so the
 * requests do not grow with proxies × config changes. A timer brings the build back for
 * changes held back.
 */
export class KengineProxyWrites {
  /** Last KengineProxy object written and its status track (proxy-status.ts), by "namespace/pod". */
  readonly #written = new Map<string, { object: string; track?: ProxyStatusTrack }>();
  /** A build that writes KengineProxy status changes held back until they settle. */
  #recheck: { at: number; timer: unknown } | undefined;
  #stopped = false;

  constructor(private readonly o: KengineProxyWritesOptions) {}

  /** A new leader term: every object and status is written again. */
  forget(): void {
    this.#written.clear();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#recheck) (this.o.clock ?? systemClock).clearTimeout(this.#recheck.timer);
    this.#recheck = undefined;
  }

  async write(
    plans: readonly Pick<GatewayPlan, "key" | "proxies" | "targets">[],
    now: Date,
  ): Promise<void> {
    const seen = new Set<string>();
    let recheckAt = Infinity;
    await Promise.all(
      plans.flatMap(plan =>
        plan.proxies.map(async p => {
          const [namespace, gateway] = plan.key.split("/") as [string, string];
          seen.add(p.name);
          const target = plan.targets.find(t => t.endpoint.name === p.name);
          const state = this.o.fleet()?.state(p.name);
          const record: ProxyRecord = {
            namespace,
            gateway,
            pod: p.pod,
            podUid: p.uid,
            address: p.address,
            state,
            serverCertificateNotAfter: target
              ? this.o.admin()?.peerCertificate(target.endpoint)?.notAfter
              : undefined,
          };
          const base = `/apis/${KENGINE_PROXY_API}/namespaces/${encodeURIComponent(namespace)}/kengineproxies/${encodeURIComponent(p.pod)}`;
          const written = this.#written.get(p.name);
          const object = kengineProxyObject(record);
          const objectJson = JSON.stringify(object);
          try {
            if (written?.object !== objectJson) {
              await this.o.kube.request(
                "PATCH",
                `${base}?fieldManager=${FIELD_MANAGER}&force=true`,
                object,
                "application/apply-patch+yaml",
              );
              this.#written.set(p.name, { object: objectJson, track: written?.track });
            }
            const status = kengineProxyStatus(record, written?.track?.written, now);
            const rolling = state?.phase === "Pending" && state.applied !== undefined;
            const { decision, track } = decideProxyStatusWrite(
              written?.track,
              status,
              rolling,
              now.getTime(),
            );
            this.#written.set(p.name, { object: objectJson, track });
            if (!decision.write) {
              if (decision.recheckAt !== undefined)
                recheckAt = Math.min(recheckAt, decision.recheckAt);
              return;
            }
            await this.o.kube.request(
              "PATCH",
              `${base}/status`,
              { status },
              "application/merge-patch+json",
            );
            this.#written.set(p.name, {
              object: objectJson,
              track: writtenTrack(track, status),
            });
          } catch (e) {
            this.#written.delete(p.name);
            this.o.log.debug("cannot write KengineProxy", {
              proxy: p.name,
              error: e instanceof Error ? e.message : String(e),
            });
          }
        }),
      ),
    );
    for (const name of [...this.#written.keys()]) if (!seen.has(name)) this.#written.delete(name);
    this.#schedule(recheckAt);
  }

  /** One timer for the earliest held-back KengineProxy change; it requests a build. */
  #schedule(at: number): void {
    const clock = this.o.clock ?? systemClock;
    if (this.#recheck && this.#recheck.at <= at) return;
    if (this.#recheck) clock.clearTimeout(this.#recheck.timer);
    this.#recheck = undefined;
    if (at === Infinity || this.#stopped) return;
    const timer = clock.setTimeout(
      () => {
        this.#recheck = undefined;
        this.o.recheck();
      },
      Math.max(0, at - clock.now()) + 50,
    );
    (timer as { unref?: () => void }).unref?.();
    this.#recheck = { at, timer };
  }
}
