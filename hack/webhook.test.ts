import {
  DEFAULT_WEBHOOK_SCOPE,
  OTHERS_SUFFIX,
  oursExpression,
  scopeValidatingWebhooks,
} from "./webhook";

const rule = (resource: string, group = "gateway.networking.k8s.io") => ({
  apiGroups: [group],
  apiVersions: ["v1"],
  operations: ["CREATE", "UPDATE"],
  resources: [resource],
});
const KINDS = [
  "gatewayclasses",
  "referencegrants",
  "backendtlspolicies",
  "httproutes",
  "grpcroutes",
  "gateways",
  "listenersets",
  "tlsroutes",
  "tcproutes",
  "udproutes",
];
/** What Pepr 1.1.4 generates: one webhook, one failurePolicy, every bound kind. */
const generated = {
  apiVersion: "admissionregistration.k8s.io/v1",
  kind: "ValidatingWebhookConfiguration",
  metadata: { name: "pepr-x" },
  webhooks: [
    {
      name: "pepr-x.pepr.dev",
      failurePolicy: "Fail",
      namespaceSelector: { matchExpressions: [] },
      rules: [...KINDS.map(k => rule(k)), rule("kengineparameters", "gateway.kengine.io")],
    },
  ],
};
type Hook = {
  name: string;
  failurePolicy: string;
  rules: { resources: string[] }[];
  matchConditions: { expression: string }[];
};
const hooks = (o: object) => (o as { webhooks: Hook[] }).webhooks;
const kinds = (h: Hook) => h.rules.flatMap(r => r.resources).sort();

describe("scopeValidatingWebhooks", () => {
  it("fails closed only for kinds an object can prove ours by itself, open for the rest", () => {
    const [strict, others] = hooks(scopeValidatingWebhooks(generated));
    expect(strict!.name).toBe("pepr-x.pepr.dev");
    expect(strict!.failurePolicy).toBe("Fail");
    expect(kinds(strict!)).toEqual(["gatewayclasses", "gateways", "kengineparameters"]);
    expect(others!.name).toBe(`pepr-x${OTHERS_SUFFIX}`);
    expect(others!.failurePolicy).toBe("Ignore");
    // every kind Pepr bound is still checked by one of them (GatewayClasses of other
    // controllers and KengineParameters need the second one never)
    expect(kinds(others!)).toEqual(KINDS.filter(k => k !== "gatewayclasses").sort());
    // the conditions are complements: a request reaches at most one webhook
    expect(others!.matchConditions[0]!.expression).toBe(
      `!(${strict!.matchConditions[0]!.expression})`,
    );
  });

  it("is idempotent (dist.ts may run twice on one pepr build)", () => {
    const once = scopeValidatingWebhooks(generated);
    const twice = scopeValidatingWebhooks(once);
    expect(hooks(twice).map(kinds)).toEqual(hooks(once).map(kinds));
    expect(hooks(twice).map(h => h.matchConditions)).toEqual(
      hooks(once).map(h => h.matchConditions),
    );
  });

  it("writes class names and the controller name as CEL string literals", () => {
    const e = oursExpression({
      controllerName: DEFAULT_WEBHOOK_SCOPE.controllerName,
      gatewayClassNames: ["kengine", "it's"],
    });
    expect(e).toContain("object.spec.gatewayClassName in ['kengine', 'it\\'s']");
    expect(e).toContain("object.spec.controllerName == 'kengine.io/gateway-controller'");
  });
});
