/**
 * What every part of the Caddy renderer shares: the options, the state of one render (`Ctx`),
 * who made each part (the source map's owners), and listen addresses.
 */
import type { CertificateIR, GatewayIR, RefusableObject, TracingIR } from "../ir";
import type { ProxyCapabilities } from "../flavor/proxy-flavor";
import type { CaddyHandler, ManagementServerConfig } from "./types";
import type { DispatchUse, TableMemo } from "./render-memo";

export interface CaddyOptions {
  /** The management server fragment and admin address (proxy fleet, docs/operations.md §7). */
  readonly management?: ManagementServerConfig;
  /** Host part of every listener address; default: all interfaces. */
  readonly bindHost?: string;
  /** Added to every listener port (tests run unprivileged on high ports). */
  readonly portOffset?: number;
  /**
   * Loopback address of the internal server that answers 500 for the traffic share of
   * backendRefs that do not resolve (only emitted when a rule mixes valid and invalid
   * backends); default `127.0.0.1:10500`.
   */
  readonly errorResponderListen?: string;
  /**
   * How a matched route reaches its backends. "shared" (default): matching routes only set
   * the variable `kengine_backend` (and run their filters); one reverse_proxy per distinct
   * backend set and server, selected by that variable, does the proxying, so Caddy provisions
   * each backend once instead of once per rule match. "per-route": every route carries its
   * own reverse_proxy (the naive layout; benchmarks compare the two).
   */
  readonly dispatch?: "shared" | "per-route";
  /**
   * Route tables (route-table.ts) where the flavour has them (default); false: the linear
   * shape on every flavour (tests and benchmarks compare the two).
   */
  readonly routeTable?: boolean;
  /**
   * Keep rendered pieces from build to build and reuse them (render-memo.ts; default true).
   * The bytes are the same either way; false renders from scratch (tests compare the two).
   */
  readonly memo?: boolean;
}

export const DEFAULT_ERROR_LISTEN = "127.0.0.1:10500";

/** The object (route, ListenerSet, Gateway listener) that produced a part of the config. */
export type SourceObject = Omit<RefusableObject, "fingerprint">;

/**
 * Which objects produced each part of a config that Caddy names in its provisioning errors,
 * by location (a JSON pointer without the leading `/apps`, e.g.
 * `/http/servers/http-80/routes/0/handle/0/routes/2`): HTTP server routes and the routes of
 * their subroutes, TLS connection policies, `load_pem` entries, layer-4 routes. A location
 * inside an owned part belongs to the nearest owned part above it (reconcile/error-path.ts).
 * Several objects own a part they share (routes merged by hostname, a shared backend).
 */
export type CaddySourceMap = ReadonlyMap<string, readonly SourceObject[]>;

export type Owners = WeakMap<object, readonly SourceObject[]>;

/** `o`, recorded as made by `by` (when a source map is being built). */
export function own<T extends object>(ctx: Ctx, o: T, by: readonly SourceObject[]): T {
  ctx.owners?.set(o, by);
  return o;
}

export const ownersOf = (ctx: Ctx, o: object): readonly SourceObject[] => ctx.owners?.get(o) ?? [];

/** Adds `more` to `owners`, each object once. */
export function addOwners(owners: SourceObject[], more: readonly SourceObject[]): void {
  for (const m of more)
    if (
      !owners.some(
        o =>
          o.kind === m.kind &&
          o.namespace === m.namespace &&
          o.name === m.name &&
          o.listener === m.listener,
      )
    )
      owners.push(m);
}

/** The object a listener id (translate/listeners.ts) names: a ListenerSet or a Gateway listener. */
export function listenerSource(id: string): SourceObject {
  const set = id.startsWith("ListenerSet:");
  const [namespace = "", name = "", listener = ""] = (set ? id.slice(12) : id).split("/");
  return set
    ? { kind: "ListenerSet", namespace, name }
    : { kind: "Listener", namespace, name, listener };
}

export interface Ctx {
  readonly opts: CaddyOptions;
  needsErrorServer: boolean;
  /** What the proxies of the Gateway being built can run (its flavour). */
  caps: ProxyCapabilities;
  /** The client certificate the Gateway being built presents to TLS backends. */
  clientCertificate?: CertificateIR;
  /** Shared dispatch of the server being built: reverse_proxy JSON → its route. */
  dispatch?: Map<string, DispatchEntry>;
  /** Building a source map (caddySourceMap): who made each part. */
  readonly owners?: Owners;
  /** The route whose entry is being built (owns the dispatch route it uses). */
  entryOwner?: SourceObject;
  /** The route table id of the HTTP server being built (proxies with `routeTable`). */
  tableId?: string;
  /** The Gateway being built. */
  ir?: GatewayIR;
  /** The route table being built keeps its pieces across builds (not for source maps). */
  memo?: TableMemo;
  /** Rendering one entry for its fragment: the backend sets it names. */
  uses?: DispatchUse[];
  /** XTelemetryPolicy tracing of the Gateway being built. */
  tracing?: TracingIR;
}

export const tablesOn = (ctx: Ctx): boolean => ctx.caps.routeTable && ctx.opts.routeTable !== false;

export interface DispatchEntry {
  readonly id: string;
  readonly handler: CaddyHandler;
  /** The routes that use it. */
  readonly owners: SourceObject[];
}

/** The variable a matched route sets to name its backend set (shared dispatch). */
export const BACKEND_VAR = "kengine_backend";
export const LISTENERS_GROUP = "listeners";

export const listenAddress = (ctx: Ctx, port: number, network = ""): string =>
  `${network}${ctx.opts.bindHost ?? ""}:${port + (ctx.opts.portOffset ?? 0)}`;

/**
 * Networks of our listener module (proxy/listener): one socket per address kept across
 * config reloads, so a reload drops no connection. `kengine-http` also hands a connection an
 * old config's HTTP server dropped unanswered to the new one; `kengine-tcp` is for caddy-l4.
 */
export const PERSISTENT_HTTP_NETWORK = "kengine-http";
export const PERSISTENT_TCP_NETWORK = "kengine-tcp";
