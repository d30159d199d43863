/**
 * The Kubernetes objects a managed Gateway's proxies consist of: pure functions of the Gateway,
 * the settings and the TLS material. The runtime applies them with server-side apply.
 */
import type { PlainConfig } from "../caddy/types";
import {
  DEFAULT_MANAGEMENT_PORT,
  DEFAULT_READINESS_PORT,
  FIRST_UNPRIVILEGED_PORT,
  bootstrapConfigMapData,
  bootstrapConfigMapName,
  lastGoodKey,
  lastGoodSecretName,
  managementSecretName,
  proxyContainer,
  proxyPodSecurityContext,
  proxySecurityContext,
  proxyVolumes,
} from "./pod";
import {
  COMPONENT_LABEL,
  GATEWAY_NAME_LABEL,
  LAST_GOOD_COMPONENT,
  LAST_GOOD_HASH_ANNOTATION,
  LAST_GOOD_KEY_ANNOTATION,
  LAST_GOOD_STORED_ANNOTATION,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  ProxyNames,
  podSelector,
  proxyNames,
} from "../provision/names";
import { ProxySettings } from "../provision/settings";
import { AddressSpec, loadBalancerIP, requestedAddresses } from "../provision/addresses";
import { serviceTypeFor } from "../provision/routability";

export interface GatewayRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  /**
   * Ports and protocols the proxies serve (HTTP, HTTPS, TLS, TCP → TCP; UDP → UDP): the
   * Gateway's listeners and those attached ListenerSets open. The Service and NetworkPolicy
   * expose them all.
   */
  readonly listeners: readonly { readonly port: number; readonly protocol: string }[];
  /**
   * The ports the pod template names (`containerPort`s; informational only): the Gateway's own
   * listeners, so a ListenerSet coming and going does not roll the proxies. Default: all.
   */
  readonly containerListeners?: readonly { readonly port: number; readonly protocol: string }[];
  /** spec.addresses: static addresses the proxies' Service requests (provision/addresses.ts). */
  readonly addresses?: readonly AddressSpec[];
  /**
   * What owns what we create, when not the Gateway: an IngressClass's own Gateway exists only in
   * the controller (ingress/fleet.ts), so its objects are owned by the IngressClass.
   */
  readonly owner?: {
    readonly apiVersion: string;
    readonly kind: string;
    readonly name: string;
    readonly uid: string;
  };
  /** spec.infrastructure.labels / annotations: propagated to everything we create. */
  readonly infrastructure?: {
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
}

/** The management TLS Secret's data. Private key: never logged. */
export interface ManagementSecretData {
  readonly "tls.crt": string;
  readonly "tls.key": string;
  readonly "ca.crt": string;
}

export interface KubeManifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace: string;
    readonly labels: Record<string, string>;
    readonly annotations?: Record<string, string>;
    readonly ownerReferences: readonly Record<string, unknown>[];
  };
  readonly [field: string]: unknown;
}

const ownerRef = (gw: GatewayRef) => ({
  ...(gw.owner ?? {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "Gateway",
    name: gw.name,
    uid: gw.uid,
  }),
  controller: true,
  blockOwnerDeletion: true,
});

function meta(gw: GatewayRef, name: string, component: string) {
  const annotations = gw.infrastructure?.annotations;
  return {
    name,
    namespace: gw.namespace,
    labels: {
      ...(gw.infrastructure?.labels ?? {}),
      [GATEWAY_NAME_LABEL]: gw.name,
      [MANAGED_BY_LABEL]: MANAGED_BY,
      [COMPONENT_LABEL]: component,
    },
    ...(annotations && Object.keys(annotations).length ? { annotations: { ...annotations } } : {}),
    ownerReferences: [ownerRef(gw)],
  };
}

/** Distinct data-plane ports of the listeners, sorted: one Service port each. */
export function servicePorts(listeners: GatewayRef["listeners"]) {
  const seen = new Map<
    string,
    { name: string; port: number; protocol: "TCP" | "UDP"; targetPort: number }
  >();
  for (const l of listeners) {
    const protocol = l.protocol === "UDP" ? "UDP" : "TCP";
    const key = `${protocol}/${l.port}`;
    if (!seen.has(key))
      seen.set(key, {
        name: `${protocol.toLowerCase()}-${l.port}`,
        port: l.port,
        protocol,
        targetPort: l.port,
      });
  }
  return [...seen.values()].sort((a, b) => a.port - b.port || a.protocol.localeCompare(b.protocol));
}

export function managementSecret(gw: GatewayRef, data: ManagementSecretData): KubeManifest {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: meta(gw, managementSecretName(gw.name), "proxy-tls"),
    type: "kubernetes.io/tls",
    stringData: { ...data },
  };
}

export function bootstrapConfigMap(gw: GatewayRef, bootstrap: PlainConfig): KubeManifest {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: meta(gw, bootstrapConfigMapName(gw.name), "proxy-bootstrap"),
    data: { ...bootstrapConfigMapData(bootstrap) },
  };
}

/**
 * What the last-good Secret is to hold: the sealed config a proxy of the Gateway accepted,
 * under the key of the proxy build it was made for; `config` absent when it cannot be stored
 * (too large for a Secret): new pods then start from the bootstrap config.
 */
export interface LastGoodContent {
  readonly key: string;
  readonly hash: string;
  /** The sealed bytes (may hold private keys: never logged). */
  readonly config?: Buffer;
}

/**
 * The Gateway's last-good Secret (workload/pod.ts mounts it). A Secret, never a ConfigMap: the
 * sealed config carries the private keys of the Gateway's TLS listeners.
 */
export function lastGoodSecret(gw: GatewayRef, content: LastGoodContent): KubeManifest {
  const m = meta(gw, lastGoodSecretName(gw.name), LAST_GOOD_COMPONENT);
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      ...m,
      annotations: {
        ...(m.annotations ?? {}),
        [LAST_GOOD_HASH_ANNOTATION]: content.hash,
        [LAST_GOOD_KEY_ANNOTATION]: content.key,
        [LAST_GOOD_STORED_ANNOTATION]: content.config ? "true" : "false",
      },
    },
    type: "Opaque",
    data: content.config ? { [content.key]: content.config.toString("base64") } : {},
  };
}

/** The proxies' workload: a Deployment (default) or a DaemonSet, as the settings say. */
export function proxyWorkload(
  gw: GatewayRef,
  s: ProxySettings,
  names: ProxyNames = proxyNames(gw.name),
  /** Start pods from the last-good Secret the controller keeps (managed proxies only). */
  options: { readonly lastGood: boolean } = { lastGood: true },
): KubeManifest {
  const selector = podSelector(gw.name);
  const lastGood = options.lastGood ? lastGoodKey(s) : undefined;
  const container = proxyContainer({ image: s.image, command: s.command, lastGoodKey: lastGood });
  const lowPorts = gw.listeners.some(l => l.port < FIRST_UNPRIVILEGED_PORT);
  const podSpec = {
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    securityContext: proxyPodSecurityContext(lowPorts),
    terminationGracePeriodSeconds: 30,
    affinity: s.affinity ?? {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: {
              topologyKey: "kubernetes.io/hostname",
              labelSelector: { matchLabels: selector },
            },
          },
        ],
      },
    },
    ...(s.nodeSelector ? { nodeSelector: { ...s.nodeSelector } } : {}),
    ...(s.tolerations ? { tolerations: s.tolerations.map(t => ({ ...t })) } : {}),
    containers: [
      {
        ...container,
        ports: [
          ...servicePorts(gw.containerListeners ?? gw.listeners).map(p => ({
            name: p.name,
            containerPort: p.port,
            protocol: p.protocol,
          })),
          ...(container.ports ?? []),
        ],
        securityContext: proxySecurityContext(lowPorts),
        ...(s.resources ? { resources: { ...s.resources } } : {}),
        livenessProbe: {
          tcpSocket: { port: DEFAULT_MANAGEMENT_PORT },
          periodSeconds: 10,
          failureThreshold: 3,
        },
      },
    ],
    volumes: proxyVolumes(gw.name, lastGood),
  };
  const template = {
    metadata: {
      labels: { ...(gw.infrastructure?.labels ?? {}), ...selector },
      ...(gw.infrastructure?.annotations
        ? { annotations: { ...gw.infrastructure.annotations } }
        : {}),
    },
    spec: podSpec,
  };
  // maxUnavailable 0 / maxSurge 1: a new proxy is programmed and Ready before an old one goes.
  const rollingUpdate = { maxUnavailable: 0, maxSurge: 1 };
  return s.kind === "DaemonSet"
    ? {
        apiVersion: "apps/v1",
        kind: "DaemonSet",
        metadata: meta(gw, names.proxy, "proxy"),
        spec: {
          selector: { matchLabels: selector },
          updateStrategy: { type: "RollingUpdate", rollingUpdate },
          template,
        },
      }
    : {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: meta(gw, names.proxy, "proxy"),
        spec: {
          replicas: s.replicas,
          selector: { matchLabels: selector },
          strategy: { type: "RollingUpdate", rollingUpdate },
          template,
        },
      };
}

/** The data-plane Service: the Gateway's address comes from its load balancer. */
export function proxyService(
  gw: GatewayRef,
  s: ProxySettings,
  names: ProxyNames = proxyNames(gw.name),
): KubeManifest {
  const ports = servicePorts(gw.listeners);
  const m = meta(gw, names.proxy, "proxy");
  const annotations = { ...(m.annotations ?? {}), ...(s.service.annotations ?? {}) };
  const request = requestedAddresses(gw.addresses, s.addresses);
  // A Gateway asking only for Cluster addresses gets a ClusterIP Service (routability.ts).
  const type = serviceTypeFor(request, s.serviceType);
  const requestedIP = type === "LoadBalancer" ? loadBalancerIP(request) : undefined;
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { ...m, ...(Object.keys(annotations).length ? { annotations } : {}) },
    spec: {
      type,
      selector: podSelector(gw.name),
      // A Service needs a port; a Gateway without listeners keeps a placeholder.
      ports: ports.length ? ports : [{ name: "none", port: 1, protocol: "TCP", targetPort: 1 }],
      ...(type === "ClusterIP"
        ? {}
        : { externalTrafficPolicy: s.service.externalTrafficPolicy ?? "Cluster" }),
      ...(type === "LoadBalancer" && s.service.loadBalancerClass
        ? { loadBalancerClass: s.service.loadBalancerClass }
        : {}),
      // A requested static address (the Gateway's, else the parameters'), see addresses.ts.
      ...(requestedIP ? { loadBalancerIP: requestedIP } : {}),
    },
  };
}

/** Headless admin Service: its EndpointSlices list every proxy pod, programmed or not. */
export function adminService(
  gw: GatewayRef,
  names: ProxyNames = proxyNames(gw.name),
): KubeManifest {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: meta(gw, names.admin, "proxy-admin"),
    spec: {
      clusterIP: "None",
      publishNotReadyAddresses: true,
      selector: podSelector(gw.name),
      ports: [
        {
          name: "admin",
          port: DEFAULT_MANAGEMENT_PORT,
          protocol: "TCP",
          targetPort: DEFAULT_MANAGEMENT_PORT,
        },
      ],
    },
  };
}

/**
 * The proxies' PodDisruptionBudget: voluntary disruptions (node drains) take at most one proxy
 * at a time. With more than one replica it is a minAvailable (replicas − 1, so the budget
 * follows a scale-down without a second write); one replica, or a DaemonSet, keeps
 * maxUnavailable 1 so a drain is never blocked for good.
 */
export function proxyDisruptionBudget(
  gw: GatewayRef,
  s: ProxySettings,
  names: ProxyNames = proxyNames(gw.name),
): KubeManifest {
  const budget =
    s.kind === "Deployment" && s.replicas > 1
      ? { minAvailable: s.replicas - 1 }
      : { maxUnavailable: 1 };
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: meta(gw, names.proxy, "proxy"),
    spec: { ...budget, selector: { matchLabels: podSelector(gw.name) } },
  };
}

/** Which pods run the controller (the only clients of the proxies' management port). */
export interface ControllerPeers {
  readonly namespace: string;
  readonly podLabels: Readonly<Record<string, string>>;
}

/** Pepr's watcher pods in pepr-system: where the controller runs once deployed. */
export const DEFAULT_CONTROLLER_PEERS: ControllerPeers = {
  namespace: "pepr-system",
  podLabels: { "pepr.dev/controller": "watcher" },
};

/**
 * The proxies' NetworkPolicy: the listeners' ports (and the readiness port the kubelet probes)
 * are open to everyone; the management port only to the controller's pods. Nothing else reaches
 * the proxies (the admin endpoint is a unix socket in the pod, on no port at all).
 */
export function proxyNetworkPolicy(
  gw: GatewayRef,
  controller: ControllerPeers = DEFAULT_CONTROLLER_PEERS,
  names: ProxyNames = proxyNames(gw.name),
): KubeManifest {
  const traffic = [
    ...servicePorts(gw.listeners).map(p => ({ port: p.port, protocol: p.protocol })),
    { port: DEFAULT_READINESS_PORT, protocol: "TCP" },
  ];
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: meta(gw, names.proxy, "proxy"),
    spec: {
      podSelector: { matchLabels: podSelector(gw.name) },
      policyTypes: ["Ingress"],
      ingress: [
        { ports: traffic },
        {
          from: [
            {
              namespaceSelector: {
                matchLabels: { "kubernetes.io/metadata.name": controller.namespace },
              },
              podSelector: { matchLabels: { ...controller.podLabels } },
            },
          ],
          ports: [{ port: DEFAULT_MANAGEMENT_PORT, protocol: "TCP" }],
        },
      ],
    },
  };
}
