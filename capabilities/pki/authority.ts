/**
 * The controller's CA for the proxies' admin channel: one Secret in the controller's namespace,
 * created by whichever replica starts first (a 409 means another did: read theirs). Each replica
 * issues its own short-lived client certificate from it, in memory.
 */
import { KubeClient, statusOf } from "../kube/client";
import {
  Authority,
  CA_LIFETIME_DAYS,
  CLOCK_SKEW_MS,
  ClientCredentials,
  createAuthority,
  generateKeyPair,
  issueClientCertificate,
  loadAuthority,
} from "./pki";

export const CA_SECRET_NAME = "kengine-gateway-admin-ca";

interface SecretObject {
  readonly data?: Record<string, string>;
}

const secretPath = (ns: string, name = "") =>
  `/api/v1/namespaces/${encodeURIComponent(ns)}/secrets${name ? `/${encodeURIComponent(name)}` : ""}`;

async function readAuthority(kube: KubeClient, namespace: string): Promise<Authority | undefined> {
  let secret: SecretObject;
  try {
    secret = await kube.request<SecretObject>("GET", secretPath(namespace, CA_SECRET_NAME));
  } catch (e) {
    if (statusOf(e) === 404) return undefined;
    throw e;
  }
  const cert = secret.data?.["tls.crt"];
  const key = secret.data?.["tls.key"];
  if (!cert || !key)
    throw new Error(`Secret ${namespace}/${CA_SECRET_NAME} lacks tls.crt or tls.key`);
  const loaded = loadAuthority(
    Buffer.from(cert, "base64").toString("utf8"),
    Buffer.from(key, "base64").toString("utf8"),
  );
  if (!loaded.ok) throw new Error(`Secret ${namespace}/${CA_SECRET_NAME}: ${loaded.error}`);
  return loaded.value;
}

/** PEM certificates as one bundle (each ends with a newline; one CA gives its PEM unchanged). */
export const caBundle = (pems: readonly string[]): string =>
  pems.map(p => (p.endsWith("\n") ? p : `${p}\n`)).join("");

/** Reads the CA from its Secret, creating both if missing. */
export async function ensureAuthority(
  kube: KubeClient,
  namespace: string,
  now = new Date(),
): Promise<Authority> {
  const existing = await readAuthority(kube, namespace);
  if (existing) return existing;
  const created = createAuthority({
    commonName: "kengine-gateway admin CA",
    keys: generateKeyPair(),
    notBefore: new Date(now.getTime() - CLOCK_SKEW_MS),
    lifetimeDays: CA_LIFETIME_DAYS,
  });
  if (!created.ok) throw new Error(`cannot create the admin CA: ${created.error}`);
  const ca = created.value;
  try {
    await kube.request("POST", secretPath(namespace), {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: CA_SECRET_NAME,
        namespace,
        labels: { "app.kubernetes.io/managed-by": "kengine-gateway" },
      },
      type: "kubernetes.io/tls",
      stringData: { "tls.crt": ca.certificatePem, "tls.key": ca.privateKey.reveal() },
    });
    return ca;
  } catch (e) {
    if (statusOf(e) !== 409) throw e;
    const theirs = await readAuthority(kube, namespace);
    if (!theirs)
      throw new Error(`Secret ${namespace}/${CA_SECRET_NAME} vanished while creating it`, {
        cause: e,
      });
    return theirs;
  }
}

/**
 * This replica's client identity for the admin channel (valid 30 days; re-issued on restart),
 * signed by `ca`; the proxies' serving certificates are verified against `trusted` (every CA of
 * a rotation in progress, rotation.ts).
 */
export function clientCredentials(
  ca: Authority,
  identity: string,
  now = new Date(),
  trusted: readonly string[] = [ca.certificatePem],
): ClientCredentials {
  const issued = issueClientCertificate(ca, {
    commonName: `kengine-gateway controller ${identity}`.slice(0, 64),
    keys: generateKeyPair(),
    notBefore: new Date(now.getTime() - CLOCK_SKEW_MS),
    lifetimeDays: 30,
  });
  if (!issued.ok)
    throw new Error(`cannot issue the controller's client certificate: ${issued.error}`);
  return {
    caPem: caBundle(trusted),
    certificatePem: issued.value.certificatePem,
    privateKey: issued.value.privateKey,
  };
}
