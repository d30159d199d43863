/**
 * Rules for ReferenceGrant. A grant runs nothing on a proxy: it only allows references from
 * one namespace into another, and the translator reads it when it resolves a route's
 * backendRefs or a listener's certificateRefs (a missing grant is ResolvedRefs=False /
 * RefNotPermitted on those, as the spec says). A grant naming kinds we never reference
 * (other implementations' kinds) is just unused. So nothing in a ReferenceGrant the API server
 * stores is refused; what is checked is the shape of its from/to entries, for direct callers
 * of the webhook (validation/shape.ts): no throw, every problem at a field, bounded work on
 * arrays of any length.
 */
import { Collector, items } from "./budget";
import { FieldProblem, display, truncate } from "./regex";
import { referenceShape } from "./shape";

export interface ReferenceGrantLike {
  readonly spec?: { readonly from?: unknown; readonly to?: unknown };
}

export function referenceGrantProblems(
  rg: ReferenceGrantLike,
  c = new Collector(),
): FieldProblem[] {
  const spec = rg?.spec;
  for (const [field, required, optional] of [
    ["from", ["group", "kind", "namespace"], []],
    ["to", ["group", "kind"], ["name"]],
  ] as const) {
    const list = spec?.[field];
    if (list !== undefined && list !== null && !Array.isArray(list)) {
      c.add([
        {
          path: `spec.${field}`,
          value: truncate(display(list)),
          message: "must be a list",
        },
      ]);
      continue;
    }
    items(list as readonly unknown[] | undefined).forEach((entry, i) => {
      referenceShape(c, `spec.${field}[${i}]`, entry, required, optional);
    });
  }
  return c.problems();
}
