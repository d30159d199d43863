/**
 * Bring-your-own proxy manifests (docs/proxies.md), made by the same functions that provision managed
 * proxies (capabilities/provision, capabilities/proxies): one source of truth for the container,
 * its probes, volumes, ports, anti-affinity and the bootstrap config with the mTLS management
 * listener. Pure; hack/templates.ts writes them.
 *
 * What differs from managed proxies, and why:
 * - names end in `-proxy…` instead of `-kengine…`, and nothing carries our managed-by label or
 *   an owner reference: the controller never touches (or deletes) these objects;
 * - both Services carry `gateway.kengine.io/owning-gateway: <gateway>`: the controller finds the
 *   pods through the one with the port named `admin`, and the Gateway's address on the other;
 * - a PodDisruptionBudget and a NetworkPolicy that admits the management port only from the
 *   controller's pods;
 * - a KengineParameters in mode External naming the Secret with the controller's client
 *   certificate (and the CA bundle), and a Gateway that uses it.
 */
import {
  DEFAULT_CONTROLLER_PEERS,
  GatewayRef,
  podManagementSpec,
  KubeManifest,
  adminService,
  bootstrapConfigMap,
  proxyDisruptionBudget,
  proxyNetworkPolicy,
  proxyService,
  proxyWorkload,
} from "../capabilities/workload";
import { stringify } from "yaml";
import { bootstrapConfig } from "../capabilities/caddy";
import { createAuthority, generateKeyPair, proxyServerNames } from "../capabilities/pki/pki";
import {
  DEFAULT_PROXY_SETTINGS,
  GATEWAY_NAME_LABEL,
  MANAGED_BY_LABEL,
  ProxyNames,
  ProxySettings,
} from "../capabilities/provision";

/** docs/proxies.md: the label that ties bring-your-own proxy Services to their Gateway. */
export const OWNING_GATEWAY_LABEL = "gateway.kengine.io/owning-gateway";
/** Labels of the controller's (Pepr watcher's) pods: the only clients of the management port. */
export const CONTROLLER_POD_LABELS = DEFAULT_CONTROLLER_PEERS.podLabels;
export const CONTROLLER_NAMESPACE = DEFAULT_CONTROLLER_PEERS.namespace;
/** Stands in for the admin CA in the committed examples: a proxy started with it fails closed. */
export const CA_PLACEHOLDER = "REPLACE-WITH-YOUR-ADMIN-CA--npm-run-templates----ca-file-ca.crt";

export interface TemplateInput {
  readonly gateway: string;
  readonly namespace: string;
  readonly kind: "Deployment" | "DaemonSet";
  readonly replicas?: number;
  readonly image?: string;
  readonly command?: readonly string[];
  readonly listeners: readonly { readonly port: number; readonly protocol: string }[];
  /** The admin CA (PEM): signs the proxies' serving and the controller's client certificate. */
  readonly caPem: string;
  readonly gatewayClassName?: string;
}

export const byoNames = (gateway: string) => ({
  workload: `${gateway}-proxy`,
  admin: `${gateway}-proxy-admin`,
  bootstrap: `${gateway}-proxy-bootstrap`,
  /** Serving certificate of the management listener (tls.crt, tls.key). */
  servingSecret: `${gateway}-proxy-tls`,
  /** The controller's client certificate for these proxies (tls.crt, tls.key, ca.crt). */
  clientSecret: `${gateway}-controller-client`,
  parameters: `${gateway}-proxies`,
});

type Mutable = { [key: string]: unknown };

/** Drops what marks an object as the controller's (owner reference, managed-by label). */
function userOwned(m: KubeManifest, name: string, extraLabels: Record<string, string> = {}) {
  const labels: Record<string, string> = { ...m.metadata.labels, ...extraLabels };
  delete labels[MANAGED_BY_LABEL];
  labels["app.kubernetes.io/part-of"] = "kengine-gateway";
  const metadata: Mutable = { ...m.metadata, name, labels };
  delete metadata.ownerReferences;
  return { ...m, metadata } as Mutable;
}

export function proxyTemplates(input: TemplateInput): Mutable[] {
  const n = byoNames(input.gateway);
  const ref: GatewayRef = {
    namespace: input.namespace,
    name: input.gateway,
    uid: "",
    listeners: input.listeners,
  };
  const settings: ProxySettings = {
    ...DEFAULT_PROXY_SETTINGS,
    kind: input.kind,
    replicas: input.replicas ?? DEFAULT_PROXY_SETTINGS.replicas,
    image: input.image ?? DEFAULT_PROXY_SETTINGS.image,
    command: input.command ?? DEFAULT_PROXY_SETTINGS.command,
  };
  const names: ProxyNames = { proxy: n.workload, admin: n.admin };
  const boot = bootstrapConfig(podManagementSpec(input.caPem));
  if (!boot.ok) throw new Error(`bootstrap config: ${boot.error.join("; ")}`);

  // The workload, with its volumes pointing at this setup's Secret and ConfigMap.
  // No last-good Secret: the controller keeps one only for the proxies it manages.
  const workload = userOwned(proxyWorkload(ref, settings, names, { lastGood: false }), n.workload);
  const spec = workload.spec as { template: { spec: { volumes: Mutable[] } } };
  spec.template.spec.volumes = spec.template.spec.volumes.map(v =>
    v.secret
      ? { ...v, secret: { ...(v.secret as Mutable), secretName: n.servingSecret } }
      : v.configMap
        ? { ...v, configMap: { name: n.bootstrap } }
        : v,
  );
  const owning = { [OWNING_GATEWAY_LABEL]: input.gateway };
  const common = {
    [GATEWAY_NAME_LABEL]: input.gateway,
    "app.kubernetes.io/part-of": "kengine-gateway",
  };

  return [
    {
      apiVersion: "gateway.kengine.io/v1alpha1",
      kind: "KengineParameters",
      metadata: { name: n.parameters, namespace: input.namespace },
      spec: { mode: "External", external: { clientCertificateSecretName: n.clientSecret } },
    },
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "Gateway",
      metadata: { name: input.gateway, namespace: input.namespace },
      spec: {
        gatewayClassName: input.gatewayClassName ?? "kengine",
        infrastructure: {
          parametersRef: {
            group: "gateway.kengine.io",
            kind: "KengineParameters",
            name: n.parameters,
          },
        },
        listeners: input.listeners.map(l => ({
          name: `${l.protocol.toLowerCase()}-${l.port}`,
          port: l.port,
          protocol: l.protocol,
        })),
      },
    },
    userOwned(bootstrapConfigMap(ref, boot.value), n.bootstrap),
    workload,
    // Data plane: the Gateway's address is this Service's load-balancer address.
    userOwned(proxyService(ref, settings, names), n.workload, owning),
    // Management: its EndpointSlices (port named `admin`) list every proxy pod, ready or not.
    userOwned(adminService(ref, names), n.admin, owning),
    // The same budget and policy as managed proxies: one proxy at a time; the management port
    // admits the controller's pods only.
    userOwned(proxyDisruptionBudget(ref, settings, names), n.workload, common),
    userOwned(
      proxyNetworkPolicy(
        ref,
        { namespace: CONTROLLER_NAMESPACE, podLabels: CONTROLLER_POD_LABELS },
        names,
      ),
      n.workload,
      common,
    ),
  ];
}

/**
 * cert-manager resources for the admin channel: a self-signed root, a CA Issuer from it, the
 * proxies' serving certificate (the names the controller dials) and the controller's client
 * certificate. cert-manager writes ca.crt into both Secrets.
 */
export function certManagerTemplates(gateway: string, namespace: string): Mutable[] {
  const n = byoNames(gateway);
  const caSecret = `${gateway}-admin-ca`;
  const meta = (name: string) => ({ name, namespace });
  return [
    {
      apiVersion: "cert-manager.io/v1",
      kind: "Issuer",
      metadata: meta(`${gateway}-admin-selfsigned`),
      spec: { selfSigned: {} },
    },
    {
      apiVersion: "cert-manager.io/v1",
      kind: "Certificate",
      metadata: meta(caSecret),
      spec: {
        isCA: true,
        commonName: `${gateway} kengine admin CA`,
        secretName: caSecret,
        duration: "87600h",
        privateKey: { algorithm: "ECDSA", size: 256 },
        issuerRef: { name: `${gateway}-admin-selfsigned`, kind: "Issuer" },
      },
    },
    {
      apiVersion: "cert-manager.io/v1",
      kind: "Issuer",
      metadata: meta(caSecret),
      spec: { ca: { secretName: caSecret } },
    },
    {
      apiVersion: "cert-manager.io/v1",
      kind: "Certificate",
      metadata: meta(n.servingSecret),
      spec: {
        secretName: n.servingSecret,
        dnsNames: [...proxyServerNames(n.admin, namespace)],
        usages: ["server auth", "digital signature", "key encipherment"],
        duration: "2160h",
        renewBefore: "720h",
        privateKey: { algorithm: "ECDSA", size: 256, rotationPolicy: "Always" },
        issuerRef: { name: caSecret, kind: "Issuer" },
      },
    },
    {
      apiVersion: "cert-manager.io/v1",
      kind: "Certificate",
      metadata: meta(n.clientSecret),
      spec: {
        secretName: n.clientSecret,
        commonName: "kengine-gateway controller",
        usages: ["client auth", "digital signature", "key encipherment"],
        duration: "2160h",
        renewBefore: "720h",
        privateKey: { algorithm: "ECDSA", size: 256, rotationPolicy: "Always" },
        issuerRef: { name: caSecret, kind: "Issuer" },
      },
    },
  ];
}

export const yamlDocs = (header: string, objects: readonly unknown[]): string =>
  header + objects.map(o => stringify(o, { lineWidth: 0 })).join("---\n");

const generatedBy =
  "# Generated by `npm run templates` (hack/templates.ts) from the code that provisions managed proxies.\n";
export const headerFor = (what: string): string => `# ${what}\n${generatedBy}`;

/** Renders with a throwaway CA, then puts the placeholder where its certificate was. */
function withPlaceholderCa(input: Omit<TemplateInput, "caPem">): unknown[] {
  const ca = createAuthority({
    commonName: "placeholder",
    keys: generateKeyPair(),
    notBefore: new Date(0),
    lifetimeDays: 1,
  });
  if (!ca.ok) throw new Error(ca.error);
  const der = ca.value.certificateDer.toString("base64");
  return JSON.parse(
    JSON.stringify(proxyTemplates({ ...input, caPem: ca.value.certificatePem })).replaceAll(
      der,
      CA_PLACEHOLDER,
    ),
  ) as unknown[];
}

/** The committed examples in deploy/proxy/, by file name (Gateway edge, namespace edge). */
export function exampleFiles(): Record<string, string> {
  const base = { gateway: "edge", namespace: "edge", listeners: [{ port: 80, protocol: "HTTP" }] };
  const note =
    "Example for Gateway edge in namespace edge; the admin CA is a placeholder: render your own with\n" +
    "# npm run templates -- --gateway NAME --namespace NS --ca-file ca.crt --out DIR (deploy/proxy/README.md).";
  return {
    "deployment.yaml": yamlDocs(
      headerFor(`Bring-your-own proxies as a Deployment. ${note}`),
      withPlaceholderCa({ ...base, kind: "Deployment", replicas: 3 }),
    ),
    "daemonset.yaml": yamlDocs(
      headerFor(`Bring-your-own proxies as a DaemonSet (one per node). ${note}`),
      withPlaceholderCa({ ...base, kind: "DaemonSet" }),
    ),
    "cert-manager.yaml": yamlDocs(
      headerFor(
        "cert-manager Issuers and Certificates for the admin channel of Gateway edge (namespace edge).",
      ),
      certManagerTemplates("edge", "edge"),
    ),
  };
}
