/**
 * Regular-expression rules shared by admission and translation. Kengine/Caddy evaluate
 * path and header regular expressions with Go's RE2 engine.
 */

/** A problem found in one field of an object, in kubectl's field-path style. */
export interface FieldProblem {
  readonly path: string;
  readonly value: string;
  readonly message: string;
}

/** Cuts a value for display in an error message. */
export const truncate = (value: string, max = 64): string =>
  value.length <= max ? value : `${value.slice(0, max)}… (${value.length} characters)`;

/** Checks one regular expression a route asks the proxy to run. */
export function checkRegex(path: string, value: string): FieldProblem[] {
  if (value.length === 0) {
    return [{ path, value, message: "must not be empty: an empty regular expression matches every request" }];
  }
  return [];
}
