/**
 * What ingest keeps of an object: everything but what nothing downstream reads. The translator,
 * status writer (resourceVersion, generation, status), ownership checks (labels, ownerReferences,
 * uid) and provisioning read the rest, so only two things go, both large and both pure
 * bookkeeping of other clients: `metadata.managedFields` (server-side apply's field owners,
 * often larger than the spec) and the `kubectl.kubernetes.io/last-applied-configuration`
 * annotation (a second copy of the whole object as last applied by `kubectl apply`).
 *
 * Pure: the input is not changed; the result shares everything but `metadata` (and its
 * `annotations`) with it, so the parsed original is left for the garbage collector.
 */
import type { KubeObject } from "./types";

export const LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration";

type Meta = KubeObject["metadata"] & {
  readonly managedFields?: unknown;
  readonly annotations?: Readonly<Record<string, string>>;
};

/** The object without managedFields and the last-applied annotation (the same object if it has neither). */
export function stripForIngest<T extends KubeObject>(o: T): T {
  const meta = o.metadata as Meta | undefined;
  if (!meta) return o;
  const annotations = meta.annotations;
  const lastApplied = annotations !== undefined && LAST_APPLIED_ANNOTATION in annotations;
  if (meta.managedFields === undefined && !lastApplied) return o;
  const { managedFields: _mf, ...rest } = meta;
  let kept: Meta = rest;
  if (lastApplied) {
    const { [LAST_APPLIED_ANNOTATION]: _la, ...others } = annotations;
    const { annotations: _a, ...withoutAnnotations } = rest;
    kept =
      Object.keys(others).length > 0
        ? { ...withoutAnnotations, annotations: others }
        : withoutAnnotations;
  }
  return { ...o, metadata: kept };
}

/**
 * Secrets and ConfigMaps no object of ours references are kept as their metadata only (the
 * API server's PartialObjectMetadata: `apiVersion: meta.k8s.io/v1`, `kind:
 * PartialObjectMetadata`), never their data (reconcile/referenced-data.ts).
 */
export const PARTIAL_METADATA_KIND = "PartialObjectMetadata";

/** Whether the object is the metadata of one only (its data was never read or was dropped). */
export const metadataOnly = (o: { readonly kind?: string }): boolean =>
  o.kind === PARTIAL_METADATA_KIND;

/** The object's metadata alone (managedFields and the last-applied annotation stripped too). */
export function asMetadataOnly(o: KubeObject): KubeObject {
  return {
    apiVersion: "meta.k8s.io/v1",
    kind: PARTIAL_METADATA_KIND,
    metadata: stripForIngest(o).metadata,
  } as KubeObject;
}
