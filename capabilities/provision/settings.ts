/**
 * Proxy settings of a Gateway: these defaults, overridden by our KengineParameters resource
 * (class defaults, then the Gateway's own; see parameters.ts). Pod-level ports and paths live in
 * workload/pod.ts.
 */

import { DEFAULT_PROXY_FLAVOR, ProxyFlavor } from "../flavor/proxy-flavor";
import { kengine, version } from "../../package.json";
import type { Limits } from "../validation/limits";

/**
 * The proxy image this release ships: package.json's `kengine.proxyImage` tagged with its
 * `version`, the reference `npm run proxy:image` (proxy/image) writes into the image's OCI layout.
 */
export const DEFAULT_PROXY_IMAGE = `${kengine.proxyImage}:${version}`;

/** Who runs the proxies: the controller (Managed) or the user, behind a labelled Service (External). */
export type ProxyMode = "Managed" | "External";

/** Where the admin-channel TLS material of bring-your-own proxies comes from (Secrets in the Gateway's namespace). */
export interface ExternalProxySettings {
  /**
   * `kubernetes.io/tls` Secret: `tls.crt`/`tls.key` is the client certificate the controller
   * presents to these proxies; `ca.crt` (unless caSecretName is set) is the CA bundle that
   * signed the proxies' serving certificates and that the proxies trust for client certificates.
   */
  readonly clientCertificateSecretName?: string;
  /** Optional Secret whose `ca.crt` replaces the one in the client certificate Secret. */
  readonly caSecretName?: string;
}

export interface ProxySettings {
  /** Managed (default): the controller provisions the proxies. External: bring your own (docs/proxies.md). */
  readonly mode: ProxyMode;
  readonly external?: ExternalProxySettings;
  /** Deployment (default) or DaemonSet (one proxy per node). */
  readonly kind: "Deployment" | "DaemonSet";
  readonly replicas: number;
  readonly image: string;
  /**
   * Which proxy build `image` holds (flavor/proxy-flavor.ts): decides what the controller
   * emits and advertises. Default Bundled, the image this project ships.
   */
  readonly flavor: ProxyFlavor;
  readonly command: readonly string[];
  readonly resources?: Readonly<Record<string, unknown>>;
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly tolerations?: readonly Readonly<Record<string, unknown>>[];
  /** Replaces the default preferred anti-affinity by hostname. */
  readonly affinity?: Readonly<Record<string, unknown>>;
  /** Static addresses for the Gateway (KengineParameters spec.addresses); its own spec.addresses win. */
  readonly addresses?: readonly { readonly type?: string; readonly value?: string }[];
  readonly serviceType: "LoadBalancer" | "NodePort" | "ClusterIP";
  /**
   * What one request may cost the proxies (KengineParameters spec.limits, class level only:
   * validation/limits.ts); absent: DEFAULT_LIMITS.
   */
  readonly limits?: Limits;
  readonly service: {
    readonly annotations?: Readonly<Record<string, string>>;
    readonly loadBalancerClass?: string;
    readonly externalTrafficPolicy?: "Cluster" | "Local";
  };
}

export const DEFAULT_PROXY_SETTINGS: ProxySettings = {
  mode: "Managed",
  kind: "Deployment",
  replicas: 2,
  // The local node imports it from the OCI layout hack/build-peers.sh writes (hack/node/node.sh).
  image: DEFAULT_PROXY_IMAGE,
  flavor: DEFAULT_PROXY_FLAVOR,
  command: ["caddy"],
  serviceType: "LoadBalancer",
  service: {},
};
