/**
 * Rotating the controller's admin CA without a failed admin request. The proxies trust CAs for
 * client certificates (the management listener's `trusted_ca_certs`, in every pushed config and
 * in the bootstrap ConfigMap) and the controller trusts CAs for the proxies' serving
 * certificates, so the CA changes in three steps, each taken only once every managed proxy runs
 * the config of the step before (and a grace period let kubelets refresh the mounted bootstrap
 * ConfigMap and serving Secret, which a restarting pod reads):
 *
 *   Stable        signs with A, trusts A
 *   Introducing   signs with A, trusts A and B   (B made; every proxy learns to trust it)
 *   Switching     signs with B, trusts A and B   (new client and serving certificates from B)
 *   Stable        signs with B, trusts B         (A dropped)
 *
 * A rotation starts when the CA has lived two thirds of its life, or when someone annotates its
 * Secret with `gateway.kengine.io/rotate-ca` (any value). The state lives in the CA Secret, so a
 * new leader carries on where the last one stopped. Pure but for `CaStore` (the Secret's I/O).
 */
import { KubeClient, statusOf } from "../kube/client";
import {
  Authority,
  CA_LIFETIME_DAYS,
  CLOCK_SKEW_MS,
  createAuthority,
  generateKeyPair,
  loadAuthority,
  renewalDue,
} from "./pki";
import { err, ok, Result } from "../result";
import { CA_SECRET_NAME } from "./authority";

export { CA_SECRET_NAME };
/** Annotation a user sets on the CA Secret to ask for a rotation now. */
export const ROTATE_CA_ANNOTATION = "gateway.kengine.io/rotate-ca";
/** When the current rotation step began (RFC 3339). */
export const CA_STEP_SINCE_ANNOTATION = "gateway.kengine.io/ca-step-since";
/** Default time between steps, for kubelets to refresh mounted ConfigMaps and Secrets. */
export const DEFAULT_ROTATION_GRACE_MS = 120_000;

export interface CaState {
  /** Signs the controller's client certificates and the managed proxies' serving certificates. */
  readonly signing: Authority;
  /** Introducing: the next CA, trusted but not signing yet. */
  readonly next?: Authority;
  /** Switching: the previous CA's certificate, still trusted. */
  readonly previous?: string;
  /** Epoch ms when the current step began. */
  readonly since: number;
}

export type CaStep = "Stable" | "Introducing" | "Switching";

export const caStep = (s: CaState): CaStep =>
  s.next ? "Introducing" : s.previous ? "Switching" : "Stable";

/** Every CA certificate the proxies and the controller must trust now (PEM, stable order). */
export function trustedCaPems(s: CaState): readonly string[] {
  return [s.previous, s.signing.certificatePem, s.next?.certificatePem].filter(
    (p): p is string => p !== undefined,
  );
}

export interface StepInput {
  /** A user asked for a rotation (the annotation is on the Secret). */
  readonly requested: boolean;
  /** Every managed proxy runs the config made under the current state. */
  readonly fleetCurrent: boolean;
  readonly now: number;
  readonly graceMs: number;
  /** Makes the next CA (injected: tests fix it). */
  readonly newAuthority: (now: number) => Authority;
}

/** The next state, or undefined when the current one stays. */
export function rotationStep(s: CaState, input: StepInput): CaState | undefined {
  const { now } = input;
  const settled = input.fleetCurrent && now - s.since >= input.graceMs;
  switch (caStep(s)) {
    case "Stable":
      return input.requested ||
        renewalDue({ notBefore: s.signing.notBefore, notAfter: s.signing.notAfter }, new Date(now))
        ? { signing: s.signing, next: input.newAuthority(now), since: now }
        : undefined;
    case "Introducing":
      return settled
        ? { signing: s.next!, previous: s.signing.certificatePem, since: now }
        : undefined;
    case "Switching":
      return settled ? { signing: s.signing, since: now } : undefined;
  }
}

/** A new CA, valid from a little before `now` (clock skew) for CA_LIFETIME_DAYS. */
export function newAuthority(now: number): Authority {
  const created = createAuthority({
    commonName: `kengine-gateway admin CA ${new Date(now).toISOString().slice(0, 10)}`,
    keys: generateKeyPair(),
    notBefore: new Date(now - CLOCK_SKEW_MS),
    lifetimeDays: CA_LIFETIME_DAYS,
  });
  if (!created.ok) throw new Error(`cannot create the admin CA: ${created.error}`);
  return created.value;
}

export interface CaSecret {
  readonly metadata: {
    readonly resourceVersion?: string;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  readonly data?: Readonly<Record<string, string>>;
}

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
const unb64 = (s: string | undefined) =>
  s === undefined ? undefined : Buffer.from(s, "base64").toString("utf8");

/** The state stored in the CA Secret; names the Secret and the key in every problem. */
export function decodeCaSecret(secret: CaSecret, where: string): Result<CaState> {
  const data = secret.data ?? {};
  const pair = (crt: string, key: string): Result<Authority | undefined> => {
    const [c, k] = [unb64(data[crt]), unb64(data[key])];
    if (c === undefined && k === undefined) return ok(undefined);
    if (c === undefined || k === undefined)
      return err(
        `Secret ${where} has ${c === undefined ? key : crt} without ${c === undefined ? crt : key}`,
      );
    const loaded = loadAuthority(c, k);
    return loaded.ok ? ok(loaded.value) : err(`Secret ${where} ${crt}: ${loaded.error}`);
  };
  const signing = pair("tls.crt", "tls.key");
  if (!signing.ok) return signing;
  if (!signing.value) return err(`Secret ${where} lacks tls.crt and tls.key`);
  const next = pair("next.crt", "next.key");
  if (!next.ok) return next;
  const previous = unb64(data["previous.crt"]);
  if (next.value && previous)
    return err(`Secret ${where} has both next.crt and previous.crt (one rotation step at a time)`);
  const sinceText = secret.metadata.annotations?.[CA_STEP_SINCE_ANNOTATION];
  const since = sinceText ? Date.parse(sinceText) : 0;
  return ok({
    signing: signing.value,
    ...(next.value ? { next: next.value } : {}),
    ...(previous ? { previous } : {}),
    since: Number.isFinite(since) ? since : 0,
  });
}

/** The Secret's data and our annotation for a state (the rotation request is cleared). */
export function encodeCaSecret(s: CaState): {
  data: Record<string, string>;
  since: string;
} {
  return {
    data: {
      "tls.crt": b64(s.signing.certificatePem),
      "tls.key": b64(s.signing.privateKey.reveal()),
      ...(s.next
        ? {
            "next.crt": b64(s.next.certificatePem),
            "next.key": b64(s.next.privateKey.reveal()),
          }
        : {}),
      ...(s.previous ? { "previous.crt": b64(s.previous) } : {}),
    },
    since: new Date(s.since).toISOString(),
  };
}

/** What one read of the CA Secret says. */
export interface CaRead {
  readonly state: CaState;
  /** A user asked for a rotation (the annotation is on the Secret). */
  readonly requested: boolean;
  /** The version a write must be conditional on. */
  readonly resourceVersion?: string;
}

/** The CA Secret's I/O: read it, and replace it only if nobody changed it meanwhile. */
export class CaStore {
  constructor(
    private readonly kube: KubeClient,
    private readonly namespace: string,
  ) {}

  #path(): string {
    return `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/secrets/${CA_SECRET_NAME}`;
  }

  /** The state, whether a rotation was asked for, and the version to write against. */
  async read(): Promise<CaRead> {
    const secret = await this.kube.request<CaSecret>("GET", this.#path());
    const state = decodeCaSecret(secret, `${this.namespace}/${CA_SECRET_NAME}`);
    if (!state.ok) throw new Error(state.error);
    return {
      state: state.value,
      requested: secret.metadata.annotations?.[ROTATE_CA_ANNOTATION] !== undefined,
      resourceVersion: secret.metadata.resourceVersion,
    };
  }

  /**
   * Writes a state with a JSON merge patch conditional on `resourceVersion` (a conflict means
   * another replica or a user changed the Secret: false, read again). Keys of a finished step
   * are removed, and so is the rotation request.
   */
  async write(s: CaState, resourceVersion: string | undefined): Promise<boolean> {
    const { data, since } = encodeCaSecret(s);
    const body = {
      metadata: {
        ...(resourceVersion ? { resourceVersion } : {}),
        annotations: { [CA_STEP_SINCE_ANNOTATION]: since, [ROTATE_CA_ANNOTATION]: null },
      },
      data: {
        "next.crt": null,
        "next.key": null,
        "previous.crt": null,
        ...data,
      },
    };
    try {
      await this.kube.request("PATCH", this.#path(), body, "application/merge-patch+json");
      return true;
    } catch (e) {
      if (statusOf(e) === 409) return false;
      throw e;
    }
  }
}
