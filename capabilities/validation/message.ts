import { FieldProblem, truncate } from "./regex";

/**
 * One denial message naming every problem: kind, object, and per problem the field path, the
 * offending value (cut) and what would be accepted.
 */
export function denialMessage(kind: string, namespace: string | undefined, name: string, problems: readonly FieldProblem[]): string {
  const object = namespace ? `${namespace}/${name}` : name;
  const each = problems.map(p => `${p.path}: ${p.message} (got ${JSON.stringify(truncate(p.value))})`);
  return `${kind} ${object} cannot be run by the Kengine proxy: ${each.join("; ")}`;
}
