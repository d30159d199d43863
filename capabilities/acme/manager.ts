/**
 * The leader's ACME manager: one order per name for the whole fleet. It reads what the
 * snapshot wants (issuers.ts), decides when to talk to the CA (schedule.ts), and keeps each
 * name's certificate and order state in one Secret (validation/acme.ts): the certificate the
 * translator hands to every proxy, the HTTP-01 answers the proxies serve while an order is
 * validated, the CA's last word. A restarted controller resumes from that Secret.
 */
import {
  KeyObject,
  X509Certificate,
  createHash,
  createPrivateKey,
  generateKeyPairSync,
} from "node:crypto";
import { request as httpRequest } from "node:http";
import { KubeClient, statusOf } from "../kube/client";
import { Snapshot } from "../snapshot";
import {
  ACME_LABEL,
  ACME_MANAGED_BY,
  AcmeAnnotation,
  HTTP01_PREFIX,
  acmeSecretLabels,
  writtenByController,
} from "../validation/acme";
import { AcmeClient, AcmeProblem, Http, Order, httpsTransport, problemText } from "./client";
import { certificationRequest } from "./csr";
import { keyAuthorization } from "./jws";
import { IssuerSpec, StoredState, WantedName, storedState, wantedNames } from "./issuers";
import { BackoffSettings, DEFAULT_ACME_BACKOFF, decide, renewalTime, retryTime } from "./schedule";
import { acmeMetrics } from "./metrics";

export interface AcmeLogger {
  info(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
}

export interface AcmeManagerOptions {
  readonly kube: KubeClient;
  readonly log: AcmeLogger;
  /** The controller's namespace: ACME account keys live there. */
  readonly namespace: string;
  readonly backoff?: BackoffSettings;
  /** How long to wait for the proxies to serve an HTTP-01 answer before telling the CA. */
  readonly selfCheckTimeoutMs?: number;
  /** Transport per issuer (tests); default node:https with the issuer's caBundle. */
  readonly transport?: (issuer: IssuerSpec) => Http;
  readonly sleep?: (ms: number) => Promise<void>;
}

type Fail = { readonly ok: false; readonly error: AcmeProblem };
class OrderFailed extends Error {
  constructor(readonly problem: AcmeProblem) {
    super(problemText(problem));
  }
}
const must = <T>(r: { ok: true; value: T } | Fail): T => {
  if (!r.ok) throw new OrderFailed(r.error);
  return r.value;
};

const secretsPath = (ns: string, name?: string): string =>
  `/api/v1/namespaces/${encodeURIComponent(ns)}/secrets${name ? `/${encodeURIComponent(name)}` : ""}`;
const iso = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, "Z");
const defaultSleep = (ms: number): Promise<void> => new Promise(r => setTimeout(r, ms));

export class AcmeManager {
  #snapshot?: Snapshot;
  #running = false;
  #inFlight = new Set<string>();
  #timer?: NodeJS.Timeout;
  #clients = new Map<string, Promise<AcmeClient>>();
  /**
   * What this manager last wrote per name, for a minute: the watch may not have brought the
   * Secret back into the snapshot yet, and a stale snapshot must not cause a second order.
   */
  #written = new Map<string, { readonly at: number; readonly state: StoredState }>();
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(private readonly o: AcmeManagerOptions) {
    this.#sleep = o.sleep ?? defaultSleep;
  }

  /** Leader only: look at what the snapshot wants and start the orders that are due. */
  update(snapshot: Snapshot, now = new Date()): void {
    this.#snapshot = snapshot;
    this.#running = true;
    const wanted = wantedNames(snapshot);
    acmeMetrics.expiry(
      wanted.flatMap(w => {
        const notAfter = storedState(snapshot, w.namespace, w.secretName).notAfter;
        return notAfter ? w.listeners.map(l => ({ ...l, name: w.name, notAfter })) : [];
      }),
    );
    let wake: Date | undefined;
    for (const w of wanted) {
      const key = `${w.namespace}/${w.name}`;
      if (this.#inFlight.has(key)) continue;
      // HTTP-01 reaches the Gateway at its address: none yet, nothing to validate against
      if (w.http01Port && w.addresses.length === 0) continue;
      const mine = this.#written.get(key);
      const state =
        mine && mine.at > now.getTime() - 60_000
          ? mine.state
          : storedState(snapshot, w.namespace, w.secretName);
      const d = decide(state, now);
      if (d.kind === "wait") {
        if (d.until && (!wake || d.until < wake)) wake = d.until;
        continue;
      }
      this.#inFlight.add(key);
      void this.#order(w, d.why, state.order, state.failures, state.hasCertificate).finally(() => {
        this.#inFlight.delete(key);
        if (this.#running && this.#snapshot) this.#later(new Date(Date.now() + 1000));
      });
    }
    if (wake) this.#later(wake);
  }

  /** Leadership lost or shutting down: start nothing new (orders under way finish). */
  stop(): void {
    this.#running = false;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #later(at: Date): void {
    if (this.#timer) clearTimeout(this.#timer);
    const ms = Math.max(0, Math.min(at.getTime() - Date.now(), 2 ** 31 - 1));
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#running && this.#snapshot) this.update(this.#snapshot);
    }, ms);
    this.#timer.unref?.();
  }

  async #order(
    w: WantedName,
    why: string,
    resume: string | undefined,
    failures: number,
    hasCertificate: boolean,
  ): Promise<void> {
    const log = { name: w.name, namespace: w.namespace, issuer: w.issuerName };
    try {
      // settings that cannot work fail like a CA error: reported, retried with back-off
      if (!w.http01Port)
        throw new OrderFailed({
          type: "config",
          detail:
            "HTTP-01 needs an HTTP listener on port 80 of the Gateway: the CA validates the name there",
        });
      const issuer = w.issuer;
      this.o.log.info("acme order", { ...log, why });
      const client = await this.#client(issuer);
      let order: Order | undefined;
      let orderUrl = resume;
      if (orderUrl) {
        const r = await client.getOrder(orderUrl);
        // only before finalize: a finalized order's key died with the controller that sent it
        const status = r.ok ? r.value.value.status : "gone";
        order = r.ok && (status === "pending" || status === "ready") ? r.value.value : undefined;
      }
      if (!order) {
        const r = must(await client.newOrder([w.name]));
        order = r.value;
        orderUrl = r.location!;
        acmeMetrics.order(w.issuerName);
        await this.#write(w, {
          state: "Pending",
          order: orderUrl,
          message: `order placed with ACME issuer ${w.issuerName}; validating ${w.name} with HTTP-01`,
        });
      }
      // Every authorization: publish the answer on the proxies, tell the CA, wait.
      for (const authzUrl of order.authorizations) {
        const authz = must(await client.getAuthorization(authzUrl)).value;
        if (authz.status === "valid") continue;
        const ch = authz.challenges.find(c => c.type === "http-01");
        if (!ch)
          throw new OrderFailed({
            type: "protocol",
            detail: "the CA offered no http-01 challenge",
          });
        const answer = keyAuthorization(ch.token, client.jwk);
        await this.#write(w, { challenges: JSON.stringify({ [ch.token]: answer }) });
        await this.#selfCheck(w, ch.token, answer);
        if (ch.status === "pending") must(await client.respond(ch.url));
        for (let i = 0; ; i++) {
          const a = must(await client.getAuthorization(authzUrl));
          if (a.value.status === "valid") break;
          if (a.value.status !== "pending" || i > 120) {
            const failed = a.value.challenges.find(c => c.type === "http-01")?.error;
            throw new OrderFailed({
              type: failed?.type ?? "urn:ietf:params:acme:error:unauthorized",
              detail: failed?.detail ?? `authorization for ${w.name} is ${a.value.status}`,
            });
          }
          await this.#sleep(Math.min(10, a.retryAfterSeconds ?? 1) * 1000);
        }
      }
      // Finalize with a fresh key, wait for the certificate.
      const { privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
      let current = must(await client.getOrder(orderUrl!)).value;
      if (current.status === "ready")
        current = must(
          await client.finalize(current.finalize, certificationRequest(privateKey, [w.name])),
        ).value;
      for (let i = 0; current.status !== "valid"; i++) {
        if (current.status === "invalid" || i > 120)
          throw new OrderFailed({
            type: current.error?.type ?? "urn:ietf:params:acme:error:orderNotReady",
            detail: current.error?.detail ?? `order is ${current.status}`,
          });
        await this.#sleep(1000);
        current = must(await client.getOrder(orderUrl!)).value;
      }
      const chain = must(await client.certificate(current.certificate!));
      const leaf = new X509Certificate(chain);
      const notBefore = new Date(leaf.validFrom);
      const notAfter = new Date(leaf.validTo);
      await this.#write(
        w,
        {
          state: "Valid",
          message: `issued by ACME issuer ${w.issuerName}`,
          order: undefined,
          challenges: undefined,
          retryAt: undefined,
          failures: undefined,
          notAfter: iso(notAfter),
          renewAt: iso(renewalTime(notBefore, notAfter)),
        },
        { crt: chain, key: privateKey.export({ type: "pkcs8", format: "pem" }).toString() },
      );
      this.#written.set(`${w.namespace}/${w.name}`, {
        at: Date.now(),
        state: {
          hasCertificate: true,
          state: "Valid",
          notAfter,
          renewAt: renewalTime(notBefore, notAfter),
          failures: 0,
        },
      });
      acmeMetrics.result(w.issuerName, "issued");
      this.o.log.info("acme certificate issued", { ...log, notAfter: iso(notAfter) });
    } catch (e) {
      const problem: AcmeProblem =
        e instanceof OrderFailed ? e.problem : { type: "internal", detail: (e as Error).message };
      if (problem.type.endsWith(":accountDoesNotExist") || problem.type.endsWith(":unauthorized"))
        this.#clients.clear(); // register (or find) the account again next time
      const n = failures + 1;
      const retryAt = retryTime(
        new Date(),
        n,
        problem.retryAfterSeconds,
        this.o.backoff ?? DEFAULT_ACME_BACKOFF,
      );
      const before = this.#snapshot && storedState(this.#snapshot, w.namespace, w.secretName);
      this.#written.set(`${w.namespace}/${w.name}`, {
        at: Date.now(),
        state: {
          hasCertificate,
          state: "Failed",
          failures: n,
          retryAt,
          ...(before?.renewAt && { renewAt: before.renewAt }),
          ...(before?.notAfter && { notAfter: before.notAfter }),
          ...(problem.type === "network" && orderUrlOf(before)
            ? { order: orderUrlOf(before) }
            : {}),
        },
      });
      acmeMetrics.result(w.issuerName, "failed");
      this.o.log.warn("acme order failed", {
        ...log,
        error: problemText(problem),
        retryAt: iso(retryAt),
        serving: hasCertificate,
      });
      await this.#write(w, {
        state: "Failed",
        message: problemText(problem),
        challenges: undefined,
        // an order the CA gave up on is not resumed
        ...(problem.type === "network" ? {} : { order: undefined }),
        failures: String(n),
        retryAt: iso(retryAt),
      }).catch(() => undefined);
    }
  }

  /** Waits (bounded) until a Gateway address answers the HTTP-01 request with `answer`. */
  async #selfCheck(w: WantedName, token: string, answer: string): Promise<void> {
    const deadline = Date.now() + (this.o.selfCheckTimeoutMs ?? 30_000);
    if (w.addresses.length === 0) {
      await this.#sleep(2000);
      return;
    }
    // Every proxy must serve it (the CA's request may land on any): the Gateway's address
    // balances new connections over them, so ask until it answered right 20 times in a row.
    let inARow = 0;
    while (Date.now() < deadline) {
      for (const address of w.addresses) {
        const ok = (await getText(address, w.name, `${HTTP01_PREFIX}${token}`)) === answer;
        inARow = ok ? inARow + 1 : 0;
      }
      if (inARow >= 20) return;
      if (inARow === 0) await this.#sleep(250);
    }
    this.o.log.warn("acme: the Gateway does not answer the challenge yet; asking the CA anyway", {
      name: w.name,
    });
  }

  #client(issuer: IssuerSpec): Promise<AcmeClient> {
    const id = accountIdentity(issuer);
    let c = this.#clients.get(id);
    if (!c) {
      c = this.#account(issuer);
      this.#clients.set(id, c);
      c.catch(() => this.#clients.delete(id));
    }
    return c;
  }

  /**
   * The issuer's account: a random key (node:crypto), created once and stored in a Secret of
   * the controller's namespace, which tenants can neither read nor write; one per issuer
   * declaration. A Secret of that name that the manager did not write (its labels, and the
   * declaration it was made for) is not used: the issuer fails with that said.
   */
  async #account(issuer: IssuerSpec): Promise<AcmeClient> {
    const name = accountSecretName(issuer);
    const id = accountIdentity(issuer);
    const http = (this.o.transport ?? (i => httpsTransport(i.caBundle ? [i.caBundle] : undefined)))(
      issuer,
    );
    type Stored = {
      data?: Record<string, string>;
      metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
    };
    const read = () =>
      this.o.kube
        .request<Stored>("GET", secretsPath(this.o.namespace, name))
        .catch((e: unknown) => {
          if (statusOf(e) === 404) return undefined;
          throw e;
        });
    const trusted = (s: Stored): Stored => {
      if (
        !writtenByController(s, "account") ||
        s.metadata.annotations?.[ACCOUNT_OF] !== id ||
        !s.data?.["account.key"]
      )
        throw new OrderFailed({
          type: "config",
          detail: `Secret ${this.o.namespace}/${name} was not written by the controller for ACME issuer ${issuer.name} of KengineParameters ${issuer.parameters} (labels ${ACME_LABEL}: account, app.kubernetes.io/managed-by: ${ACME_MANAGED_BY}; annotation ${ACCOUNT_OF}): its key is not used; delete it to let the controller create the account`,
        });
      return s;
    };
    let stored = await read();
    if (!stored) {
      // Created once, before the CA sees the key: a restart finds the same key.
      const key = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey;
      const body = {
        apiVersion: "v1",
        kind: "Secret",
        metadata: {
          name,
          namespace: this.o.namespace,
          labels: acmeSecretLabels("account"),
          annotations: { [ACCOUNT_OF]: id, "gateway.kengine.io/acme-server": issuer.server },
        },
        type: "Opaque",
        stringData: { "account.key": key.export({ type: "pkcs8", format: "pem" }).toString() },
      };
      await this.o.kube.request("POST", secretsPath(this.o.namespace), body).catch((e: unknown) => {
        if (statusOf(e) !== 409) throw e;
      });
      stored = await read();
      if (!stored)
        throw new Error(`Secret ${this.o.namespace}/${name} vanished after its creation`);
    }
    const account = trusted(stored);
    const key: KeyObject = createPrivateKey(
      Buffer.from(account.data!["account.key"]!, "base64").toString("utf8"),
    );
    const known = account.metadata.annotations?.[ACCOUNT_URL];
    const client = new AcmeClient(issuer.server, key, http, known);
    // newAccount with a known key returns its account (RFC 8555 §7.3.1): asked once per
    // process, so a CA that lost its accounts (a test CA restarted) gets it registered again
    let eab: { keyId: string; hmacKey: string } | undefined;
    if (issuer.externalAccountBinding) {
      const ref = issuer.externalAccountBinding.hmacKeySecretRef;
      const s = await this.o.kube.request<{ data?: Record<string, string> }>(
        "GET",
        secretsPath(issuer.namespace, ref.name),
      );
      const raw = s.data?.[ref.key ?? "secret"];
      if (!raw)
        throw new OrderFailed({
          type: "config",
          detail: `Secret ${issuer.namespace}/${ref.name} has no key ${ref.key ?? "secret"} (the EAB MAC key)`,
        });
      eab = {
        keyId: issuer.externalAccountBinding.keyID,
        hmacKey: Buffer.from(raw, "base64").toString("utf8").trim(),
      };
    }
    const url = must(
      await client.account({ ...(issuer.email && { email: issuer.email }), ...(eab && { eab }) }),
    );
    if (url !== known)
      await this.o.kube.request(
        "PATCH",
        secretsPath(this.o.namespace, name),
        { metadata: { annotations: { [ACCOUNT_URL]: url } } },
        "application/merge-patch+json",
      );
    return client;
  }

  /** Merge-patches the name's Secret (creates it if missing); undefined removes an annotation. */
  async #write(
    w: WantedName,
    fields: Partial<Record<keyof typeof AcmeAnnotation, string | undefined>>,
    pair?: { crt: string; key: string },
  ): Promise<void> {
    const annotations: Record<string, string | null> = {
      [AcmeAnnotation.name]: w.name,
      [AcmeAnnotation.issuer]: w.issuerName,
    };
    for (const [k, v] of Object.entries(fields))
      annotations[AcmeAnnotation[k as keyof typeof AcmeAnnotation]] = v ?? null;
    const data = pair
      ? {
          "tls.crt": Buffer.from(pair.crt).toString("base64"),
          "tls.key": Buffer.from(pair.key).toString("base64"),
        }
      : undefined;
    const path = secretsPath(w.namespace, w.secretName);
    try {
      await this.o.kube.request(
        "PATCH",
        path,
        { metadata: { annotations }, ...(data && { data }) },
        "application/merge-patch+json",
      );
    } catch (e) {
      if (statusOf(e) !== 404) throw e;
      await this.o.kube.request("POST", secretsPath(w.namespace), {
        apiVersion: "v1",
        kind: "Secret",
        metadata: {
          name: w.secretName,
          namespace: w.namespace,
          labels: acmeSecretLabels("certificate"),
          annotations: Object.fromEntries(
            Object.entries(annotations).filter(([, v]) => v !== null),
          ),
        },
        type: "kubernetes.io/tls",
        data: data ?? { "tls.crt": "", "tls.key": "" },
      });
    }
  }
}

const orderUrlOf = (s: StoredState | undefined): string | undefined => s?.order;

/** Annotations of an account Secret: the declaration it belongs to, and the CA's account URL. */
const ACCOUNT_OF = "gateway.kengine.io/acme-account-of";
const ACCOUNT_URL = "gateway.kengine.io/acme-account";

/** One account per issuer declaration: its parameters, name, directory, email and EAB key id. */
const accountIdentity = (i: IssuerSpec): string =>
  `${i.parameters}/${i.name} ${i.server} ${i.email ?? ""} ${i.externalAccountBinding?.keyID ?? ""}`;

/** The account Secret's name in the controller's namespace. */
export const accountSecretName = (i: IssuerSpec): string =>
  `kengine-acme-account-${createHash("sha256").update(accountIdentity(i)).digest("hex").slice(0, 16)}`;

/** GET http://address:80/path with the given Host; the body (≤ 4 KiB) or undefined. */
function getText(address: string, host: string, path: string): Promise<string | undefined> {
  return new Promise(resolve => {
    const req = httpRequest(
      { host: address, port: 80, path, headers: { Host: host }, timeout: 3000 },
      res => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          if (body.length < 4096) body += c;
        });
        res.on("end", () => resolve(res.statusCode === 200 ? body : undefined));
        res.on("error", () => resolve(undefined));
      },
    );
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(undefined));
    req.end();
  });
}
