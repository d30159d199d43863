import { FieldProblem, truncate } from "./regex";

/** One problem as admission and status both show it: path, message, offending value (cut). */
export const problemText = (p: FieldProblem): string =>
  `${p.path}: ${p.message} (got ${JSON.stringify(truncate(p.value))})`;

/**
 * One denial message naming every problem: kind, object, and per problem the field path, the
 * offending value (cut) and what would be accepted.
 */
export function denialMessage(
  kind: string,
  namespace: string | undefined,
  name: string,
  problems: readonly FieldProblem[],
): string {
  const object = namespace ? `${namespace}/${name}` : name;
  return `${kind} ${object} cannot be run by the Kengine proxy: ${problems.map(problemText).join("; ")}`;
}
