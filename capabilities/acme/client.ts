/**
 * A small ACME client (RFC 8555) on node:crypto and node:https: directory, nonces, account,
 * order, authorization, challenge, finalize, certificate. Errors come back as data with the
 * CA's problem document word for word. Large ACME libraries do not fit Pepr's module size
 * limit; this does the few requests an HTTP-01 issuance needs.
 */
import { KeyObject } from "node:crypto";
import { request } from "node:https";
import { Result, err, ok } from "../result";
import { EcJwk, FlattenedJws, externalAccountBinding, publicJwk, signRequest } from "./jws";

export interface AcmeProblem {
  /** e.g. `urn:ietf:params:acme:error:rateLimited`, or `network` / `protocol` of ours. */
  readonly type: string;
  /** The CA's own words (its problem document's `detail`), or what went wrong locally. */
  readonly detail: string;
  readonly status?: number;
  /** Seconds the CA asked us to wait (Retry-After), if it did. */
  readonly retryAfterSeconds?: number;
}

/** `type: detail`, as the CA wrote them. */
export const problemText = (p: AcmeProblem): string =>
  p.type.startsWith("urn:ietf:params:acme:error:")
    ? `${p.type.slice("urn:ietf:params:acme:error:".length)}: ${p.detail}`
    : p.detail;

export interface HttpResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body: Buffer;
}

export type Http = (
  method: "GET" | "HEAD" | "POST",
  url: string,
  body?: string,
) => Promise<HttpResponse>;

const MAX_BODY = 1 << 20;

/** node:https with the given trusted roots (a private CA such as Pebble); 30 s per request. */
export function httpsTransport(caPems?: readonly string[]): Http {
  return (method, url, body) =>
    new Promise((resolve, reject) => {
      const req = request(
        url,
        {
          method,
          ...(caPems && caPems.length > 0 ? { ca: [...caPems] } : {}),
          headers: {
            "User-Agent": "kengine-gateway-acme",
            ...(body !== undefined
              ? {
                  "Content-Type": "application/jose+json",
                  "Content-Length": Buffer.byteLength(body),
                }
              : {}),
          },
          timeout: 30_000,
        },
        res => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on("data", (c: Buffer) => {
            size += c.length;
            if (size > MAX_BODY) req.destroy(new Error(`${url}: response larger than 1 MiB`));
            else chunks.push(c);
          });
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: Object.fromEntries(
                Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v[0] : v]),
              ),
              body: Buffer.concat(chunks),
            }),
          );
          res.on("error", reject);
        },
      );
      req.on("timeout", () => req.destroy(new Error(`${method} ${url}: timed out`)));
      req.on("error", reject);
      req.end(body);
    });
}

export interface Directory {
  readonly newNonce: string;
  readonly newAccount: string;
  readonly newOrder: string;
  readonly meta?: { readonly externalAccountRequired?: boolean };
}

export interface Order {
  readonly status: "pending" | "ready" | "processing" | "valid" | "invalid" | string;
  readonly identifiers: readonly { readonly type: string; readonly value: string }[];
  readonly authorizations: readonly string[];
  readonly finalize: string;
  readonly certificate?: string;
  readonly error?: { readonly type?: string; readonly detail?: string };
}

export interface Challenge {
  readonly type: string;
  readonly url: string;
  readonly token: string;
  readonly status: string;
  readonly error?: { readonly type?: string; readonly detail?: string };
}

export interface Authorization {
  readonly status: "pending" | "valid" | "invalid" | string;
  readonly identifier: { readonly type: string; readonly value: string };
  readonly challenges: readonly Challenge[];
  readonly wildcard?: boolean;
}

export interface AccountOptions {
  readonly email?: string;
  readonly eab?: { readonly keyId: string; readonly hmacKey: string };
}

interface Reply<T> {
  readonly value: T;
  readonly location?: string;
  readonly retryAfterSeconds?: number;
  readonly body: Buffer;
}

/** Retry-After as seconds (delta-seconds or an HTTP date). */
export function retryAfterSeconds(
  header: string | undefined,
  now: Date = new Date(),
): number | undefined {
  if (header === undefined || header.trim() === "") return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim());
  const t = Date.parse(header);
  return Number.isNaN(t) ? undefined : Math.max(0, Math.ceil((t - now.getTime()) / 1000));
}

const fail = (type: string, detail: string): { ok: false; error: AcmeProblem } =>
  err({ type, detail });

export class AcmeClient {
  readonly jwk: EcJwk;
  #directory?: Directory;
  #nonce?: string;
  #kid?: string;

  constructor(
    readonly directoryUrl: string,
    private readonly accountKey: KeyObject,
    private readonly http: Http,
    accountUrl?: string,
  ) {
    this.jwk = publicJwk(accountKey);
    this.#kid = accountUrl;
  }

  get accountUrl(): string | undefined {
    return this.#kid;
  }

  async directory(): Promise<Result<Directory, AcmeProblem>> {
    if (this.#directory) return ok(this.#directory);
    const r = await this.#send("GET", this.directoryUrl);
    if (!r.ok) return r;
    const d = parseJson<Directory>(r.value.body);
    if (!d || !d.newNonce || !d.newAccount || !d.newOrder)
      return fail("protocol", `${this.directoryUrl} is not an ACME directory`);
    this.#directory = d;
    return ok(d);
  }

  /** Registers (or finds, §7.3.1) the account of this key; returns its URL. */
  async account(opts: AccountOptions): Promise<Result<string, AcmeProblem>> {
    const dir = await this.directory();
    if (!dir.ok) return dir;
    const payload = {
      termsOfServiceAgreed: true,
      ...(opts.email ? { contact: [`mailto:${opts.email}`] } : {}),
      ...(opts.eab
        ? {
            externalAccountBinding: externalAccountBinding(
              opts.eab.keyId,
              opts.eab.hmacKey,
              dir.value.newAccount,
              this.jwk,
            ),
          }
        : {}),
    };
    const r = await this.#post<unknown>(dir.value.newAccount, payload, false);
    if (!r.ok) return r;
    if (!r.value.location) return fail("protocol", "newAccount answered without a Location");
    this.#kid = r.value.location;
    return ok(r.value.location);
  }

  async newOrder(names: readonly string[]): Promise<Result<Reply<Order>, AcmeProblem>> {
    const dir = await this.directory();
    if (!dir.ok) return dir;
    const r = await this.#post<Order>(dir.value.newOrder, {
      identifiers: names.map(value => ({ type: "dns", value })),
    });
    if (r.ok && !r.value.location) return fail("protocol", "newOrder answered without a Location");
    return r;
  }

  getOrder(url: string): Promise<Result<Reply<Order>, AcmeProblem>> {
    return this.#post<Order>(url, undefined);
  }

  getAuthorization(url: string): Promise<Result<Reply<Authorization>, AcmeProblem>> {
    return this.#post<Authorization>(url, undefined);
  }

  /** Tells the CA the challenge is ready to be validated. */
  respond(challengeUrl: string): Promise<Result<Reply<Challenge>, AcmeProblem>> {
    return this.#post<Challenge>(challengeUrl, {});
  }

  finalize(url: string, csrDer: Buffer): Promise<Result<Reply<Order>, AcmeProblem>> {
    return this.#post<Order>(url, { csr: csrDer.toString("base64url") });
  }

  /** The certificate chain (PEM), leaf first. */
  async certificate(url: string): Promise<Result<string, AcmeProblem>> {
    const r = await this.#post<undefined>(url, undefined, true, false);
    if (!r.ok) return r;
    const pem = r.value.body.toString("utf8");
    if (!pem.includes("-----BEGIN CERTIFICATE-----"))
      return fail("protocol", "the certificate URL did not answer a PEM chain");
    return ok(pem);
  }

  async #nonceFor(): Promise<Result<string, AcmeProblem>> {
    if (this.#nonce) {
      const n = this.#nonce;
      this.#nonce = undefined;
      return ok(n);
    }
    const dir = await this.directory();
    if (!dir.ok) return dir;
    const r = await this.#send("HEAD", dir.value.newNonce);
    if (!r.ok) return r;
    const n = r.value.headers["replay-nonce"];
    return n ? ok(n) : fail("protocol", "newNonce answered without a Replay-Nonce");
  }

  /** A signed POST; a `badNonce` answer is retried with the fresh nonce it carries (§6.5). */
  async #post<T>(
    url: string,
    payload: unknown,
    withKid = true,
    json = true,
  ): Promise<Result<Reply<T>, AcmeProblem>> {
    for (let attempt = 0; ; attempt++) {
      const nonce = await this.#nonceFor();
      if (!nonce.ok) return nonce;
      if (withKid && !this.#kid) return fail("protocol", "no ACME account yet");
      const body: FlattenedJws = signRequest(
        withKid
          ? { key: this.accountKey, kid: this.#kid! }
          : { key: this.accountKey, jwk: this.jwk },
        url,
        nonce.value,
        payload,
      );
      const r = await this.#send("POST", url, JSON.stringify(body));
      if (r.ok) {
        const value = (json ? parseJson<T>(r.value.body) : undefined) as T;
        if (json && value === undefined)
          return fail("protocol", `${url} answered ${r.value.status} without JSON`);
        return ok({
          value,
          location: r.value.headers["location"],
          retryAfterSeconds: retryAfterSeconds(r.value.headers["retry-after"]),
          body: r.value.body,
        });
      }
      if (r.error.type !== "urn:ietf:params:acme:error:badNonce" || attempt >= 7) return r;
    }
  }

  async #send(
    method: "GET" | "HEAD" | "POST",
    url: string,
    body?: string,
  ): Promise<Result<HttpResponse, AcmeProblem>> {
    let res: HttpResponse;
    try {
      res = await this.http(method, url, body);
    } catch (e) {
      return fail("network", `${method} ${url}: ${(e as Error).message}`);
    }
    const nonce = res.headers["replay-nonce"];
    if (nonce) this.#nonce = nonce;
    if (res.status >= 200 && res.status < 300) return ok(res);
    const problem = parseJson<{ type?: string; detail?: string }>(res.body);
    return err({
      type: problem?.type ?? "http",
      detail: problem?.detail ?? `${method} ${url}: HTTP ${res.status}`,
      status: res.status,
      ...(res.headers["retry-after"] !== undefined
        ? { retryAfterSeconds: retryAfterSeconds(res.headers["retry-after"]) }
        : {}),
    });
  }
}

function parseJson<T>(b: Buffer): T | undefined {
  try {
    return JSON.parse(b.toString("utf8")) as T;
  } catch {
    return undefined;
  }
}
