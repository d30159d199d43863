/**
 * How a proxy pod runs around the management channel, as plain Kubernetes objects for the
 * provisioning code to place into its Deployment: the container (bootstrap config, pod IP
 * from the downward API, management and readiness ports, readiness probe) and its volumes
 * (serving certificate Secret, bootstrap ConfigMap, last known good config Secret, scratch
 * space for Caddy) and its security context (non-root, read-only root filesystem, no
 * capabilities but binding low ports).
 *
 * Last known good: the pod runs `caddy run --config <bootstrap> --resume`. With `--resume`
 * Caddy starts from its autosave file (`$XDG_CONFIG_HOME/caddy/autosave.json`) when it exists
 * and from `--config` when it does not: stock Caddy, Kengine (Caddy 2.8) and our build all do
 * this, with no shell and no module of ours. The autosave file is one key of the Gateway's
 * last-good Secret, mounted read-only (optional: absent key or Secret → no file → bootstrap).
 * The key names the image, command and flavour, so a pod template for another proxy build
 * finds no file and starts from the bootstrap instead of a config its binary may refuse.
 * Caddy reads the file only at start (`admin.config.persist` is false: it never writes it),
 * so the kubelet refreshing the mounted Secret reloads nothing behind the controller's back.
 */
import { createHash } from "node:crypto";
import type {
  V1Container,
  V1PodSecurityContext,
  V1SecurityContext,
  V1Volume,
} from "@kubernetes/client-node";
import { DEFAULT_ADMIN_LISTEN } from "../caddy/types";
import type { PlainConfig } from "../caddy/types";
import { ManagementSpec, READINESS_PATH } from "../caddy/management";

/** Scratch space: the root filesystem is read-only. */
export const TMP_DIR = "/tmp";

/**
 * Caddy's admin endpoint inside the pod: a unix socket in TMP_DIR, the pod's own emptyDir
 * (proxyVolumes), with Caddy's default mode 0200 (only the proxy's user may connect). Reached
 * from outside only through the mTLS management listener.
 */
export const ADMIN_SOCKET = DEFAULT_ADMIN_LISTEN;
import {
  CADDY_DEFAULT_ADMIN_PORT,
  DEFAULT_MANAGEMENT_PORT,
  DEFAULT_READINESS_PORT,
  RESERVED_PORTS,
} from "../validation/ports";

export {
  CADDY_DEFAULT_ADMIN_PORT,
  DEFAULT_MANAGEMENT_PORT,
  DEFAULT_READINESS_PORT,
  RESERVED_PORTS,
};

export const POD_IP_ENV = "KENGINE_POD_IP";
export const MANAGEMENT_TLS_DIR = "/etc/kengine/management";
export const BOOTSTRAP_DIR = "/etc/kengine/bootstrap";
export const BOOTSTRAP_FILE = "caddy.json";
export const DATA_DIR = "/var/lib/kengine";
/** XDG_CONFIG_HOME of managed proxies: Caddy looks for `caddy/autosave.json` under it. */
export const LAST_GOOD_DIR = "/etc/kengine/last-good";
/** Caddy's app directory name under XDG_CONFIG_HOME, where the last-good Secret is mounted. */
export const LAST_GOOD_MOUNT = `${LAST_GOOD_DIR}/caddy`;
export const LAST_GOOD_FILE = "autosave.json";

/**
 * The last-good Secret's key for one proxy build: a config is stored only for the image,
 * command and flavour that accepted it (`config-<12 hex>.json`, a valid Secret key).
 */
export function lastGoodKey(proxy: {
  readonly image: string;
  readonly command?: readonly string[];
  readonly flavor: string;
}): string {
  const id = JSON.stringify([proxy.image, proxy.command ?? ["caddy"], proxy.flavor]);
  return `config-${createHash("sha256").update(id).digest("hex").slice(0, 12)}.json`;
}

/** The fixed non-root user and group the proxy runs as (the distroless "nonroot" ids). */
export const PROXY_UID = 65532;
export const PROXY_GID = 65532;
/** Ports below this one are privileged: binding them needs NET_BIND_SERVICE. */
export const FIRST_UNPRIVILEGED_PORT = 1024;

/**
 * The proxy pod's security context: never root, a fixed user and group (the group owns the
 * mounted Secret and the emptyDirs: fsGroup), the runtime's default seccomp profile. With a
 * listener port below 1024, the pod's own network namespace lets unprivileged processes bind
 * low ports (`net.ipv4.ip_unprivileged_port_start`, a namespaced sysctl every kubelet allows
 * since Kubernetes 1.22): a capability added to a non-root container is not effective unless
 * the binary carries it as a file capability, so the sysctl is what makes port 80 work.
 */
export function proxyPodSecurityContext(lowPorts: boolean): V1PodSecurityContext {
  return {
    runAsNonRoot: true,
    runAsUser: PROXY_UID,
    runAsGroup: PROXY_GID,
    fsGroup: PROXY_GID,
    seccompProfile: { type: "RuntimeDefault" },
    ...(lowPorts ? { sysctls: [{ name: "net.ipv4.ip_unprivileged_port_start", value: "0" }] } : {}),
  };
}

/**
 * The proxy container's security context: read-only root filesystem (Caddy writes only to the
 * data and /tmp emptyDirs), no privilege escalation, every capability dropped except
 * NET_BIND_SERVICE when a listener port is below 1024 (for images whose binary carries it).
 */
export function proxySecurityContext(lowPorts: boolean): V1SecurityContext {
  return {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    capabilities: { drop: ["ALL"], ...(lowPorts ? { add: ["NET_BIND_SERVICE"] } : {}) },
  };
}

/**
 * The spec every pod of one Gateway shares: the same bytes fit every pod because the pod IP
 * is an environment placeholder Caddy resolves itself, and the admin socket is in each pod's
 * own /tmp.
 */
export function podManagementSpec(
  clientCaPem: string | readonly string[],
  ports = {
    management: DEFAULT_MANAGEMENT_PORT,
    readiness: DEFAULT_READINESS_PORT,
  },
): ManagementSpec {
  return {
    listenAddress: `{env.${POD_IP_ENV}}:${ports.management}`,
    adminAddress: ADMIN_SOCKET,
    serverCertTag: "kengine-management",
    clientCaPem,
    serverCertificate: {
      kind: "files",
      certificateFile: `${MANAGEMENT_TLS_DIR}/tls.crt`,
      keyFile: `${MANAGEMENT_TLS_DIR}/tls.key`,
    },
    readinessAddress: `:${ports.readiness}`,
  };
}

export interface ProxyContainerInput {
  readonly image: string;
  /** Path of the caddy (or kengine) binary in the image. */
  readonly command?: readonly string[];
  readonly managementPort?: number;
  readonly readinessPort?: number;
  /**
   * Key of the last-good Secret this pod starts from when present (`lastGoodKey`); absent: the
   * pod always starts from the bootstrap config (no last-good mount).
   */
  readonly lastGoodKey?: string;
}

/**
 * How long a deleted proxy keeps serving before it is told to stop (its preStop `sleep`). A
 * deleted pod leaves its Service's endpoints only once the EndpointSlice controller, and then
 * every load balancer and kube-proxy, has seen the deletion; a proxy that closed its listeners at
 * once would refuse the connections still sent to it meanwhile (seen here: half a second of
 * resets through the load balancer while a proxy pod was replaced). 5 s covers the propagation
 * of a loaded cluster; the pod's grace period (30 s) holds it and Caddy's drain after it.
 */
export const PROXY_PRE_STOP_SECONDS = 5;

/**
 * The proxy container: starts from the last accepted config when the last-good Secret holds one
 * (its readiness server comes with it: Ready at once), else from the bootstrap config, and then
 * turns Ready only after the first push. Deleted, it serves on for PROXY_PRE_STOP_SECONDS.
 */
export function proxyContainer(input: ProxyContainerInput): V1Container {
  const managementPort = input.managementPort ?? DEFAULT_MANAGEMENT_PORT;
  const readinessPort = input.readinessPort ?? DEFAULT_READINESS_PORT;
  const lastGood = input.lastGoodKey !== undefined;
  return {
    name: "proxy",
    image: input.image,
    command: [
      ...(input.command ?? ["caddy"]),
      "run",
      "--config",
      `${BOOTSTRAP_DIR}/${BOOTSTRAP_FILE}`,
      ...(lastGood ? ["--resume"] : []),
    ],
    env: [
      { name: POD_IP_ENV, valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
      { name: "XDG_CONFIG_HOME", value: lastGood ? LAST_GOOD_DIR : `${DATA_DIR}/config` },
      { name: "XDG_DATA_HOME", value: `${DATA_DIR}/data` },
      { name: "HOME", value: DATA_DIR },
    ],
    ports: [
      { name: "admin", containerPort: managementPort, protocol: "TCP" },
      { name: "ready", containerPort: readinessPort, protocol: "TCP" },
    ],
    // The Kubernetes sleep action (GA in 1.34): the image needs no shell or sleep binary.
    lifecycle: { preStop: { sleep: { seconds: PROXY_PRE_STOP_SECONDS } } },
    readinessProbe: {
      httpGet: { path: READINESS_PATH, port: readinessPort },
      periodSeconds: 2,
      timeoutSeconds: 1,
      failureThreshold: 1,
      successThreshold: 1,
    },
    volumeMounts: [
      { name: "management-tls", mountPath: MANAGEMENT_TLS_DIR, readOnly: true },
      { name: "bootstrap", mountPath: BOOTSTRAP_DIR, readOnly: true },
      ...(lastGood ? [{ name: "last-good", mountPath: LAST_GOOD_MOUNT, readOnly: true }] : []),
      { name: "data", mountPath: DATA_DIR },
      { name: "tmp", mountPath: TMP_DIR },
    ],
  };
}

/** Names of the per-Gateway objects the proxy pods mount. */
export const managementSecretName = (gatewayName: string): string => `${gatewayName}-kengine-admin`;
export const bootstrapConfigMapName = (gatewayName: string): string =>
  `${gatewayName}-kengine-bootstrap`;
/** The Secret holding the last config the Gateway's proxies accepted (reconcile/last-good.ts). */
export const lastGoodSecretName = (gatewayName: string): string =>
  `${gatewayName}-kengine-last-good`;

export function proxyVolumes(gatewayName: string, lastGoodKey?: string): V1Volume[] {
  return [
    {
      name: "management-tls",
      secret: { secretName: managementSecretName(gatewayName), defaultMode: 0o440 },
    },
    { name: "bootstrap", configMap: { name: bootstrapConfigMapName(gatewayName) } },
    ...(lastGoodKey !== undefined
      ? [
          {
            name: "last-good",
            secret: {
              secretName: lastGoodSecretName(gatewayName),
              // absent Secret or key: an empty directory, Caddy starts from the bootstrap
              optional: true,
              items: [{ key: lastGoodKey, path: LAST_GOOD_FILE }],
              defaultMode: 0o440,
            },
          },
        ]
      : []),
    { name: "data", emptyDir: {} },
    { name: "tmp", emptyDir: {} },
  ];
}

/** ConfigMap data for the bootstrap config (it holds file paths and the CA certificate, no private key). */
export const bootstrapConfigMapData = (
  bootstrap: PlainConfig,
): { readonly [file: string]: string } => ({
  [BOOTSTRAP_FILE]: JSON.stringify(bootstrap, null, 2),
});
