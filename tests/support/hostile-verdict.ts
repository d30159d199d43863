/**
 * What became of one hostile tenant object: refused at admission by the shared
 * validation rules, or admitted and then either programmed or reported in its own status.
 * Pure: reads the object and the translator's statuses.
 */
import { KubeObject } from "../../capabilities/snapshot";
import { TranslateResult } from "../../capabilities/translate";
import {
  FieldProblem,
  gatewayProblems,
  grpcRouteProblems,
  httpRouteProblems,
} from "../../capabilities/validation";
import { problemText } from "../../capabilities/validation/message";

export type Verdict =
  | { readonly kind: "refused"; readonly message: string }
  | { readonly kind: "programmed" }
  | { readonly kind: "reported"; readonly message: string }
  | { readonly kind: "silent"; readonly why: string };

/** The admission webhook's verdict on `obj` (the same rules it runs). */
export function admissionProblems(obj: KubeObject): FieldProblem[] {
  const o = obj as never;
  switch (obj.kind) {
    case "HTTPRoute":
      return httpRouteProblems(o);
    case "GRPCRoute":
      return grpcRouteProblems(o);
    case "ListenerSet":
      return gatewayProblems(o);
    default:
      return [];
  }
}

/**
 * Refused when admission finds problems; otherwise its status must exist and either say every
 * condition is good (programmed) or carry a False condition with a message (reported).
 * "silent": admitted, yet no status for it (the property's failure).
 */
export function verdictOf(obj: KubeObject, result: TranslateResult): Verdict {
  const problems = admissionProblems(obj);
  if (problems.length > 0)
    return { kind: "refused", message: problems.map(p => problemText(p)).join("; ") };
  const { namespace, name } = obj.metadata as { namespace: string; name: string };
  const same = (s: { namespace: string; name: string }) =>
    s.namespace === namespace && s.name === name;
  let conditions: readonly { type: string; status: string; message: string }[] | undefined;
  if (obj.kind === "ListenerSet") {
    const ls = result.statuses.listenerSets.find(same);
    conditions = ls && [...ls.conditions, ...ls.listeners.flatMap(l => l.conditions)];
  } else {
    const r = result.statuses.routes.find(s => s.kind === obj.kind && same(s));
    conditions = r?.parents.flatMap(p => p.conditions);
  }
  if (!conditions || conditions.length === 0)
    return { kind: "silent", why: `no status for ${obj.kind} ${namespace}/${name}` };
  const bad = conditions.filter(c => c.status === "False" && c.type !== "Conflicted");
  if (bad.length === 0) return { kind: "programmed" };
  const unexplained = bad.find(c => !c.message);
  if (unexplained) return { kind: "silent", why: `${unexplained.type}=False without a message` };
  return { kind: "reported", message: bad.map(c => `${c.type}: ${c.message}`).join("; ") };
}
