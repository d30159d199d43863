/**
 * Proxy settings of a Gateway: these defaults, overridden by our KengineParameters resource
 * (class defaults, then the Gateway's own; see parameters.ts). Pod-level ports and paths live in
 * proxies/pod.ts.
 */

export interface ProxySettings {
  /** Deployment (default) or DaemonSet (one proxy per node). */
  readonly kind: "Deployment" | "DaemonSet";
  readonly replicas: number;
  readonly image: string;
  readonly command: readonly string[];
  readonly resources?: Readonly<Record<string, unknown>>;
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly tolerations?: readonly Readonly<Record<string, unknown>>[];
  /** Replaces the default preferred anti-affinity by hostname. */
  readonly affinity?: Readonly<Record<string, unknown>>;
  readonly serviceType: "LoadBalancer" | "NodePort" | "ClusterIP";
  readonly service: {
    readonly annotations?: Readonly<Record<string, string>>;
    readonly loadBalancerClass?: string;
    readonly externalTrafficPolicy?: "Cluster" | "Local";
  };
}

export const DEFAULT_PROXY_SETTINGS: ProxySettings = {
  kind: "Deployment",
  replicas: 2,
  // The local kubelet maps images whose repository ends in /kengine to the locally built proxy.
  image: "ghcr.io/kengine-gateway/kengine:0.1.0",
  command: ["caddy"],
  serviceType: "LoadBalancer",
  service: {},
};
