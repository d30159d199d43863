/**
 * Several client identities on the admin channel: the controller's own (managed proxies) and
 * one per set of credentials that bring-your-own proxies' parameters name. A `ProxyEndpoint`
 * picks its identity by `channel`; the push engine sees one `AdminApi`.
 */
import { createHash } from "node:crypto";
import {
  AdminClient,
  RouteTableInfo,
  AdminError,
  ClientCredentials,
  ConfigRead,
  PeerCertificate,
  ProxyEndpoint,
  Validation,
} from "./admin-client";
import type { AdminApi } from "./fleet";
import { err, Result } from "../result";

/** A stable key for a set of credentials (changes when the certificate, key or CA changes). */
export const channelKey = (c: ClientCredentials): string =>
  createHash("sha256")
    .update(c.caPem)
    .update("\0")
    .update(c.certificatePem)
    .update("\0")
    .update(c.privateKey.reveal())
    .digest("hex")
    .slice(0, 16);

export class AdminChannels implements AdminApi {
  #own: AdminClient;
  readonly #make: (c: ClientCredentials) => AdminClient;
  readonly #channels = new Map<string, AdminClient>();

  constructor(own: AdminClient, make = (c: ClientCredentials) => new AdminClient(c)) {
    this.#own = own;
    this.#make = make;
  }

  /**
   * Swaps the controller's own identity (a renewed client certificate): requests from now on use
   * the new one; the old client closes once its requests in flight are done, so nothing fails.
   */
  replaceOwn(next: AdminClient): void {
    const old = this.#own;
    this.#own = next;
    void old.close();
  }

  /** States every extra identity in use; clients of identities no longer named are closed. */
  setChannels(credentials: ReadonlyMap<string, ClientCredentials>): void {
    for (const [key, c] of credentials)
      if (!this.#channels.has(key)) this.#channels.set(key, this.#make(c));
    for (const [key, client] of [...this.#channels]) {
      if (credentials.has(key)) continue;
      this.#channels.delete(key);
      void client.close();
    }
  }

  channels(): readonly string[] {
    return [...this.#channels.keys()];
  }

  #client(endpoint: ProxyEndpoint): Result<AdminClient, AdminError> {
    if (endpoint.channel === undefined) return { ok: true, value: this.#own };
    const client = this.#channels.get(endpoint.channel);
    return client
      ? { ok: true, value: client }
      : err({ kind: "connect", message: `no client credentials for channel ${endpoint.channel}` });
  }

  async load(
    endpoint: ProxyEndpoint,
    config: Buffer,
    force?: boolean,
  ): Promise<Result<void, AdminError>> {
    const c = this.#client(endpoint);
    return c.ok ? c.value.load(endpoint, config, force) : c;
  }

  async postRouteTable(
    endpoint: ProxyEndpoint,
    id: string,
    body: string,
    ifMatch: string,
  ): Promise<Result<RouteTableInfo, AdminError>> {
    const c = this.#client(endpoint);
    return c.ok ? c.value.postRouteTable(endpoint, id, body, ifMatch) : c;
  }

  async routeTables(
    endpoint: ProxyEndpoint,
  ): Promise<Result<readonly RouteTableInfo[], AdminError>> {
    const c = this.#client(endpoint);
    return c.ok ? c.value.routeTables(endpoint) : c;
  }

  async validate(endpoint: ProxyEndpoint, config: Buffer): Promise<Result<Validation, AdminError>> {
    const c = this.#client(endpoint);
    return c.ok ? c.value.validate(endpoint, config) : c;
  }

  async runsConfig(endpoint: ProxyEndpoint, hash: string): Promise<Result<boolean, AdminError>> {
    const c = this.#client(endpoint);
    return c.ok ? c.value.runsConfig(endpoint, hash) : c;
  }

  async getConfig(endpoint: ProxyEndpoint, path = ""): Promise<Result<ConfigRead, AdminError>> {
    const c = this.#client(endpoint);
    return c.ok ? c.value.getConfig(endpoint, path) : c;
  }

  async metrics(endpoint: ProxyEndpoint): Promise<Result<string, AdminError>> {
    const c = this.#client(endpoint);
    return c.ok ? c.value.metrics(endpoint) : c;
  }

  peerCertificate(endpoint: ProxyEndpoint): PeerCertificate | undefined {
    const c = this.#client(endpoint);
    return c.ok ? c.value.peerCertificate(endpoint) : undefined;
  }

  async close(): Promise<void> {
    await Promise.all([this.#own, ...this.#channels.values()].map(c => c.close()));
    this.#channels.clear();
  }
}
