/** Names and labels of what the controller provisions for a Gateway (docs/proxies.md, managed proxies). */
import { createHash } from "node:crypto";

// The labels that make an object ours are defined with the test of it (ownership/proxies.ts).
export {
  GATEWAY_NAME_LABEL,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  OWNING_GATEWAY_LABEL,
} from "../ownership/proxies";
import { GATEWAY_NAME_LABEL } from "../ownership/proxies";
export const COMPONENT_LABEL = "app.kubernetes.io/component";
/** On the last-good Secret: hash and key of the config it was written for, and whether it holds it. */
export const LAST_GOOD_HASH_ANNOTATION = "gateway.kengine.io/config-hash";
export const LAST_GOOD_KEY_ANNOTATION = "gateway.kengine.io/config-key";
export const LAST_GOOD_STORED_ANNOTATION = "gateway.kengine.io/config-stored";
/** The last-good Secret's component label (the controller keeps only its metadata in memory). */
export const LAST_GOOD_COMPONENT = "proxy-last-good";

/** A DNS-1035 label of at most 63 characters: long names are cut and keep a hash for uniqueness. */
export function dnsLabel(base: string, suffix: string): string {
  const name = `${base}-${suffix}`;
  if (name.length <= 63) return name;
  const hash = createHash("sha256").update(name).digest("hex").slice(0, 8);
  return `${base.slice(0, 63 - suffix.length - hash.length - 2)}-${hash}-${suffix}`;
}

export interface ProxyNames {
  /** Deployment and the Gateway's data-plane Service (type LoadBalancer by default). */
  readonly proxy: string;
  /** Headless Service that publishes every proxy pod (ready or not) on the admin port. */
  readonly admin: string;
}

export const proxyNames = (gatewayName: string): ProxyNames => ({
  proxy: dnsLabel(gatewayName, "kengine"),
  admin: dnsLabel(gatewayName, "kengine-admin"),
});

/** Labels that select a Gateway's proxy pods. */
export const podSelector = (gatewayName: string): Record<string, string> => ({
  [GATEWAY_NAME_LABEL]: gatewayName,
  [COMPONENT_LABEL]: "proxy",
});
