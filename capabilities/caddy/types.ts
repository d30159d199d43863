/**
 * The small schema of the Caddy JSON config we emit (a subset of Caddy's JSON reference,
 * valid on Caddy ≥ 2.8 with caddy-l4). Values are plain JSON.
 */

export type Json =
  | string
  | number
  | boolean
  | null
  | readonly Json[]
  | { readonly [k: string]: Json | undefined };
export type JsonObject = { readonly [k: string]: Json | undefined };

export type CaddyMatcherSet = {
  readonly host?: readonly string[];
  readonly path_regexp?: { readonly name?: string; readonly pattern: string };
  readonly method?: readonly string[];
  readonly header_regexp?: Readonly<Record<string, { readonly pattern: string }>>;
  readonly header?: Readonly<Record<string, readonly string[]>>;
  readonly query?: Readonly<Record<string, readonly string[]>>;
  readonly vars_regexp?: Readonly<Record<string, { readonly pattern: string }>>;
  readonly expression?: string;
  readonly vars?: Readonly<Record<string, readonly string[]>>;
  readonly not?: readonly CaddyMatcherSet[];
  readonly remote_ip?: { readonly ranges: readonly string[] };
};

export type CaddyHeaderOps = {
  readonly set?: Readonly<Record<string, readonly string[]>>;
  readonly add?: Readonly<Record<string, readonly string[]>>;
  readonly delete?: readonly string[];
  readonly deferred?: boolean;
};

/** Our dial guard (proxy/internal/egress): present, even `{}`, switches it on. */
export type CaddyEgressGuard = { readonly deny?: readonly string[] };

export type CaddyHandler =
  | { readonly handler: "subroute"; readonly routes: readonly CaddyRoute[] }
  | {
      /** Our module (proxy/routetable): one route list per host, changed per host (route-table.ts). */
      readonly handler: "kengine_route_table";
      readonly id: string;
      readonly hosts: Readonly<Record<string, readonly CaddyRoute[]>>;
      /** Shared dispatch: backend id → the handler that proxies to it (after a host's list). */
      readonly backends?: Readonly<Record<string, CaddyHandler>>;
    }
  | {
      readonly handler: "headers";
      readonly request?: CaddyHeaderOps;
      readonly response?: CaddyHeaderOps;
    }
  | { readonly handler: "rewrite"; readonly uri: string }
  /** Caddy's own: bodies past `max_size` bytes are answered 413. */
  | { readonly handler: "request_body"; readonly max_size: number }
  /** Our module (proxy/deadline): the rest of the route within `timeout`, else 504. */
  | { readonly handler: "kengine_deadline"; readonly timeout: string }
  | {
      /** Our module (proxy/mirror): copies of the request to other backends. */
      readonly handler: "kengine_mirror";
      readonly targets: readonly {
        readonly dial: readonly string[];
        readonly numerator?: number;
        readonly denominator?: number;
      }[];
      readonly egress_guard?: CaddyEgressGuard;
    }
  | {
      /**
       * Our module (proxy/extauth): external authorization over HTTP (listener filters), or in
       * mode ingress-nginx as an Ingress's auth-url asks (`path` and `host`).
       */
      readonly handler: "kengine_ext_auth";
      readonly dial: readonly string[];
      readonly mode?: "ingress-nginx";
      readonly path?: string;
      readonly host?: string;
      readonly path_prefix?: string;
      readonly allowed_request_headers?: readonly string[];
      readonly allowed_response_headers?: readonly string[];
      readonly max_body_bytes?: number;
      readonly egress_guard?: CaddyEgressGuard;
    }
  | {
      /** OpenTelemetry tracing (XTelemetryPolicy); exporter from the process's OTEL_* env. */
      readonly handler: "tracing";
      readonly span?: string;
      readonly span_attributes?: Readonly<Record<string, string>>;
    }
  | { readonly handler: "vars"; readonly [name: string]: string }
  | {
      readonly handler: "static_response";
      readonly status_code: number;
      readonly headers?: Readonly<Record<string, readonly string[]>>;
      readonly body?: string;
      readonly close?: boolean;
    }
  | {
      readonly handler: "reverse_proxy";
      readonly upstreams: readonly { readonly dial: string }[];
      readonly headers?: { readonly request?: CaddyHeaderOps };
      readonly request_buffers?: number;
      readonly load_balancing?: {
        readonly selection_policy: CaddySelectionPolicy;
        readonly retries?: number;
        readonly retry_match?: readonly CaddyMatcherSet[];
        readonly try_duration?: string;
        readonly try_interval?: string;
      };
      readonly transport?: {
        /** kengine_http: our transport (proxy/santls), http + subject_alt_names + client_certificate. */
        readonly protocol: "http" | "kengine_http";
        /** kengine_http only: dial tenants' names through the guard. */
        readonly egress_guard?: CaddyEgressGuard;
        readonly subject_alt_names?: {
          readonly dns?: readonly string[];
          readonly uri?: readonly string[];
        };
        readonly client_certificate?: { readonly certificate: string; readonly key: string };
        readonly versions?: readonly string[];
        readonly response_header_timeout?: string;
        readonly dial_timeout?: string;
        readonly write_timeout?: string;
        readonly tls?: {
          readonly server_name: string;
          readonly ca?: {
            readonly provider: "inline";
            readonly trusted_ca_certs: readonly string[];
          };
          readonly except_ports?: readonly string[];
        };
      };
    };

export interface CaddyRoute {
  readonly match?: readonly CaddyMatcherSet[];
  readonly handle: readonly CaddyHandler[];
  readonly terminal?: boolean;
  /** Of the routes sharing a group, only the first that matches runs. */
  readonly group?: string;
}

/** A TLS handshake matcher: exact server names, or a regular expression (for wildcards). */
export type CaddySNIMatch =
  | { readonly sni: readonly string[] }
  | { readonly sni_regexp: { readonly pattern: string } };

export interface CaddyTLSConnectionPolicy {
  readonly match?: CaddySNIMatch;
  readonly certificate_selection?: { readonly any_tag: readonly string[] };
  readonly client_authentication?: {
    readonly ca: { readonly provider: "inline"; readonly trusted_ca_certs: readonly string[] };
    readonly mode: "require_and_verify" | "request";
  };
}

export interface CaddyHTTPServer {
  readonly listen: readonly string[];
  readonly routes: readonly CaddyRoute[];
  readonly automatic_https: { readonly disable: true };
  /** Go durations (caddy/config.ts serverTimeouts). */
  readonly read_header_timeout?: string;
  readonly read_idle_timeout?: string;
  readonly idle_timeout?: string;
  readonly protocols: readonly string[];
  readonly tls_connection_policies?: readonly CaddyTLSConnectionPolicy[];
  readonly strict_sni_host?: boolean;
}

/** A caddy-l4 proxy upstream; `tls`: connect over TLS (Caddy's reverse_proxy TLSConfig). */
export interface CaddyL4Upstream {
  readonly dial: readonly string[];
  readonly tls?: {
    readonly server_name: string;
    readonly ca?: { readonly provider: "inline"; readonly trusted_ca_certs: readonly string[] };
  };
}
/** A reverse_proxy selection policy; session persistence wraps the others (caddy/session.ts). */
export type CaddySelectionPolicy =
  | { readonly policy: "round_robin" }
  | { readonly policy: "weighted_round_robin"; readonly weights: readonly number[] }
  | {
      readonly policy: "kengine_session";
      readonly mode: "cookie" | "header";
      readonly name: string;
      readonly path?: string;
      readonly max_age?: string;
      readonly timeout?: string;
      readonly secret?: string;
      readonly fallback: CaddySelectionPolicy;
    }
  | {
      readonly policy: "cookie";
      readonly name: string;
      readonly secret?: string;
      readonly max_age?: string;
      readonly fallback: CaddySelectionPolicy;
    };

export type CaddyL4Handler =
  | {
      readonly handler: "proxy";
      readonly upstreams: readonly CaddyL4Upstream[];
      readonly load_balancing?: { readonly selection: { readonly policy: "round_robin" } };
    }
  | { readonly handler: "tls"; readonly connection_policies: readonly CaddyTLSConnectionPolicy[] };

export interface CaddyL4Route {
  readonly match?: readonly { readonly tls?: CaddySNIMatch }[];
  readonly handle: readonly CaddyL4Handler[];
}

export interface CaddyL4Server {
  readonly listen: readonly string[];
  readonly routes: readonly CaddyL4Route[];
}

/**
 * A config the controller renders (toCaddyConfig). A type, not an interface, so that it is also
 * a `PlainConfig`: sealing (seal.ts) checks it as the plain data it serialises to.
 */
export type CaddyConfig = {
  readonly admin: { readonly listen: string; readonly config: { readonly persist: false } };
  readonly apps: {
    readonly http?: { readonly servers: Readonly<Record<string, CaddyHTTPServer | JsonObject>> };
    readonly tls?: {
      readonly certificates: {
        readonly load_pem?: readonly {
          readonly certificate: string;
          readonly key: string;
          readonly tags?: readonly string[];
        }[];
        readonly load_files?: readonly JsonObject[];
      };
    };
    readonly layer4?: { readonly servers: Readonly<Record<string, CaddyL4Server>> };
  };
};

/**
 * Any Caddy JSON config as plain, unchecked data (the admin API's /load body): a config parsed
 * from bytes, the bootstrap config, or a rendered `CaddyConfig`. What sealing reads and checks.
 */
export type PlainConfig = { readonly [key: string]: unknown };

/**
 * The proxy-fleet hook (docs/operations.md §7): the mTLS management listener that forwards to the
 * local admin endpoint. Filled by `capabilities/proxies/`; every config we render keeps it.
 */
export interface ManagementServerConfig {
  /** Caddy's admin endpoint, a unix socket (never TCP); default `DEFAULT_ADMIN_LISTEN`. */
  readonly adminListen?: string;
  /** A Caddy HTTP server, placed verbatim at `apps.http.servers["kengine-management"]`. */
  readonly server?: JsonObject;
  /** Certificates the management server uses (e.g. tagged), appended to `apps.tls.certificates`. */
  readonly loadPem?: readonly {
    readonly certificate: string;
    readonly key: string;
    readonly tags?: readonly string[];
  }[];
  readonly loadFiles?: readonly JsonObject[];
}

export const MANAGEMENT_SERVER_NAME = "kengine-management";

/**
 * Where a proxy's admin API listens: a unix socket in the pod's own /tmp (an emptyDir only the
 * proxy container mounts; workload/pod.ts), never a TCP port. Anything the proxy dials on
 * loopback (an upstream a tenant names `localhost`) would reach an admin on TCP, so the admin
 * is reached only through the mTLS management server, which dials this socket.
 */
export const DEFAULT_ADMIN_LISTEN = "unix//tmp/kengine-admin.sock";
