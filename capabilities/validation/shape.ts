/**
 * Shape checks for references (group/kind/name records) in kinds whose content the proxy never
 * runs: GatewayClass parametersRef, ReferenceGrant from/to. The API server's schema already
 * enforces these shapes before a webhook sees the object, so they refuse nothing a cluster can
 * store; they keep the validators total on whatever a direct caller of the webhook sends (no
 * throw, every problem at a field, bounded work).
 */
import { Collector } from "./budget";
import { display, truncate } from "./regex";

/**
 * Checks that `value` at `at` is an object whose `required` fields are strings and whose
 * `optional` fields, when present, are strings. Charges one value per field to the budget.
 */
export function referenceShape(
  c: Collector,
  at: string,
  value: unknown,
  required: readonly string[],
  optional: readonly string[] = [],
): void {
  if (c.done || !c.spend(at)) return;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    c.add([
      {
        path: at,
        value: truncate(display(value ?? null)),
        message: `must be an object with string fields ${[...required, ...optional].join(", ")}`,
      },
    ]);
    return;
  }
  const o = value as Record<string, unknown>;
  for (const f of [...required, ...optional]) {
    if (!required.includes(f) && (o[f] === undefined || o[f] === null)) continue;
    if (typeof o[f] === "string") continue;
    c.add([
      {
        path: `${at}.${f}`,
        value: truncate(display(o[f] ?? "")),
        message: "must be a string",
      },
    ]);
  }
}
