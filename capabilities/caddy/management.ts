/**
 * The proxy's management channel in Caddy JSON (docs/operations.md §7): an `apps.http` server on the
 * pod IP that requires a client certificate from the controller CA and forwards to the
 * admin endpoint, a unix socket. Every config a proxy runs carries it — the bootstrap config,
 * and each pushed config, which sealing (seal.ts) checks with `checkConfig` before anything can
 * be pushed. No config that passes these checks serves the admin API on TCP: loopback is
 * reachable by anything the proxy itself dials (an upstream a tenant names `localhost`), so only
 * the management server may reach the admin, and it requires the controller's client certificate.
 */
import { isDeepStrictEqual } from "node:util";
import { pemToBase64Der } from "../pki/pki";
import { err, ok, Result } from "../result";
import { SecretPem } from "../pki/secret";
import type { PlainConfig } from "./types";

export const MANAGEMENT_SERVER = "kengine-management";
export const READINESS_SERVER = "kengine-readiness";
export const READINESS_PATH = "/ready";
export const CONFIG_ID_PREFIX = "kengine-config-";
export const DEFAULT_CERT_TAG = "kengine-management";

/** Where the proxy finds its serving certificate: files mounted from a Secret (preferred), or PEM inline. */
export type ServerCertificateSource =
  | { readonly kind: "files"; readonly certificateFile: string; readonly keyFile: string }
  | { readonly kind: "pem"; readonly certificatePem: string; readonly privateKey: SecretPem };

export interface ManagementSpec {
  /** Management listener, e.g. "{env.KENGINE_POD_IP}:9443" (same bytes for every pod) or "10.0.0.7:9443". */
  readonly listenAddress: string;
  /**
   * Caddy's admin endpoint: a unix socket as a Caddy network address, `unix/` and an absolute
   * path (e.g. "unix//tmp/kengine-admin.sock"), or `unix/{env.NAME}` when processes that share
   * a file system (tests on one host) each get their own path from the environment. Never TCP.
   */
  readonly adminAddress: string;
  /** Tag the serving certificate is loaded with and selected by. */
  readonly serverCertTag: string;
  /**
   * The controller CA; only certificates it signed may use the management listener. Several
   * during a CA rotation (old and new both trusted until every proxy and the controller moved).
   */
  readonly clientCaPem: string | readonly string[];
  readonly serverCertificate: ServerCertificateSource;
  /** Readiness listener added to pushed configs, e.g. ":8081"; absent from the bootstrap config. */
  readonly readinessAddress: string;
}

/** Caddy's network-address prefix of a unix stream socket (`unix//abs/path`). */
const UNIX_PREFIX = "unix/";
/** A listener address on one of Caddy's unix socket networks (unix, unixgram, unixpacket). */
const UNIX_NETWORK = /^\s*unix(gram|packet)?\//i;
/** Bytes of a socket path the kernel accepts (sun_path is 108 bytes with the terminating NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;
/** The whole path from the environment; Caddy refuses to start when the variable is unset or empty. */
const ENV_PLACEHOLDER = /^\{env\.[A-Za-z_][A-Za-z0-9_]*\}$/;

/**
 * Why `address` cannot be the admin endpoint, or undefined when it can: a unix stream socket
 * at an absolute path (or one placeholder for the whole path), with Caddy's default mode (0200:
 * only the proxy's user may connect), so no `|mode` suffix; no abstract socket (`@name`, which
 * anything in the pod's network namespace may connect to) and no placeholder within the path.
 */
export function adminAddressProblem(address: unknown): string | undefined {
  const shown = JSON.stringify(address);
  if (typeof address !== "string" || !address.startsWith(UNIX_PREFIX))
    return `must be a unix socket ("unix//path"), never a TCP address: got ${shown}`;
  const path = address.slice(UNIX_PREFIX.length);
  if (ENV_PLACEHOLDER.test(path)) return undefined;
  if (!path.startsWith("/") || /[|{}\s\0]/.test(path))
    return `must be "unix/" and an absolute socket path with no permission suffix, placeholder or space: got ${shown}`;
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES)
    return `socket path is longer than ${MAX_SOCKET_PATH_BYTES} bytes: got ${shown}`;
  return undefined;
}

/**
 * The Host header the management server sends to the admin socket. Caddy 2.8's admin on a unix
 * socket accepts only "", "127.0.0.1" and "::1" (its DNS-rebinding guard); Caddy ≥ 2.10 checks no
 * Host on unix sockets. The client's own Host (the pod's DNS name) would be refused by 2.8.
 */
export const ADMIN_SOCKET_HOST = "127.0.0.1";
/** A port number, or an environment placeholder Caddy resolves at load (so every pod gets the same bytes). */
const PORT = /^(\d{1,5}|\{env\.[A-Za-z_][A-Za-z0-9_]*\})$/;

const caList = (pems: string | readonly string[]): readonly string[] =>
  typeof pems === "string" ? [pems] : pems;

/** "host:port" split at the last colon; the port may be a placeholder or a range. */
const splitAddress = (address: string): { host: string; port: string } => {
  const i = address.lastIndexOf(":");
  return i < 0
    ? { host: address, port: "" }
    : { host: address.slice(0, i), port: address.slice(i + 1) };
};

/** Problems with the spec itself; a bad spec must not produce configs. */
export function checkSpec(spec: ManagementSpec): readonly string[] {
  const problems: string[] = [];
  const admin = adminAddressProblem(spec.adminAddress);
  if (admin !== undefined) problems.push(`adminAddress ${admin}`);
  for (const [field, value] of [
    ["listenAddress", spec.listenAddress],
    ["readinessAddress", spec.readinessAddress],
  ] as const) {
    if (!PORT.test(splitAddress(value).port))
      problems.push(`${field} needs a port (number or {env.NAME}), got ${JSON.stringify(value)}`);
  }
  const ports = [splitAddress(spec.listenAddress).port, splitAddress(spec.readinessAddress).port];
  if (new Set(ports).size !== ports.length)
    problems.push(`management and readiness ports must differ, got ${ports.join(", ")}`);
  if (spec.serverCertTag.trim() === "") problems.push("serverCertTag must not be empty");
  const cas = caList(spec.clientCaPem);
  if (cas.length === 0 || cas.some(pem => !pemToBase64Der(pem).ok))
    problems.push("clientCaPem must be one or more PEM certificates");
  return problems;
}

/** The admin block every config carries: on the unix socket only, never autosaved (the config holds private keys). */
export const adminBlock = (spec: ManagementSpec): PlainConfig => ({
  listen: spec.adminAddress,
  config: { persist: false },
});

/** The `apps.http.servers["kengine-management"]` fragment. Throws only on a spec `checkSpec` rejects. */
export function managementServer(
  spec: Pick<ManagementSpec, "listenAddress" | "adminAddress" | "serverCertTag" | "clientCaPem">,
): PlainConfig {
  const cas = caList(spec.clientCaPem).map(pemToBase64Der);
  const trusted = cas.flatMap(ca => (ca.ok ? [ca.value] : []));
  if (trusted.length === 0 || trusted.length !== cas.length)
    throw new Error("managementServer: clientCaPem must be one or more PEM certificates");
  return {
    listen: [spec.listenAddress],
    protocols: ["h1", "h2"],
    automatic_https: { disable: true },
    tls_connection_policies: [
      {
        certificate_selection: { any_tag: [spec.serverCertTag] },
        client_authentication: {
          // The `inline` CA pool module, not the field `trusted_ca_certs` beside `mode`: Caddy 2.8
          // builds no pool from that field (its handshakes fail with "unknown ca").
          ca: { provider: "inline", trusted_ca_certs: trusted },
          mode: "require_and_verify",
        },
      },
    ],
    routes: [
      {
        handle: [
          {
            handler: "reverse_proxy",
            upstreams: [{ dial: spec.adminAddress }],
            headers: { request: { set: { Host: [ADMIN_SOCKET_HOST] } } },
          },
        ],
      },
    ],
  };
}

/** The `apps.tls.certificates` loader entry for the serving certificate. */
export function managementCertificateLoader(
  spec: Pick<ManagementSpec, "serverCertTag" | "serverCertificate">,
): { readonly key: "load_files" | "load_pem"; readonly entry: PlainConfig } {
  const source = spec.serverCertificate;
  return source.kind === "files"
    ? {
        key: "load_files",
        entry: {
          certificate: source.certificateFile,
          key: source.keyFile,
          tags: [spec.serverCertTag],
        },
      }
    : {
        key: "load_pem",
        entry: {
          certificate: source.certificatePem,
          key: source.privateKey.reveal(),
          tags: [spec.serverCertTag],
        },
      };
}

/** The readiness server a pushed config adds; its `@id` carries the config's hash. */
export function readinessServer(
  spec: Pick<ManagementSpec, "readinessAddress">,
  configHash: string,
): PlainConfig {
  return {
    "@id": `${CONFIG_ID_PREFIX}${configHash}`,
    listen: [spec.readinessAddress],
    protocols: ["h1"],
    automatic_https: { disable: true },
    routes: [
      {
        match: [{ path: [READINESS_PATH] }],
        handle: [{ handler: "static_response", status_code: 200, body: "ready\n" }],
      },
      { handle: [{ handler: "static_response", status_code: 404 }] },
    ],
  };
}

const asObject = (v: unknown): { readonly [key: string]: unknown } | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v)
    ? (v as { [key: string]: unknown })
    : undefined;

/** Adds admin block, certificate loader and management server to a config; refuses to overwrite anything. */
export function withManagement(
  config: PlainConfig,
  spec: ManagementSpec,
): Result<PlainConfig, readonly string[]> {
  const specProblems = checkSpec(spec);
  if (specProblems.length > 0) return err(specProblems);
  const out = structuredClone(config) as { [key: string]: unknown };
  const problems: string[] = [];
  if (out.admin !== undefined && !isDeepStrictEqual(out.admin, adminBlock(spec)))
    problems.push("config already has a different admin block");
  out.admin = adminBlock(spec);
  const apps = (out.apps = { ...(asObject(out.apps) ?? {}) });
  const http = (apps.http = { ...(asObject(apps.http) ?? {}) }) as { [key: string]: unknown };
  const servers = (http.servers = { ...(asObject(http.servers) ?? {}) }) as {
    [key: string]: unknown;
  };
  if (servers[MANAGEMENT_SERVER] !== undefined)
    problems.push(`config already has a server named ${MANAGEMENT_SERVER}`);
  servers[MANAGEMENT_SERVER] = managementServer(spec);
  const tls = (apps.tls = { ...(asObject(apps.tls) ?? {}) }) as { [key: string]: unknown };
  const certificates = (tls.certificates = { ...(asObject(tls.certificates) ?? {}) }) as {
    [key: string]: unknown;
  };
  const loader = managementCertificateLoader(spec);
  const existing = certificates[loader.key];
  certificates[loader.key] = [...(Array.isArray(existing) ? existing : []), loader.entry];
  if (problems.length > 0) return err(problems);
  const checked = checkConfig(out, spec);
  return checked.ok ? ok(out) : checked;
}

/** The config a proxy pod starts from: admin on the unix socket, the management listener, nothing else. */
export function bootstrapConfig(spec: ManagementSpec): Result<PlainConfig, readonly string[]> {
  return withManagement({}, spec);
}

const listenersOf = (
  config: PlainConfig,
): { readonly owner: string; readonly address: string }[] => {
  const apps = asObject(config.apps) ?? {};
  const out: { owner: string; address: string }[] = [];
  for (const app of ["http", "layer4"]) {
    const servers = asObject(asObject(apps[app])?.servers) ?? {};
    for (const [name, server] of Object.entries(servers)) {
      const listen = asObject(server)?.listen;
      for (const address of Array.isArray(listen) ? listen : [])
        if (typeof address === "string") out.push({ owner: `${app}/${name}`, address });
    }
  }
  return out;
};

/**
 * Everything a config must keep for the controller to stay in charge of the proxy. Collects
 * all problems. `readiness: "absent"` for input to `sealConfig`, `"any"` to check a sealed one.
 */
export function checkConfig(
  config: PlainConfig,
  spec: ManagementSpec,
  readiness: "absent" | "any" = "absent",
): Result<PlainConfig, readonly string[]> {
  const problems: string[] = [...checkSpec(spec)];
  const admin = asObject(config.admin);
  if (admin === undefined) problems.push("admin block is missing");
  else {
    if (admin.disabled === true) problems.push("admin must not be disabled");
    // absent or empty, Caddy listens on its default, localhost:2019
    const listen = adminAddressProblem(admin.listen);
    if (listen !== undefined) problems.push(`admin.listen ${listen}`);
    else if (admin.listen !== spec.adminAddress)
      problems.push(
        `admin.listen must be ${spec.adminAddress}, got ${JSON.stringify(admin.listen)}`,
      );
    if (asObject(admin.config)?.persist !== false)
      problems.push(
        "admin.config.persist must be false (Caddy would autosave private keys to disk)",
      );
    if (asObject(admin.config)?.load !== undefined)
      problems.push(
        "admin.config.load is not allowed (a config loader could replace the management server)",
      );
    if (admin.remote !== undefined)
      problems.push(
        "admin.remote is not allowed (only the management server exposes the admin API)",
      );
  }
  const apps = asObject(config.apps) ?? {};
  const servers = asObject(asObject(apps.http)?.servers) ?? {};
  const management = servers[MANAGEMENT_SERVER];
  if (management === undefined) problems.push(`apps.http.servers.${MANAGEMENT_SERVER} is missing`);
  else if (problems.length === 0 && !isDeepStrictEqual(management, managementServer(spec)))
    problems.push(
      `apps.http.servers.${MANAGEMENT_SERVER} differs from the management server for this proxy`,
    );
  if (readiness === "absent" && servers[READINESS_SERVER] !== undefined)
    problems.push(`apps.http.servers.${READINESS_SERVER} is reserved (sealing adds it)`);
  const loader = managementCertificateLoader(spec);
  const loaded = asObject(asObject(apps.tls)?.certificates)?.[loader.key];
  if (!Array.isArray(loaded) || !loaded.some(e => isDeepStrictEqual(e, loader.entry)))
    problems.push(
      `apps.tls.certificates.${loader.key} lacks the management certificate tagged ${spec.serverCertTag}`,
    );
  const reservedPorts = new Map([
    [splitAddress(spec.listenAddress).port, MANAGEMENT_SERVER],
    [splitAddress(spec.readinessAddress).port, READINESS_SERVER],
  ]);
  for (const { owner, address } of listenersOf(config)) {
    if (UNIX_NETWORK.test(address)) {
      problems.push(`${owner} listens on ${address}: only the admin API uses a unix socket`);
      continue;
    }
    const reservedBy = reservedPorts.get(splitAddress(address).port);
    if (reservedBy !== undefined && owner !== `http/${reservedBy}`)
      problems.push(`${owner} listens on ${address}, a port reserved for ${reservedBy}`);
  }
  return problems.length === 0 ? ok(config) : err(problems);
}
