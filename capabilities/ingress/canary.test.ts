/**
 * canary-weight: a canary Ingress's share of its main Ingress's path, as backendRef weights on
 * the main's converted rule; only a main of the same namespace and target, one canary per path,
 * and a canary without a main reported on itself.
 */
import type { V1Ingress } from "@kubernetes/client-node";
import { Converted, splitCanaryWeights } from "./canary";
import { Target, convertIngress } from "./convert";
import { HTTPRouteLike, httpRouteProblems } from "../validation/httproute";

const P = "nginx.ingress.kubernetes.io/";
const target: Target = { gateway: { namespace: "infra", name: "shared" }, nginxAnnotations: true };
const ingress = (
  namespace: string,
  name: string,
  service: string,
  annotations: Record<string, string> = {},
  created = "2026-11-01T00:00:00Z",
  path = "/api",
): V1Ingress => ({
  metadata: {
    name,
    namespace,
    uid: `u-${name}`,
    annotations,
    creationTimestamp: created as unknown as Date,
  },
  spec: {
    rules: [
      {
        host: "shop.example.com",
        http: {
          paths: [
            {
              path,
              pathType: "Prefix",
              backend: { service: { name: service, port: { number: 80 } } },
            },
          ],
        },
      },
    ],
  },
});
const converted = (i: V1Ingress, t = "infra/shared"): Converted => {
  const c = convertIngress(i, target, () => undefined);
  expect(c.problems).toEqual([]);
  return {
    key: `${i.metadata!.namespace}/${i.metadata!.name}`,
    namespace: i.metadata!.namespace!,
    target: t,
    createdAt: String(i.metadata!.creationTimestamp),
    httpRoutes: c.httpRoutes,
    canary: c.canary === true,
    ...(c.canaryWeight && { canaryWeight: c.canaryWeight }),
  };
};
const weighted = (w: string, more: Record<string, string> = {}) => ({
  [`${P}canary`]: "true",
  [`${P}canary-weight`]: w,
  ...more,
});

describe("canary-weight", () => {
  it("splits the main Ingress's path by weight; the canary has no routes of its own", () => {
    const main = converted(ingress("apps", "main", "web"));
    const canary = converted(ingress("apps", "canary", "web-v2", weighted("20")));
    expect(canary.httpRoutes).toEqual([]);
    const split = splitCanaryWeights([main, canary]);
    expect(split.problems.size).toBe(0);
    const copy = split.routes.get(main.httpRoutes[0]!)!;
    expect(copy.spec.rules[0]!.backendRefs).toEqual([
      { group: "", kind: "Service", name: "web", port: 80, weight: 80 },
      { group: "", kind: "Service", name: "web-v2", port: 80, weight: 20 },
    ]);
    expect(httpRouteProblems(copy as HTTPRouteLike)).toEqual([]);
    // the original conversion is not changed (it is kept across builds)
    expect(main.httpRoutes[0]!.spec.rules[0]!.backendRefs[0]).not.toHaveProperty("weight");
    // canary-weight-total
    const tenth = converted(
      ingress("apps", "c", "web-v2", weighted("1", { [`${P}canary-weight-total`]: "10" })),
    );
    const rule = splitCanaryWeights([main, tenth]).routes.get(main.httpRoutes[0]!)!.spec.rules[0]!;
    expect(rule.backendRefs.map(b => b.weight)).toEqual([9, 1]);
  });

  it("with a header too: the canary's own header-matched routes, and the split", () => {
    const main = converted(ingress("apps", "main", "web"));
    const canary = converted(
      ingress("apps", "canary", "web-v2", weighted("50", { [`${P}canary-by-header`]: "X-C" })),
    );
    expect(canary.httpRoutes).toHaveLength(1);
    expect(canary.httpRoutes[0]!.spec.rules[0]!.matches[0]!.headers).toEqual([
      { type: "Exact", name: "X-C", value: "always" },
    ]);
    const split = splitCanaryWeights([main, canary]);
    expect(split.routes.size).toBe(1);
    expect(split.routes.has(canary.httpRoutes[0]!)).toBe(false);
  });

  it("never across namespaces or targets, never onto another canary, never a guess", () => {
    const main = converted(ingress("apps", "main", "web"));
    const foreign = converted(ingress("other", "canary", "steal", weighted("90")));
    const elsewhere = converted(ingress("apps", "canary", "web-v2", weighted("10")), "infra/other");
    const otherPath = converted(ingress("apps", "p", "web-v2", weighted("10"), undefined, "/x"));
    const split = splitCanaryWeights([main, foreign, elsewhere, otherPath]);
    expect(split.routes.size).toBe(0);
    for (const key of ["other/canary", "apps/canary", "apps/p"])
      expect(split.problems.get(key)).toEqual([
        expect.objectContaining({
          path: `metadata.annotations["${P}canary-weight"]`,
          message: expect.stringMatching(/the weight has nothing to split/),
        }),
      ]);
    // A header canary is not a main for a weighted one.
    const header = converted(
      ingress("apps", "h", "web-v2", { [`${P}canary`]: "true", [`${P}canary-by-header`]: "X" }),
    );
    const w = converted(ingress("apps", "w", "web-v3", weighted("10")));
    expect(splitCanaryWeights([header, w]).problems.get("apps/w")).toHaveLength(1);
  });

  it("one canary per path: the oldest splits it, a newer one is reported", () => {
    const main = converted(ingress("apps", "main", "web"));
    const first = converted(ingress("apps", "b", "v2", weighted("10"), "2026-11-02T00:00:00Z"));
    const second = converted(ingress("apps", "a", "v3", weighted("30"), "2026-11-03T00:00:00Z"));
    const split = splitCanaryWeights([main, second, first]);
    const rule = split.routes.get(main.httpRoutes[0]!)!.spec.rules[0]!;
    expect(rule.backendRefs.map(b => [b.name, b.weight])).toEqual([
      ["web", 90],
      ["v2", 10],
    ]);
    expect(split.problems.get("apps/a")).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(/already split with canary Ingress apps\/b/),
      }),
    ]);
    expect(split.problems.has("apps/b")).toBe(false);
  });

  it("refuses weights it cannot run", () => {
    for (const bad of [
      weighted("101"),
      weighted("-1"),
      weighted("1.5"),
      weighted("5", { [`${P}canary-weight-total`]: "0" }),
      weighted("11", { [`${P}canary-weight-total`]: "10" }),
    ]) {
      const c = convertIngress(ingress("apps", "c", "v2", bad), target, () => undefined);
      expect(c.problems.length).toBeGreaterThan(0);
      expect(c.canaryWeight).toBeUndefined();
    }
  });
});
