/**
 * Ingress `status.loadBalancer` (docs/ingress.md): the addresses of the proxies serving each
 * Ingress of our classes (the serving Gateway's addresses, which come from its proxies'
 * Service: status/programmed.ts serviceAddresses), or the static list configured, which wins.
 * Written only while leading, conditional on the object's version, in passes of at most
 * `batch` writes at least `intervalMs` apart: new Ingresses as they arrive, every Ingress of
 * the class after an address change. Nothing is written when no address is known, so status
 * is never cleared (not on shutdown, not on loss of leadership); an Ingress that leaves the
 * class is no longer in the input and is not touched.
 *
 * Each pass reads the newest input (the snapshot's Ingresses, echoes of our writes included),
 * so a replica that becomes leader while addresses change writes every Ingress whose stored
 * addresses are not the current ones, whatever the previous leader managed to write.
 */
import type { V1Ingress, V1IngressLoadBalancerIngress } from "@kubernetes/client-node";
import { Addresses, needsWrite, normalise, staticAddresses } from "../ingress/load-balancer";
import type { Clock } from "../snapshot";
import type { GatewayAddress } from "../status";
import type { Logger } from "./logger";

export const DEFAULT_INGRESS_STATUS_BATCH = 50;
export const DEFAULT_INGRESS_STATUS_INTERVAL_MS = 1_000;

export interface IngressStatusDeps {
  readonly isLeader: () => boolean;
  /** Merge-patches `status` of one Ingress, conditional on `resourceVersion` when given. */
  readonly patch: (
    namespace: string,
    name: string,
    resourceVersion: string | undefined,
    status: { loadBalancer: { ingress: Addresses } },
  ) => Promise<void>;
  readonly clock: Pick<Clock, "now" | "setTimeout">;
  /** Static addresses (IPs or host names): when non-empty, published instead of the Service's. */
  readonly staticAddresses?: readonly string[];
  readonly batch?: number;
  readonly intervalMs?: number;
  readonly log?: Pick<Logger, "warn" | "debug">;
}

export interface IngressStatusInput {
  /** The Ingresses of our classes, each with the `namespace/name` of the Gateway serving it. */
  readonly ingresses: readonly { readonly ingress: V1Ingress; readonly gateway: string }[];
  /** Each serving Gateway's addresses (status-stage.ts). */
  readonly addresses: ReadonlyMap<string, readonly GatewayAddress[]>;
}

const keyOf = (i: V1Ingress): string => `${i.metadata?.namespace}/${i.metadata?.name}`;

/** A Gateway's addresses as Ingress load-balancer entries. */
export function fromGatewayAddresses(addresses: readonly GatewayAddress[]): Addresses {
  return normalise(
    addresses.map(
      (a): V1IngressLoadBalancerIngress =>
        a.type === "Hostname" ? { hostname: a.value } : { ip: a.value },
    ),
  );
}

export class IngressStatus {
  #input: IngressStatusInput | undefined;
  /** What this replica wrote, by Ingress: skipped while the object is still the one written. */
  readonly #written = new Map<string, { readonly rv: string | undefined; readonly json: string }>();
  #timer = false;
  #running: Promise<void> | undefined;
  #lastPass = -Infinity;
  readonly #fixed: Addresses;

  constructor(private readonly d: IngressStatusDeps) {
    this.#fixed = staticAddresses(d.staticAddresses ?? []);
  }

  /** The newest Ingresses and addresses: a pass is scheduled if one is needed. */
  update(input: IngressStatusInput): void {
    this.#input = input;
    const present = new Set(input.ingresses.map(i => keyOf(i.ingress)));
    for (const k of [...this.#written.keys()]) if (!present.has(k)) this.#written.delete(k);
    if (this.d.isLeader() && this.#due().length > 0) this.#schedule();
  }

  /** Resolves when no pass is running (one may still be scheduled). */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  /** Every write still needed, in namespace/name order. */
  #due(): { ingress: V1Ingress; want: Addresses }[] {
    const input = this.#input;
    if (!input) return [];
    return input.ingresses
      .flatMap(({ ingress, gateway }) => {
        const want =
          this.#fixed.length > 0
            ? this.#fixed
            : fromGatewayAddresses(input.addresses.get(gateway) ?? []);
        if (!ingress.metadata?.name || !ingress.metadata.namespace) return [];
        if (!needsWrite(ingress, want)) return [];
        const mine = this.#written.get(keyOf(ingress));
        // Written by us and the echo has not come back yet.
        if (
          mine &&
          mine.rv === ingress.metadata.resourceVersion &&
          mine.json === JSON.stringify(want)
        )
          return [];
        return [{ ingress, want }];
      })
      .sort((a, b) => keyOf(a.ingress).localeCompare(keyOf(b.ingress), "en"));
  }

  #schedule(): void {
    if (this.#timer || this.#running) return;
    this.#timer = true;
    const interval = this.d.intervalMs ?? DEFAULT_INGRESS_STATUS_INTERVAL_MS;
    const wait = Math.max(0, this.#lastPass + interval - this.d.clock.now());
    this.d.clock.setTimeout(() => {
      this.#timer = false;
      this.#running = this.#pass().finally(() => {
        this.#running = undefined;
        if (this.d.isLeader() && this.#due().length > 0) this.#schedule();
      });
    }, wait);
  }

  async #pass(): Promise<void> {
    this.#lastPass = this.d.clock.now();
    const batch = this.#due().slice(0, this.d.batch ?? DEFAULT_INGRESS_STATUS_BATCH);
    for (const { ingress, want } of batch) {
      // Leadership can move during a pass: a follower writes nothing more.
      if (!this.d.isLeader()) return;
      const { namespace, name, resourceVersion } = ingress.metadata!;
      try {
        await this.d.patch(namespace!, name!, resourceVersion, {
          loadBalancer: { ingress: want },
        });
        this.#written.set(keyOf(ingress), { rv: resourceVersion, json: JSON.stringify(want) });
      } catch (error) {
        // A conflict means a newer object is on its way: its event brings a new input.
        if ((error as { status?: number }).status !== 409)
          this.d.log?.warn("Ingress status write failed", {
            ingress: keyOf(ingress),
            error: error instanceof Error ? error.message : String(error),
          });
      }
    }
  }
}

/** KENGINE_INGRESS_STATUS_ADDRESSES: comma-separated IPs or host names (docs/ingress.md). */
export function ingressStatusAddressesFromEnv(env: NodeJS.ProcessEnv): string[] {
  return (env.KENGINE_INGRESS_STATUS_ADDRESSES ?? "")
    .split(",")
    .map(s => s.trim())
    .filter(s => s !== "");
}
