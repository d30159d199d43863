/**
 * Regular-expression rules shared by admission and translation: the field problem a route's
 * expression gets, and how literals are quoted into RE2. Whether Go's RE2 accepts an
 * expression is decided by re2.ts.
 */
import { MAX_REGEX_LENGTH, re2Problem } from "./re2";

import { FieldProblem, display, truncate } from "./field-problem";

export { FieldProblem, MAX_REGEX_LENGTH, display, re2Problem, truncate };

/** Checks one regular expression a route asks the proxy to run. */
export function checkRegex(path: string, value: string): FieldProblem[] {
  if (value.length === 0) {
    return [
      {
        path,
        value,
        message: "must not be empty: an empty regular expression matches every request",
      },
    ];
  }
  const problem = re2Problem(value);
  return problem ? [{ path, value: truncate(value), message: problem }] : [];
}

/** Quotes a literal for use inside an RE2 expression. */
export const quoteRE2 = (s: string): string => s.replace(/[\\.+*?()|[\]{}^$]/g, "\\$&");
