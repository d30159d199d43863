/**
 * From a synthetic object back to its Ingress: which Ingress made it, and which Ingress field a
 * problem found on one of its rules comes from, so status and Events name the Ingress's own
 * field paths (docs/ingress.md, "Mapping").
 */
import { FieldProblem } from "../validation/regex";
import { RULE_SOURCES_ANNOTATION, SOURCE_ANNOTATION, SYNTHETIC_LABEL } from "./convert";

interface MetaLike {
  readonly metadata?: {
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
}

/** The Ingress an object was made from, or undefined for an object of anyone else. */
export function sourceIngress(o: MetaLike): { namespace: string; name: string } | undefined {
  if (o?.metadata?.labels?.[SYNTHETIC_LABEL] !== "true") return undefined;
  const source = o.metadata.annotations?.[SOURCE_ANNOTATION] ?? "";
  const slash = source.indexOf("/");
  if (slash <= 0 || slash === source.length - 1) return undefined;
  return { namespace: source.slice(0, slash), name: source.slice(slash + 1) };
}

const RULE_PATH = /^spec\.rules\[(\d+)\](.*)$/;

/**
 * A problem on a synthetic HTTPRoute with the Ingress's field path: `spec.rules[N]…` becomes
 * the Ingress field rule N was made from (`spec.rules[i].http.paths[j]`); anything else is
 * reported against the Ingress's `spec`.
 */
export function onIngress(route: MetaLike, problem: FieldProblem): FieldProblem {
  let sources: unknown;
  try {
    sources = JSON.parse(route?.metadata?.annotations?.[RULE_SOURCES_ANNOTATION] ?? "[]");
  } catch {
    sources = [];
  }
  const m = RULE_PATH.exec(problem.path);
  const source = m && Array.isArray(sources) ? sources[Number(m[1])] : undefined;
  return { ...problem, path: typeof source === "string" ? source : "spec" };
}
