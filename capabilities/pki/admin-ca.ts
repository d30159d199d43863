/**
 * The controller's admin CA as one object the reconciler calls: it loads (or creates) the CA
 * Secret, issues and renews this replica's client certificate, re-reads the Secret when another
 * replica or a user changed it, and takes the next rotation step (rotation.ts) once the caller
 * says every managed proxy runs the current step's config. New credentials go to
 * `onCredentials`; a change that wants a build (a step taken, a rotation asked for) to `onChange`.
 */
import { X509Certificate } from "node:crypto";
import { KubeClient } from "../kube/client";
import { pkiMetrics } from "../metrics";
import { clientCredentials, ensureAuthority } from "./authority";
import { Authority, ClientCredentials, renewalDue } from "./pki";
import {
  CaRead,
  CaStore,
  DEFAULT_ROTATION_GRACE_MS,
  caStep,
  newAuthority,
  rotationStep,
  trustedCaPems,
} from "./rotation";

/** What the CA writes to the log. */
export interface CaLog {
  info(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
}

export interface AdminCaOptions {
  readonly kube: KubeClient;
  /** The controller's namespace: the CA Secret lives here. */
  readonly namespace: string;
  /** This replica's name, in its client certificate's common name. */
  readonly identity: string;
  readonly log: CaLog;
  /** How long each rotation step waits after the fleet caught up (rotation.ts). */
  readonly graceMs?: number;
  /** New client credentials for the admin channel (after `issue()` was called once). */
  readonly onCredentials: (credentials: ClientCredentials) => void;
  /** The CA state changed in a way a build must follow. */
  readonly onChange: () => void;
}

export class AdminCa {
  #signing: Authority | undefined;
  #store: CaStore | undefined;
  #read: CaRead | undefined;
  /** Every CA the proxies and this controller trust now (the signing one; two while rotating). */
  #trusted: readonly string[] = [];
  /** This replica's current client certificate (PEM); undefined until `issue()`. */
  #clientCertificate: string | undefined;
  #stepTimer: NodeJS.Timeout | undefined;

  constructor(private readonly o: AdminCaOptions) {}

  /** The CA that signs now (undefined before `load()`). */
  get signing(): Authority | undefined {
    return this.#signing;
  }

  /** The PEMs of every CA trusted now. */
  get trusted(): readonly string[] {
    return this.#trusted;
  }

  /** The rotation state as last read or written (a build passes it back to `step`). */
  get read(): CaRead | undefined {
    return this.#read;
  }

  /** Reads the CA Secret, creating it if missing; returns the signing CA. */
  async load(): Promise<Authority> {
    await ensureAuthority(this.o.kube, this.o.namespace);
    this.#store = new CaStore(this.o.kube, this.o.namespace);
    this.#use(await this.#store.read());
    return this.#signing!;
  }

  /** Issues this replica's client credentials from the signing CA (and renews them from now on). */
  issue(now?: Date): ClientCredentials {
    const own = clientCredentials(this.#signing!, this.o.identity, now, this.#trusted);
    this.#clientCertificate = own.certificatePem;
    return own;
  }

  /**
   * Issues a new client certificate once two thirds of the current one's lifetime have passed.
   * The proxies trust the CA, not the certificate, so the switch needs no push and drops no
   * request. Returns whether it renewed.
   */
  renewIfDue(now = new Date()): boolean {
    if (!this.#signing || !this.#clientCertificate) return false;
    const cert = new X509Certificate(this.#clientCertificate);
    if (!renewalDue({ notBefore: new Date(cert.validFrom), notAfter: new Date(cert.validTo) }, now))
      return false;
    const next = clientCredentials(this.#signing, this.o.identity, now, this.#trusted);
    this.#clientCertificate = next.certificatePem;
    this.o.onCredentials(next);
    this.o.log.info("renewed the admin channel's client certificate", {
      notAfter: new X509Certificate(next.certificatePem).validTo,
    });
    return true;
  }

  /** Re-reads the CA Secret (a rotation asked for, or stepped by another replica). */
  async refresh(): Promise<void> {
    try {
      const read = await this.#store?.read();
      if (!read) return;
      const before = this.#read;
      this.#use(read);
      if (read.requested !== before?.requested || read.state.since !== before?.state.since)
        this.o.onChange();
    } catch (e) {
      this.o.log.warn("cannot read the admin CA", { error: String(e) });
    }
  }

  /**
   * Takes the next rotation step from `read` (the state the build's configs were made under)
   * if `fleetCurrent` (every managed proxy runs them) and the grace period passed. Leader only;
   * the state is written to the CA Secret conditionally, so two replicas cannot both step.
   * `proxies` is only logged.
   */
  async step(read: CaRead, fleetCurrent: boolean, proxies: number): Promise<void> {
    if (!this.#store) return;
    const graceMs = this.o.graceMs ?? DEFAULT_ROTATION_GRACE_MS;
    const now = Date.now();
    const next = rotationStep(read.state, {
      requested: read.requested,
      fleetCurrent,
      now,
      graceMs,
      newAuthority,
    });
    if (!next) {
      if (fleetCurrent && caStep(read.state) !== "Stable" && !this.#stepTimer) {
        // nothing else may happen before the grace period ends: come back then
        this.#stepTimer = setTimeout(
          () => {
            this.#stepTimer = undefined;
            this.o.onChange();
          },
          Math.max(0, read.state.since + graceMs - now) + 50,
        );
        this.#stepTimer.unref();
      }
      return;
    }
    try {
      if (!(await this.#store.write(next, read.resourceVersion))) {
        await this.refresh(); // someone else changed it: carry on from what is stored
        return;
      }
      this.#use(await this.#store.read());
      this.o.log.info("admin CA rotation", { step: caStep(next), proxies });
      this.o.onChange();
    } catch (e) {
      this.o.log.warn("cannot write the admin CA's rotation step", { error: String(e) });
    }
  }

  stop(): void {
    if (this.#stepTimer) clearTimeout(this.#stepTimer);
  }

  /** Uses a CA state: signing CA, trusted CAs, and new credentials from it if they changed. */
  #use(read: CaRead): void {
    const before = this.#read?.state;
    this.#read = read;
    const s = read.state;
    const trusted = trustedCaPems(s);
    const changed =
      !before ||
      before.signing.certificatePem !== s.signing.certificatePem ||
      trustedCaPems(before).join("") !== trusted.join("");
    this.#signing = s.signing;
    this.#trusted = trusted;
    pkiMetrics.caExpiry(new Date(new X509Certificate(s.signing.certificatePem).validTo));
    if (!changed || !this.#clientCertificate) return;
    const next = clientCredentials(s.signing, this.o.identity, new Date(), trusted);
    this.#clientCertificate = next.certificatePem;
    this.o.onCredentials(next);
  }
}
