/**
 * GatewayClass `SupportedVersion` (Gateway API v1.6.1): whether the Gateway API CRDs installed
 * in the cluster are the version this controller was built for. We give best-effort support to
 * other versions: `Accepted` stays as it is and `SupportedVersion` says False, naming both.
 */
import type { Condition } from "../translate";

/** The Gateway API release the controller's types and features are generated from. */
export const SUPPORTED_BUNDLE_VERSION = "v1.6.1";
/** The annotation the Gateway API CRDs carry with their release. */
export const BUNDLE_VERSION_ANNOTATION = "gateway.networking.k8s.io/bundle-version";

const minor = (v: string) =>
  /^v?(\d+)\.(\d+)\./
    .exec(v + ".")
    ?.slice(1, 3)
    .join(".");

/**
 * The condition for an installed bundle version (undefined: the CRD could not be read).
 * `notServed`: kinds whose CRD is not installed (e.g. a standard-channel-only cluster); the
 * message names them (they count as empty until installed), the status stays the version's.
 */
export function supportedVersionCondition(
  installed: string | undefined,
  observedGeneration?: number,
  notServed: readonly string[] = [],
): Condition | undefined {
  if (installed === undefined) return undefined;
  const ok = minor(installed) !== undefined && minor(installed) === minor(SUPPORTED_BUNDLE_VERSION);
  const missing = notServed.length
    ? `; CRDs not installed (those kinds are ignored until installed): ${[...notServed].sort().join(", ")}`
    : "";
  return {
    type: "SupportedVersion",
    status: ok ? "True" : "False",
    reason: ok ? "SupportedVersion" : "UnsupportedVersion",
    message:
      (ok
        ? `Gateway API ${installed} is supported`
        : `Gateway API CRDs ${installed || "(no bundle-version)"} are installed; this controller supports ${SUPPORTED_BUNDLE_VERSION} (best effort for others)`) +
      missing,
    ...(observedGeneration !== undefined ? { observedGeneration } : {}),
  };
}
