/**
 * Everything one Gateway of ours needs from the controller, decided from the snapshot: the
 * objects to provision, the sealed config for its proxies, the proxy pods to push it to, and
 * the addresses of its Service. Pure but for issuing a serving certificate when none is reusable
 * (injected, so tests can fix it) and a module-level memo of each sealed config per IR object
 * and management spec, with a count of renders (sealedRenders, for tests and build timings).
 */
import {
  bootstrapConfigMapName,
  managementSecretName,
  podManagementSpec,
  ControllerPeers,
  DEFAULT_MANAGEMENT_PORT,
  DEFAULT_READINESS_PORT,
  GatewayRef,
  KubeManifest,
  ManagementSecretData,
  adminService,
  bootstrapConfigMap,
  lastGoodKey,
  lastGoodSecretName,
  managementSecret,
  proxyDisruptionBudget,
  proxyNetworkPolicy,
  proxyService,
  proxyWorkload,
} from "../workload";
import { X509Certificate, createPublicKey } from "node:crypto";
import { DEFAULT_PROXY_FLAVOR, capabilitiesOf } from "../flavor/proxy-flavor";
import type { GatewayIR } from "../ir";
import { fleetOwner } from "../ingress/fleet";
import { Target } from "../proxies";
import {
  CaddyOptions,
  ManagementSpec,
  SealedConfig,
  bootstrapConfig,
  managementCertificateLoader,
  managementServer,
  configText,
  sealBuilt,
  sealConfig,
  toCaddyConfig,
} from "../caddy";
import {
  Authority,
  CLOCK_SKEW_MS,
  LEAF_LIFETIME_DAYS,
  generateKeyPair,
  issueServerCertificate,
  proxyServerName,
  proxyServerNames,
  renewalDue,
} from "../pki/pki";
import { SecretPem } from "../pki/secret";
import {
  OWNING_GATEWAY_LABEL,
  ProxySettings,
  proxyNames,
  resolveSettings,
  addressOutcome,
  requestedAddresses,
  serviceTypeFor,
} from "../provision";
import type { AddressOutcome } from "../provision";
import type { KubeObject, Snapshot } from "../snapshot";
import type { GatewayAddress } from "../status";
import { proxyEndpoints, externalEndpoints, owningServices } from "./endpoints";
import { caBundle } from "../pki/authority";
import { ExternalChannel, externalChannel } from "./external";
import { StoredLastGood, storedLastGood } from "./last-good";

export { proxyEndpoints } from "./endpoints";
import { serviceAddresses } from "../status/programmed";

export interface GatewayPlan {
  /** "namespace/name" of the Gateway. */
  readonly key: string;
  readonly manifests: readonly KubeManifest[];
  readonly targets: readonly Target[];
  /** The proxy pods found (also when no config could be made). */
  readonly proxies: readonly {
    readonly name: string;
    readonly pod: string;
    readonly uid?: string;
    readonly address: string;
  }[];
  readonly desiredHash: string | undefined;
  /** Size of the sealed config, when one could be made. */
  readonly configBytes?: number;
  readonly configProblem: string | undefined;
  readonly addresses: readonly GatewayAddress[];
  /** Why the requested static addresses are not (yet) the Gateway's (provision/addresses.ts). */
  readonly addressProblem?: AddressOutcome["problem"];
  /** GEP-5093's AddressesAssigned, once decided (provision/routability.ts). */
  readonly addressAssignment?: AddressOutcome["assignment"];
  /**
   * The proxies' Service to delete before applying it again: it requests another address than
   * the Gateway now asks for and the load balancer has not given it that one (load balancers
   * assign an address when a Service is created). Deleted only if its uid still matches.
   */
  readonly replaceService?: {
    /** The address it is re-created for (one re-creation per Service and address). */
    readonly address: string;
    readonly namespace: string;
    readonly name: string;
    readonly uid: string;
  };
  readonly serviceExists: boolean;
  /** Programmed's message while there is no proxies' Service (bring-your-own wording). */
  readonly noServiceMessage?: string;
  /** Bring-your-own proxies: the client identity to reach them with (absent: the controller's own). */
  readonly channel?: ExternalChannel;
  /** Secrets the plan read besides our own ("namespace/name"): a change to one of them rebuilds. */
  readonly secrets: readonly string[];
  /** Objects of ours that must not exist any more (e.g. the Deployment after a switch to DaemonSet). */
  readonly stale: readonly {
    readonly apiVersion: string;
    readonly kind: string;
    readonly namespace: string;
    readonly name: string;
    /** Delete only if it carries our managed-by label (the name may be the user's). */
    readonly onlyIfOurs?: boolean;
  }[];
  /** Parameters references that did not resolve (the defaults were used instead). */
  readonly settingsProblems: readonly string[];
  /**
   * Managed proxies: what the last-good Secret is for (reconcile/last-good.ts): the Gateway, the
   * proxy build's Secret key, the sealed config to store once a proxy accepted it, and what the
   * Secret holds now.
   */
  readonly lastGood?: {
    readonly ref: GatewayRef;
    readonly key: string;
    readonly config: SealedConfig | undefined;
    readonly stored: StoredLastGood | undefined;
  };
}

export type IssueServing = (
  ca: Authority,
  dnsNames: readonly string[],
  now: Date,
) => ManagementSecretData;

export const issueServing: IssueServing = (ca, dnsNames, now) => {
  const issued = issueServerCertificate(ca, {
    commonName: dnsNames[0]!.replace(/^\*\./, "").slice(0, 64),
    dnsNames,
    keys: generateKeyPair(),
    notBefore: new Date(now.getTime() - CLOCK_SKEW_MS),
    lifetimeDays: LEAF_LIFETIME_DAYS,
  });
  if (!issued.ok) throw new Error(`cannot issue the proxies' serving certificate: ${issued.error}`);
  return {
    "tls.crt": issued.value.certificatePem,
    "tls.key": issued.value.privateKey.reveal(),
    "ca.crt": ca.certificatePem,
  };
};

interface GatewayObject extends KubeObject {
  readonly spec: {
    readonly listeners?: readonly { readonly port: number; readonly protocol: string }[];
    readonly addresses?: GatewayRef["addresses"];
    readonly infrastructure?: GatewayRef["infrastructure"] & {
      readonly parametersRef?: {
        readonly group?: string;
        readonly kind?: string;
        readonly name?: string;
      };
    };
  };
}

const decode = (b64: string | undefined) =>
  b64 === undefined ? undefined : Buffer.from(b64, "base64").toString("utf8");

/** The serving certificate already in the cluster (or made earlier), if it is still good. */
function reusableServing(
  stored: ManagementSecretData | undefined,
  ca: Authority,
  now: Date,
  bundle: string,
): ManagementSecretData | undefined {
  if (!stored?.["tls.crt"] || !stored["tls.key"] || stored["ca.crt"] !== bundle) return undefined;
  try {
    const cert = new X509Certificate(stored["tls.crt"]);
    if (!cert.verify(createPublicKey(ca.signingKey))) return undefined;
    if (renewalDue({ notBefore: new Date(cert.validFrom), notAfter: new Date(cert.validTo) }, now))
      return undefined;
    return stored;
  } catch {
    return undefined;
  }
}

/** The management TLS data stored in the cluster for a Gateway (decoded), if any. */
export function storedServing(
  snapshot: Snapshot,
  namespace: string,
  gatewayName: string,
): ManagementSecretData | undefined {
  const s = snapshot.objects.Secret.get(`${namespace}/${managementSecretName(gatewayName)}`) as
    | (KubeObject & { data?: Record<string, string> })
    | undefined;
  if (!s?.data) return undefined;
  const [crt, key, ca] = [
    decode(s.data["tls.crt"]),
    decode(s.data["tls.key"]),
    decode(s.data["ca.crt"]),
  ];
  return crt && key && ca ? { "tls.crt": crt, "tls.key": key, "ca.crt": ca } : undefined;
}

export interface PlanInput {
  readonly ir: GatewayIR;
  readonly snapshot: Snapshot;
  readonly ca: Authority;
  /** Every CA the proxies must trust for client certificates (a CA rotation: two); default `ca`. */
  readonly trustedCaPems?: readonly string[];
  /** Settings before any KengineParameters apply. */
  readonly defaults?: ProxySettings;
  readonly now: Date;
  /** Serving data made earlier by this replica but not yet seen in the snapshot. */
  readonly pendingServing?: ManagementSecretData;
  readonly issue?: IssueServing;
  /** The controller's pods: the NetworkPolicy opens the management port to them alone. */
  readonly controller?: ControllerPeers;
}

/**
 * The Caddy config for a Gateway's proxies, sealed with their management spec; cached per IR
 * object and spec (a reused translation keeps its IR objects, so builds that follow proxy
 * pushes or status echoes do not render and seal again).
 */
const sealedCache = new WeakMap<GatewayIR, { readonly spec: string; readonly sealed: Sealed }>();
type Sealed = ReturnType<typeof sealConfig>;
let renders = 0;

/** How many configs were rendered and sealed so far (cache misses; build-timings counts them). */
export const sealedRenders = (): number => renders;

export function sealedFor(ir: GatewayIR, spec: ManagementSpec): Sealed {
  const specKey = JSON.stringify(spec);
  const hit = sealedCache.get(ir);
  if (hit && hit.spec === specKey) return hit.sealed;
  renders++;
  const sealed = sealGatewayConfig(ir, spec);
  sealedCache.set(ir, { spec: specKey, sealed });
  return sealed;
}

/**
 * A Gateway's Caddy config sealed for its proxies' flavour: what the controller pushes (the
 * flavour decides how traffic metrics are switched on, caddy/seal.ts). `render` only for
 * tests that load it into a local proxy (loopback bind host, moved ports).
 */
export function sealGatewayConfig(
  ir: GatewayIR,
  spec: ManagementSpec,
  render: Omit<CaddyOptions, "management"> = {},
): Sealed {
  const config = gatewayCaddyConfig(ir, spec, render);
  // Compact JSON in construction order (deterministic): renderCaddyJSON's sorted, indented
  // text is for reading goldens.
  return sealBuilt(config, configText(config), spec, {
    trafficMetrics: capabilitiesOf(ir.flavor ?? DEFAULT_PROXY_FLAVOR).appMetrics ? "app" : "server",
  });
}

/** The sealed bytes' length, without making them when the seal knows it. */
const sizeOf = (c: SealedConfig): number => c.size ?? c.bytes.length;

/** A Gateway's Caddy config with its proxies' management server, before sealing. */
export function gatewayCaddyConfig(
  ir: GatewayIR,
  spec: ManagementSpec,
  render: Omit<CaddyOptions, "management"> = {},
): ReturnType<typeof toCaddyConfig> {
  const loader = managementCertificateLoader(spec);
  return toCaddyConfig(ir, {
    ...render,
    management: {
      adminListen: spec.adminAddress,
      server: managementServer(spec) as Record<string, never>,
      ...(loader.key === "load_pem"
        ? { loadPem: [loader.entry as { certificate: string; key: string; tags: string[] }] }
        : { loadFiles: [loader.entry as Record<string, never>] }),
    },
  });
}

/** Bring your own proxies: nothing to provision; push to the pods behind the owning Services. */
function planExternal(
  input: PlanInput,
  settings: ProxySettings,
  settingsProblems: readonly string[],
): GatewayPlan {
  const { ir, snapshot, now } = input;
  const key = `${ir.namespace}/${ir.name}`;
  const names = proxyNames(ir.name);
  const channel = externalChannel(snapshot, ir.namespace, settings.external, now);
  const endpoints = externalEndpoints(snapshot, ir.namespace, ir.name);
  const services = owningServices(snapshot, ir.namespace, ir.name);
  const gw = snapshot.objects.Gateway.get(key) as GatewayObject | undefined;
  const outcome = addressOutcome(
    requestedAddresses(gw?.spec.addresses, settings.addresses),
    services.flatMap(svc => serviceAddresses(svc as Parameters<typeof serviceAddresses>[0])),
    {
      name: services.map(svc => `${svc.metadata.namespace}/${svc.metadata.name}`).join(", "),
      clusterIP: services
        .map(svc => (svc as { spec?: { clusterIP?: string } }).spec?.clusterIP)
        .find(ip => ip !== undefined && ip !== "None"),
    },
    false,
  );
  // Every pod of a Gateway gets the same bytes: the management port of the first one found.
  const port = endpoints[0]?.port ?? DEFAULT_MANAGEMENT_PORT;
  const sealed = channel.ok
    ? sealedFor(
        ir,
        podManagementSpec(channel.value.caPems, {
          management: port,
          readiness: DEFAULT_READINESS_PORT,
        }),
      )
    : undefined;
  const targets: Target[] =
    channel.ok && sealed?.ok
      ? endpoints.map(e => ({
          endpoint: {
            name: `${ir.namespace}/${e.pod}`,
            address: e.address,
            port: e.port,
            serverName: proxyServerName(e.pod, e.service, ir.namespace),
            channel: channel.value.key,
          },
          config: sealed.value,
        }))
      : [];
  const configProblem = !channel.ok
    ? channel.error
    : sealed && !sealed.ok
      ? `the proxy configuration is not safe to load: ${sealed.error.join("; ")}`
      : undefined;
  const managed = (apiVersion: string, kind: string, name: string) => ({
    apiVersion,
    kind,
    namespace: ir.namespace,
    name,
    onlyIfOurs: true,
  });
  return {
    key,
    manifests: [],
    targets,
    proxies: endpoints.map(e => ({
      name: `${ir.namespace}/${e.pod}`,
      pod: e.pod,
      uid: e.uid,
      address: `${e.address}:${e.port}`,
    })),
    desiredHash: sealed?.ok ? sealed.value.hash : undefined,
    configBytes: sealed?.ok ? sizeOf(sealed.value) : undefined,
    configProblem,
    addresses: outcome.addresses,
    addressProblem: outcome.problem,
    addressAssignment: outcome.assignment,
    serviceExists: services.length > 0,
    noServiceMessage: `no Service labelled ${OWNING_GATEWAY_LABEL}=${ir.name} in namespace ${ir.namespace} (the Gateway's parameters say mode External)`,
    channel: channel.ok ? channel.value : undefined,
    secrets: channel.ok
      ? channel.value.secrets
      : [settings.external?.clientCertificateSecretName, settings.external?.caSecretName]
          .filter((n): n is string => !!n)
          .map(n => `${ir.namespace}/${n}`),
    // A switch from managed to external removes what we had provisioned.
    stale: [
      managed("apps/v1", "Deployment", names.proxy),
      managed("apps/v1", "DaemonSet", names.proxy),
      managed("v1", "Service", names.proxy),
      managed("v1", "Service", names.admin),
      managed("v1", "Secret", managementSecretName(ir.name)),
      managed("v1", "ConfigMap", bootstrapConfigMapName(ir.name)),
      managed("v1", "Secret", lastGoodSecretName(ir.name)),
      managed("policy/v1", "PodDisruptionBudget", names.proxy),
      managed("networking.k8s.io/v1", "NetworkPolicy", names.proxy),
    ],
    settingsProblems,
  };
}

/**
 * The ports the proxies serve: the Gateway's own listeners, and the ports of the servers the
 * translation made for it, which adds those only attached ListenerSets open (an Ingress's
 * `tls` listeners among them). The pod template names only the Gateway's own
 * (`containerListeners`).
 */
function proxyListeners(
  gw: GatewayObject | undefined,
  ir: GatewayIR,
): Pick<GatewayRef, "listeners" | "containerListeners"> {
  const own = (gw?.spec.listeners ?? []).map(l => ({ port: l.port, protocol: l.protocol }));
  return {
    listeners: [
      ...own,
      ...ir.httpServers.map(s => ({ port: s.port, protocol: s.protocol })),
      ...ir.l4Servers.map(s => ({ port: s.port, protocol: s.protocol })),
    ],
    containerListeners: own,
  };
}

export function planGateway(
  input: PlanInput,
): GatewayPlan & { readonly serving?: ManagementSecretData } {
  const { ir, snapshot, ca, now } = input;
  const key = `${ir.namespace}/${ir.name}`;
  const gw = snapshot.objects.Gateway.get(key) as GatewayObject | undefined;
  const names = proxyNames(ir.name);
  const ref: GatewayRef = {
    namespace: ir.namespace,
    name: ir.name,
    uid: gw?.metadata.uid ?? "",
    ...(fleetOwner(gw) && { owner: fleetOwner(gw) }),
    ...proxyListeners(gw, ir),
    infrastructure: gw?.spec.infrastructure,
    addresses: gw?.spec.addresses,
  };
  const gatewayClass = snapshot.objects.GatewayClass.get(ir.gatewayClassName);
  const { settings, problems: settingsProblems } = resolveSettings(
    snapshot,
    gatewayClass,
    gw ?? { metadata: {} },
    input.defaults,
  );
  if (settings.mode === "External") return planExternal(input, settings, settingsProblems);
  const trusted = input.trustedCaPems ?? [ca.certificatePem];
  const spec: ManagementSpec = podManagementSpec(trusted.length === 1 ? trusted[0]! : trusted);
  // ca.crt: the bundle the serving certificate is checked against (every CA being trusted)
  const bundle = caBundle(trusted);
  const serving = reusableServing(
    storedServing(snapshot, ir.namespace, ir.name),
    ca,
    now,
    bundle,
  ) ??
    reusableServing(input.pendingServing, ca, now, bundle) ?? {
      ...(input.issue ?? issueServing)(ca, proxyServerNames(names.admin, ir.namespace), now),
      "ca.crt": bundle,
    };

  const boot = bootstrapConfig(spec);
  if (!boot.ok) throw new Error(`bootstrap config for ${key}: ${boot.error.join("; ")}`);
  const manifests = [
    managementSecret(ref, serving),
    bootstrapConfigMap(ref, boot.value),
    proxyWorkload(ref, settings),
    proxyService(ref, settings),
    adminService(ref),
    proxyDisruptionBudget(ref, settings),
    proxyNetworkPolicy(ref, input.controller),
  ];

  // Pushed configs carry the serving certificate inline (inside the mTLS channel, never on the
  // proxy's disk: persist is off): a renewed certificate is a new config, pushed to every proxy at
  // once, without waiting for the kubelet to refresh the mounted Secret. The bootstrap config
  // (above) loads the mounted files, so the ConfigMap holds no private key.
  const sealed = sealedFor(ir, {
    ...spec,
    serverCertificate: {
      kind: "pem",
      certificatePem: serving["tls.crt"],
      privateKey: new SecretPem(serving["tls.key"]),
    },
  });
  const endpoints = proxyEndpoints(snapshot, ir.namespace, names.admin);
  const targets: Target[] = sealed.ok
    ? endpoints.map(e => ({
        endpoint: {
          name: `${ir.namespace}/${e.pod}`,
          address: e.address,
          port: e.port,
          serverName: proxyServerName(e.pod, names.admin, ir.namespace),
        },
        config: sealed.value,
      }))
    : [];
  const svc = snapshot.objects.Service.get(`${ir.namespace}/${names.proxy}`) as
    | (KubeObject & { spec?: { type?: string; loadBalancerIP?: string; clusterIP?: string } })
    | undefined;
  const request = requestedAddresses(gw?.spec.addresses, settings.addresses);
  const assigned = serviceAddresses(svc as Parameters<typeof serviceAddresses>[0]);
  const desired = (proxyService(ref, settings).spec as { loadBalancerIP?: string }).loadBalancerIP;
  const outcome = addressOutcome(
    request,
    assigned,
    {
      name: `${ir.namespace}/${names.proxy}`,
      type: serviceTypeFor(request, settings.serviceType),
      loadBalancerIP: svc?.spec?.loadBalancerIP,
      clusterIP: svc?.spec?.clusterIP,
    },
    true,
  );
  const replace =
    svc?.metadata.uid &&
    desired !== undefined &&
    svc.spec?.loadBalancerIP !== desired &&
    !assigned.some(a => a.value === desired);
  return {
    key,
    manifests,
    targets,
    proxies: endpoints.map(e => ({
      name: `${ir.namespace}/${e.pod}`,
      pod: e.pod,
      uid: e.uid,
      address: `${e.address}:${e.port}`,
    })),
    desiredHash: sealed.ok ? sealed.value.hash : undefined,
    configBytes: sealed.ok ? sizeOf(sealed.value) : undefined,
    configProblem: sealed.ok
      ? undefined
      : `the proxy configuration is not safe to load: ${sealed.error.join("; ")}`,
    addresses: outcome.addresses,
    addressProblem: outcome.problem,
    addressAssignment: outcome.assignment,
    ...(replace
      ? {
          replaceService: {
            namespace: ir.namespace,
            name: names.proxy,
            uid: svc.metadata.uid!,
            address: desired,
          },
        }
      : {}),
    serviceExists: svc !== undefined,
    secrets: [],
    stale: [
      {
        apiVersion: "apps/v1",
        kind: settings.kind === "DaemonSet" ? "Deployment" : "DaemonSet",
        namespace: ir.namespace,
        name: names.proxy,
      },
    ],
    settingsProblems,
    lastGood: {
      ref,
      key: lastGoodKey(settings),
      config: sealed.ok ? sealed.value : undefined,
      stored: storedLastGood(
        snapshot.objects.Secret.get(`${ir.namespace}/${lastGoodSecretName(ir.name)}`),
      ),
    },
    serving,
  };
}
