/**
 * ClusterTrustBundle references in `caCertificateRefs` (Gateway API v1.7, feature
 * ClusterTrustBundle): Gateway frontend client-certificate validation and BackendTLSPolicy.
 * A reference names the cluster-scoped bundle (`certificates.k8s.io`, kind
 * `ClusterTrustBundle`, no namespace, no ReferenceGrant); its `spec.trustBundle` is PEM. On a
 * cluster that does not serve the API the bundle is simply never found (not resolved).
 */
import { X509Certificate } from "node:crypto";
import { ClusterTrustBundle, Snapshot } from "../snapshot";

export const TRUST_BUNDLE_GROUP = "certificates.k8s.io";
export const TRUST_BUNDLE_KIND = "ClusterTrustBundle";

/** Whether a caCertificateRef names a ClusterTrustBundle. */
export function isTrustBundleRef(ref: {
  readonly group?: string;
  readonly kind?: string;
}): boolean {
  return (ref.group ?? "") === TRUST_BUNDLE_GROUP && ref.kind === TRUST_BUNDLE_KIND;
}

/** The CA certificates (base64 DER) of the bundle a reference names, or why there are none. */
export function trustBundleCertificates(
  s: Snapshot,
  ref: { readonly name: string; readonly namespace?: string },
): { ok: true; value: string[] } | { ok: false; error: string } {
  if (ref.namespace !== undefined && ref.namespace !== "")
    return {
      ok: false,
      error: `ClusterTrustBundle ${ref.name} is cluster-scoped: the reference must not name a namespace`,
    };
  const bundle: ClusterTrustBundle | undefined = s.objects.ClusterTrustBundle.get(ref.name);
  if (!bundle) return { ok: false, error: `ClusterTrustBundle ${ref.name} not found` };
  const cas = pemCertificates(bundle.spec?.trustBundle ?? "");
  if (cas.length === 0)
    return { ok: false, error: `ClusterTrustBundle ${ref.name} has no PEM certificate` };
  return { ok: true, value: cas };
}

/** Every certificate in a PEM bundle as base64 DER; [] if any block is not a certificate. */
export function pemCertificates(pem: string): string[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  const out: string[] = [];
  for (const b of blocks) {
    try {
      out.push(new X509Certificate(b).raw.toString("base64"));
    } catch {
      return [];
    }
  }
  return out;
}
