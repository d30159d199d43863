/**
 * canary-weight (docs/ingress.md, "ingress-nginx annotations"): a canary Ingress's share of the
 * requests its main Ingress serves. The main is the Ingress of the same namespace and class
 * target, not itself a canary, with a rule for the same host and path (type and value); the
 * main's converted rule then sends `total − weight` of its requests to its own backend and
 * `weight` to the canary's, as Gateway API backendRef weights. Only one canary splits a path
 * (the oldest); a canary path without a main is reported on the canary, never guessed.
 *
 * Pure: the conversions in, copies of the main routes that change and problems out.
 */
import { CanaryWeight, SyntheticHTTPRoute, SyntheticMatch } from "./convert";
import type { FieldProblem } from "../validation/regex";
import { annotationPath } from "../validation/nginx-annotations";

export interface Converted {
  /** `namespace/name` of the Ingress. */
  readonly key: string;
  readonly namespace: string;
  /** The Gateway serving its class (`namespace/name`). */
  readonly target: string;
  readonly createdAt: string;
  readonly httpRoutes: readonly SyntheticHTTPRoute[];
  readonly canary: boolean;
  readonly canaryWeight?: CanaryWeight;
}

export interface CanarySplit {
  /** A main route → its copy with the canary's backends weighted in. */
  readonly routes: ReadonlyMap<SyntheticHTTPRoute, SyntheticHTTPRoute>;
  /** Problems of canaries, by Ingress key. */
  readonly problems: ReadonlyMap<string, FieldProblem[]>;
}

const pathKey = (p: SyntheticMatch["path"]): string => `${p.type} ${p.value}`;
const older = (a: Converted, b: Converted): number =>
  a.createdAt !== b.createdAt ? (a.createdAt < b.createdAt ? -1 : 1) : a.key < b.key ? -1 : 1;

/** Applies every canary-weight to its main Ingress's routes. Deterministic. */
export function splitCanaryWeights(converted: readonly Converted[]): CanarySplit {
  const routes = new Map<SyntheticHTTPRoute, SyntheticHTTPRoute>();
  const problems = new Map<string, FieldProblem[]>();
  const canaries = converted.filter(c => c.canaryWeight).sort(older);
  if (canaries.length === 0) return { routes, problems };
  // Rules of main Ingresses that forward, by namespace, target, host and path.
  type Site = { main: Converted; route: SyntheticHTTPRoute; rule: number; by?: string };
  const sites = new Map<string, Site>();
  const siteKey = (namespace: string, target: string, host: string, path: string): string =>
    JSON.stringify([namespace, target, host, path]);
  for (const main of [...converted].sort(older)) {
    if (main.canary) continue;
    for (const route of main.httpRoutes)
      route.spec.rules.forEach((rule, i) => {
        if (rule.backendRefs.length === 0 || rule.matches.length !== 1) return;
        const k = siteKey(
          main.namespace,
          main.target,
          route.spec.hostnames?.[0] ?? "",
          pathKey(rule.matches[0]!.path),
        );
        if (!sites.has(k)) sites.set(k, { main, route, rule: i });
      });
  }
  const report = (key: string, problem: FieldProblem): void => {
    problems.set(key, [...(problems.get(key) ?? []), problem]);
  };
  for (const canary of canaries) {
    const { weight, total, paths } = canary.canaryWeight!;
    for (const p of paths) {
      if (p.backendRefs.length === 0) continue; // its backend's problem is reported already
      const site = sites.get(siteKey(canary.namespace, canary.target, p.host, pathKey(p.path)));
      const where = `${p.host || "every host"} ${p.path.value} (${p.path.type})`;
      if (!site) {
        report(canary.key, {
          path: annotationPath("canary-weight"),
          value: String(weight),
          message: `${p.source}: no Ingress of namespace ${canary.namespace} without the canary annotation serves ${where}: the weight has nothing to split`,
        });
        continue;
      }
      if (site.by !== undefined) {
        report(canary.key, {
          path: annotationPath("canary-weight"),
          value: String(weight),
          message: `${p.source}: ${where} of Ingress ${site.main.key} is already split with canary Ingress ${site.by}`,
        });
        continue;
      }
      site.by = canary.key;
      let copy = routes.get(site.route);
      if (!copy) routes.set(site.route, (copy = structuredClone(site.route)));
      const rule = copy.spec.rules[site.rule]!;
      rule.backendRefs = [
        ...rule.backendRefs.map(b => ({ ...b, weight: total - weight })),
        ...p.backendRefs.map(b => ({ ...b, weight })),
      ];
    }
  }
  return { routes, problems };
}
