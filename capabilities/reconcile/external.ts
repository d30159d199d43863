/**
 * Bring-your-own proxies (docs/proxies.md): the proxy pods behind the Services labelled
 * `gateway.kengine.io/owning-gateway: <gateway>` in the Gateway's namespace, and the admin-channel
 * credentials their parameters name. Pure functions of the snapshot; a missing or unusable Secret
 * is a problem to report, never a crash.
 */
import { X509Certificate, createPrivateKey } from "node:crypto";
import type { ExternalProxySettings } from "../provision";
import { ClientCredentials, channelKey } from "../proxies";
import { SecretPem } from "../pki/secret";
import type { KubeObject, Snapshot } from "../snapshot";

export interface ExternalChannel {
  readonly key: string;
  readonly credentials: ClientCredentials;
  /** The CA certificates the proxies trust for client certificates (and that signed their serving certificates). */
  readonly caPems: readonly string[];
  /** The Secrets read, "namespace/name" (a change to one of them rebuilds). */
  readonly secrets: readonly string[];
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The certificates of a PEM bundle, each parsed (a bad one is a problem). */
export function splitCertificates(bundle: string): { pems: string[]; problem?: string } {
  const pems = [...bundle.matchAll(PEM_CERT)].map(m => `${m[0]}\n`);
  if (pems.length === 0) return { pems, problem: "holds no PEM certificate" };
  for (const [i, pem] of pems.entries()) {
    try {
      new X509Certificate(pem);
    } catch {
      return { pems, problem: `certificate ${i + 1} does not parse` };
    }
  }
  return { pems };
}

const secretData = (
  snapshot: Snapshot,
  namespace: string,
  name: string,
): Record<string, string> | undefined => {
  const s = snapshot.objects.Secret.get(`${namespace}/${name}`) as
    | (KubeObject & { data?: Record<string, string> })
    | undefined;
  if (!s) return undefined;
  return Object.fromEntries(
    Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]),
  );
};

/** The admin-channel identity for a Gateway's own proxies, or why there is none. */
export function externalChannel(
  snapshot: Snapshot,
  namespace: string,
  external: ExternalProxySettings | undefined,
  now: Date,
): { ok: true; value: ExternalChannel } | { ok: false; error: string } {
  const name = external?.clientCertificateSecretName;
  if (!name)
    return {
      ok: false,
      error:
        "KengineParameters mode External needs external.clientCertificateSecretName (the admin channel's client certificate)",
    };
  const where = `Secret ${namespace}/${name}`;
  const data = secretData(snapshot, namespace, name);
  if (!data) return { ok: false, error: `${where} (admin client certificate) not found` };
  const crt = data["tls.crt"];
  const key = data["tls.key"];
  if (!crt || !key) return { ok: false, error: `${where} lacks tls.crt or tls.key` };
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(crt);
  } catch {
    return { ok: false, error: `${where}: tls.crt is not a PEM certificate` };
  }
  try {
    if (!cert.checkPrivateKey(createPrivateKey(key)))
      return { ok: false, error: `${where}: tls.key does not match tls.crt` };
  } catch {
    return { ok: false, error: `${where}: tls.key is not a PEM private key` };
  }
  if (new Date(cert.validTo) <= now)
    return { ok: false, error: `${where}: tls.crt expired at ${cert.validTo}` };
  const secrets = [`${namespace}/${name}`];
  let caBundle = data["ca.crt"];
  let caWhere = `${where} ca.crt`;
  if (external?.caSecretName) {
    caWhere = `Secret ${namespace}/${external.caSecretName} ca.crt`;
    secrets.push(`${namespace}/${external.caSecretName}`);
    const ca = secretData(snapshot, namespace, external.caSecretName);
    if (!ca)
      return {
        ok: false,
        error: `Secret ${namespace}/${external.caSecretName} (admin CA) not found`,
      };
    caBundle = ca["ca.crt"];
  }
  if (!caBundle) return { ok: false, error: `${caWhere} is missing` };
  const cas = splitCertificates(caBundle);
  if (cas.problem) return { ok: false, error: `${caWhere} ${cas.problem}` };
  const credentials: ClientCredentials = {
    caPem: cas.pems.join(""),
    certificatePem: crt,
    privateKey: new SecretPem(key),
  };
  return {
    ok: true,
    value: { key: channelKey(credentials), credentials, caPems: cas.pems, secrets },
  };
}
