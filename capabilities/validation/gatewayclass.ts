/**
 * Rules for a GatewayClass of ours (spec.controllerName kengine.io/gateway-controller).
 *
 * Nothing in a GatewayClass the API server stores is refused: its only field beyond the
 * controllerName and a description is parametersRef, and Gateway API v1.6.1 says a
 * parametersRef that "cannot be found, refers to an unsupported kind, or when the data within
 * that resource is malformed" makes the class Accepted=False with reason InvalidParameters: a
 * status answer, which the translator gives (translate/translate.ts, provision/parameters.ts;
 * the conformance test GatewayInvalidParametersRef checks the same answer for a Gateway's
 * parametersRef to an unknown kind). The values of our KengineParameters are checked when
 * they are written (validation/parameters.ts). What is left is the reference's shape, for
 * direct callers of the webhook (validation/shape.ts).
 */
import { Collector } from "./budget";
import { FieldProblem } from "./regex";
import { referenceShape } from "./shape";

export interface GatewayClassLike {
  readonly spec?: { readonly parametersRef?: unknown };
}

export function gatewayClassProblems(gc: GatewayClassLike, c = new Collector()): FieldProblem[] {
  const ref = gc?.spec?.parametersRef;
  if (ref !== undefined && ref !== null)
    referenceShape(c, "spec.parametersRef", ref, ["group", "kind", "name"], ["namespace"]);
  return c.problems();
}
