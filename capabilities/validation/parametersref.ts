/**
 * What a parametersRef (GatewayClass spec.parametersRef, Gateway
 * spec.infrastructure.parametersRef) must name to be usable, from the reference alone: our
 * KengineParameters, with a namespace. Gateway API v1.6.1 answers a reference that fails this
 * in status (Accepted=False, reason InvalidParameters), never by refusal: provisioning
 * (provision/parameters.ts) reports these texts in status, and admission shows the same text
 * as a warning while it stores the object.
 */
export const PARAMETERS_GROUP = "gateway.kengine.io";
export const PARAMETERS_KIND = "KengineParameters";

export interface ParametersRefLike {
  readonly group?: string;
  readonly kind?: string;
  readonly name?: string;
  readonly namespace?: string;
}

/** Why the reference cannot be used (undefined: it names KengineParameters in a namespace). */
export function parametersRefShapeProblem(
  ref: ParametersRefLike | undefined,
  namespace: string | undefined,
  where: string,
): string | undefined {
  if (!ref || typeof ref !== "object") return undefined;
  if (ref.group !== PARAMETERS_GROUP || ref.kind !== PARAMETERS_KIND)
    return `${where}: ${ref.group || "core"}/${String(ref.kind)} is not supported (use ${PARAMETERS_GROUP}/${PARAMETERS_KIND})`;
  if (!namespace) return `${where}: ${PARAMETERS_KIND} is namespaced; set parametersRef.namespace`;
  return undefined;
}
