/**
 * GatewayClass `SupportedVersion`: whether the Gateway API CRDs installed in the cluster are a
 * release line this controller supports (v1.7, whose CRDs its types are generated from, and
 * v1.6: nothing it reads needs a v1.7 field). We give best-effort support to other versions:
 * `Accepted` stays as it is and `SupportedVersion` says False, naming both.
 */
import type { Condition } from "../translate";

/** The Gateway API release the controller's types and features are generated from. */
export const SUPPORTED_BUNDLE_VERSION = "v1.7.0";
/** The releases whose CRDs the controller supports (any patch release of these lines). */
export const SUPPORTED_BUNDLE_VERSIONS: readonly string[] = [SUPPORTED_BUNDLE_VERSION, "v1.6.1"];
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
  const m = minor(installed);
  const ok = m !== undefined && SUPPORTED_BUNDLE_VERSIONS.some(v => minor(v) === m);
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
        : `Gateway API CRDs ${installed || "(no bundle-version)"} are installed; this controller supports ${SUPPORTED_BUNDLE_VERSIONS.join(" and ")} (best effort for others)`) +
      missing,
    ...(observedGeneration !== undefined ? { observedGeneration } : {}),
  };
}
