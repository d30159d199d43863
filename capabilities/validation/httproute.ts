/**
 * Admission rules for one HTTPRoute: every problem the proxy would refuse, each with its field
 * path. Cross-object facts (missing backends, ReferenceGrants) are not checked here: the spec
 * wants them reported through status.
 */
import { FieldProblem, checkRegex } from "./regex";

interface StringMatch {
  readonly type?: string;
  readonly name?: string;
  readonly value?: string;
}
interface HTTPRouteMatch {
  readonly path?: StringMatch;
  readonly headers?: readonly StringMatch[];
  readonly queryParams?: readonly StringMatch[];
}
export interface HTTPRouteLike {
  readonly spec?: { readonly rules?: readonly { readonly matches?: readonly HTTPRouteMatch[] }[] };
}

/** Collects all problems of an HTTPRoute's spec (not just the first). */
export function httpRouteProblems(route: HTTPRouteLike): FieldProblem[] {
  const problems: FieldProblem[] = [];
  (route.spec?.rules ?? []).forEach((rule, r) =>
    (rule.matches ?? []).forEach((match, m) => {
      const at = `spec.rules[${r}].matches[${m}]`;
      if (match.path?.type === "RegularExpression") {
        problems.push(...checkRegex(`${at}.path.value`, match.path.value ?? ""));
      }
      (match.headers ?? []).forEach((h, i) => {
        if (h.type === "RegularExpression") problems.push(...checkRegex(`${at}.headers[${i}].value`, h.value ?? ""));
      });
      (match.queryParams ?? []).forEach((q, i) => {
        if (q.type === "RegularExpression") {
          problems.push(...checkRegex(`${at}.queryParams[${i}].value`, q.value ?? ""));
        }
      });
    }),
  );
  return problems;
}
