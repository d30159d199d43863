/**
 * Proxy settings of a Gateway: defaults here, to be overridden by our parameters resource
 * (class defaults, then the Gateway's own). Pod-level ports and paths live in proxies/pod.ts.
 */

export interface ProxySettings {
  readonly replicas: number;
  readonly image: string;
  readonly command: readonly string[];
  readonly serviceType: "LoadBalancer" | "NodePort" | "ClusterIP";
}

export const DEFAULT_PROXY_SETTINGS: ProxySettings = {
  replicas: 2,
  // The local kubelet maps images whose repository ends in /kengine to the locally built proxy.
  image: "ghcr.io/kengine-gateway/kengine:0.1.0",
  command: ["caddy"],
  serviceType: "LoadBalancer",
};
