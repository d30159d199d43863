/**
 * Our parameters resource as a kubernetes-fluent-client model (admission's look-ups). The
 * controller itself lists and watches every kind by path (kinds.ts LIST_PATHS, reconcile/watch.ts).
 */
import { GenericKind, RegisterKind } from "kubernetes-fluent-client";

/** Our parameters resource (deploy/crds/gateway.kengine.io_kengineparameters.yaml). */
export class KengineParameters extends GenericKind {
  declare spec?: Record<string, unknown>;
}
RegisterKind(KengineParameters, {
  group: "gateway.kengine.io",
  version: "v1alpha1",
  kind: "KengineParameters",
  plural: "kengineparameters",
});
