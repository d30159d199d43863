/**
 * Writes each Gateway's last-good Secret (last-good.ts decides when) off the build path: the
 * reconciler hands over configs its proxies accepted and returns at once; writes run one at a
 * time per Gateway, rate-limited, leader only. The Secret's bytes are never logged.
 */
import { GatewayRef, lastGoodSecret } from "../workload";
import type { KubeClient } from "../kube/client";
import { statusOf } from "../kube/client";
import { fleetMetrics } from "../metrics/fleet";
import type { SealedConfig } from "../caddy";

import { objectPath } from "../snapshot/kinds";
import {
  DEFAULT_LAST_GOOD_POLICY,
  LastGoodPolicy,
  LastGoodTrack,
  StoredLastGood,
  decideLastGood,
} from "./last-good";

export const LAST_GOOD_FIELD_MANAGER = "kengine-gateway-last-good";

export interface LastGoodWriterOptions {
  readonly kube: KubeClient;
  readonly isLeader: () => boolean;
  readonly log: {
    info(message: string, meta?: Record<string, unknown>): void;
    warn(message: string, meta?: Record<string, unknown>): void;
  };
  readonly policy?: LastGoodPolicy;
  /** A config too large to store (the reconciler records an Event on the Gateway). */
  readonly onTooLarge?: (gateway: GatewayRef, bytes: number, maxBytes: number) => void;
}

interface GatewayEntry {
  ref: GatewayRef;
  track: LastGoodTrack;
  /** What the snapshot last said the Secret holds. */
  seen: StoredLastGood | undefined;
  /** The newest accepted config not yet written (or waiting for the interval). */
  pending: { readonly key: string; readonly config: SealedConfig } | undefined;
  timer: NodeJS.Timeout | undefined;
  writing: boolean;
}

const sameStored = (a: StoredLastGood | undefined, b: StoredLastGood | undefined): boolean =>
  a?.hash === b?.hash && a?.key === b?.key && a?.stored === b?.stored;

const keyOf = (ref: Pick<GatewayRef, "namespace" | "name">) => `${ref.namespace}/${ref.name}`;

export class LastGoodWriter {
  readonly #entries = new Map<string, GatewayEntry>();
  readonly #policy: LastGoodPolicy;
  #closed = false;

  constructor(private readonly o: LastGoodWriterOptions) {
    this.#policy = o.policy ?? DEFAULT_LAST_GOOD_POLICY;
  }

  /**
   * The managed Gateways of the latest build, with what their Secret holds in the snapshot.
   * A change seen there (the Secret deleted, or written by another replica) becomes the truth;
   * until then this replica's own last write is (the watch brings it back a little later).
   * Gateways not named are forgotten.
   */
  observe(
    gateways: readonly { readonly ref: GatewayRef; readonly stored: StoredLastGood | undefined }[],
  ): void {
    const keep = new Set<string>();
    for (const { ref, stored } of gateways) {
      const key = keyOf(ref);
      keep.add(key);
      const entry = this.#entries.get(key);
      if (entry) {
        entry.ref = ref;
        if (!sameStored(entry.seen, stored)) {
          entry.seen = stored;
          if (!entry.writing) entry.track = { ...entry.track, stored };
        }
      } else
        this.#entries.set(key, {
          ref,
          track: { stored },
          seen: stored,
          pending: undefined,
          timer: undefined,
          writing: false,
        });
    }
    for (const [key, entry] of this.#entries)
      if (!keep.has(key)) {
        if (entry.timer) clearTimeout(entry.timer);
        this.#entries.delete(key);
      }
  }

  /** A proxy of `gateway` accepted `config` (made for the proxy build `key`). Never blocks. */
  accepted(gateway: string, key: string, config: SealedConfig): void {
    const entry = this.#entries.get(gateway);
    if (!entry || this.#closed) return;
    entry.pending = { key, config };
    this.#step(entry);
  }

  /** Forgets everything pending (lost leadership, stop); writes in flight finish. */
  clear(): void {
    for (const entry of this.#entries.values()) {
      if (entry.timer) clearTimeout(entry.timer);
      entry.timer = undefined;
      entry.pending = undefined;
    }
  }

  close(): void {
    this.#closed = true;
    this.clear();
    this.#entries.clear();
  }

  /** Resolves once no write is in flight (tests). */
  async idle(): Promise<void> {
    while ([...this.#entries.values()].some(e => e.writing))
      await new Promise(r => setTimeout(r, 10));
  }

  #step(entry: GatewayEntry): void {
    const pending = entry.pending;
    if (!pending || entry.writing || this.#closed) return;
    const decision = decideLastGood(
      entry.track,
      {
        hash: pending.config.hash,
        key: pending.key,
        bytes: pending.config.size ?? pending.config.bytes.length,
      },
      Date.now(),
      this.#policy,
    );
    if (decision.action === "none") {
      entry.pending = undefined;
      return;
    }
    if (decision.action === "wait") {
      if (!entry.timer) {
        entry.timer = setTimeout(
          () => {
            entry.timer = undefined;
            this.#step(entry);
          },
          Math.max(0, decision.until - Date.now()),
        );
        entry.timer.unref();
      }
      return;
    }
    entry.pending = undefined;
    entry.writing = true;
    void this.#write(entry, pending, decision.store).finally(() => {
      entry.writing = false;
      this.#step(entry); // a newer config accepted meanwhile
    });
  }

  async #write(
    entry: GatewayEntry,
    pending: NonNullable<GatewayEntry["pending"]>,
    store: boolean,
  ): Promise<void> {
    if (!this.o.isLeader()) return;
    const { ref } = entry;
    const gateway = keyOf(ref);
    const { hash, bytes } = pending.config;
    const manifest = lastGoodSecret(ref, {
      key: pending.key,
      hash,
      ...(store ? { config: bytes } : {}),
    });
    const path = objectPath("v1", "Secret", ref.namespace, manifest.metadata.name);
    try {
      await this.o.kube.request(
        "PATCH",
        `${path}?fieldManager=${LAST_GOOD_FIELD_MANAGER}&force=true`,
        manifest,
        "application/apply-patch+yaml",
      );
      entry.track = { stored: { hash, key: pending.key, stored: store }, writtenAt: Date.now() };
      fleetMetrics.lastGood(gateway, store ? "stored" : "too_large");
      if (store)
        this.o.log.info("stored the last accepted config", {
          gateway,
          hash: hash.slice(0, 12),
          bytes: bytes.length,
        });
      else {
        this.o.log.warn(
          "the accepted config is too large for the last-good Secret: new proxy pods start from the bootstrap config until the controller programs them",
          { gateway, hash: hash.slice(0, 12), bytes: bytes.length, limit: this.#policy.maxBytes },
        );
        this.o.onTooLarge?.(ref, bytes.length, this.#policy.maxBytes);
      }
    } catch (e) {
      // The API server's reason only: an error body could quote what was sent.
      entry.track = { ...entry.track, writtenAt: Date.now() };
      entry.pending ??= pending; // retried after the interval
      fleetMetrics.lastGood(gateway, "failed");
      this.o.log.warn("cannot write the last-good Secret", {
        gateway,
        status: statusOf(e),
        reason: (() => {
          try {
            return (JSON.parse((e as { body?: string }).body ?? "") as { reason?: string }).reason;
          } catch {
            return undefined;
          }
        })(),
      });
    }
  }
}
