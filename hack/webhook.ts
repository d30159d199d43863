/**
 * The admission webhook must never block objects that are not ours while our admission pods are
 * down. Pepr 1.1.4 generates one webhook for every bound kind, with one failurePolicy (ours:
 * Fail, package.json `onError: reject`), so with its pods down the API server refuses every
 * Gateway, route and ReferenceGrant of the cluster, whatever controller they belong to.
 * `npm run build` (hack/dist.ts) splits it in two with `matchConditions` (CEL, GA since
 * Kubernetes 1.30), so that each request reaches at most one of them:
 *
 * - `<uuid>.pepr.dev`, failurePolicy Fail: what the object alone proves ours: every
 *   KengineParameters (our API), a GatewayClass whose controllerName is ours, a Gateway whose
 *   gatewayClassName is one of our class names (known at build time: `gatewayClassNames`).
 *   With our pods down these are refused, as before.
 * - `<uuid>-others.pepr.dev`, failurePolicy Ignore: everything else the module validates
 *   (routes, ListenerSets, BackendTLSPolicies, ReferenceGrants, Gateways of other class names).
 *   Whether a route is ours depends on its parents, which CEL cannot look up; the webhook still
 *   decides that when it runs, but with our pods down these are admitted. The cost: a route of
 *   ours stored then skipped admission; the translator applies the same rules
 *   (validation/, shared) and reports it in its own status instead.
 * GatewayClasses of other controllers are sent to neither (nothing to check).
 *
 * Pure; hack/webhook.test.ts checks the split, tests/integration/webhook-outage.test.ts proves
 * it against a real API server with the webhook endpoint down.
 */

export interface WebhookScope {
  /** GatewayClass spec.controllerName of ours. */
  readonly controllerName: string;
  /** GatewayClass names whose Gateways are refused while admission is down. */
  readonly gatewayClassNames: readonly string[];
}

export const DEFAULT_WEBHOOK_SCOPE: WebhookScope = {
  controllerName: "kengine.io/gateway-controller",
  gatewayClassNames: ["kengine"],
};

type Obj = Record<string, unknown>;
interface Rule {
  readonly resources?: readonly string[];
}
interface Webhook extends Obj {
  readonly name: string;
  readonly rules?: readonly Rule[];
}

/** Kinds an object of which can be proven ours from the object alone. */
const SELF_EVIDENT = ["kengineparameters", "gatewayclasses", "gateways"];

/** A CEL string literal (single quotes; backslash and quote escaped). */
const celString = (s: string): string => `'${s.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;

/** CEL: the request's object is ours by itself (see the header). */
export function oursExpression(scope: WebhookScope): string {
  const classes = `[${scope.gatewayClassNames.map(celString).join(", ")}]`;
  return [
    "request.resource.resource == 'kengineparameters'",
    `(request.resource.resource == 'gatewayclasses' && has(object.spec) && has(object.spec.controllerName) && object.spec.controllerName == ${celString(scope.controllerName)})`,
    `(request.resource.resource == 'gateways' && has(object.spec) && has(object.spec.gatewayClassName) && object.spec.gatewayClassName in ${classes})`,
  ].join(" || ");
}

export const OTHERS_SUFFIX = "-others.pepr.dev";

/**
 * Splits Pepr's single validating webhook (see the header). Idempotent: a configuration split
 * before is split again from the union of its rules, with the same result.
 */
export function scopeValidatingWebhooks(
  vwc: Obj,
  scope: WebhookScope = DEFAULT_WEBHOOK_SCOPE,
): Obj {
  const webhooks = (vwc.webhooks ?? []) as Webhook[];
  // Already split (dist.ts ran before on this output): split the union of both again.
  const again =
    webhooks.length === 2 && webhooks[1]!.name.endsWith(OTHERS_SUFFIX)
      ? {
          ...webhooks[0]!,
          rules: [...(webhooks[0]!.rules ?? []), ...(webhooks[1]!.rules ?? [])].filter(
            (r, i, all) => all.findIndex(o => JSON.stringify(o) === JSON.stringify(r)) === i,
          ),
        }
      : undefined;
  if (webhooks.length !== 1 && !again) return vwc;
  // A deep copy: the two webhooks share no object (YAML would write anchors for shared ones).
  const w = JSON.parse(JSON.stringify(again ?? webhooks[0])) as Webhook;
  const rules = w.rules ?? [];
  const ours = oursExpression(scope);
  const strictRules = rules.filter(r => (r.resources ?? []).some(x => SELF_EVIDENT.includes(x)));
  // GatewayClasses and KengineParameters are decided by the first webhook alone.
  const otherRules = rules.filter(
    r => !(r.resources ?? []).some(x => x === "gatewayclasses" || x === "kengineparameters"),
  );
  const strict: Obj = {
    ...w,
    failurePolicy: w.failurePolicy ?? "Fail",
    rules: strictRules,
    matchConditions: [{ name: "kengine-owned", expression: ours }],
  };
  const others: Obj = {
    ...w,
    name: w.name.replace(/\.pepr\.dev$/, "") + OTHERS_SUFFIX,
    failurePolicy: "Ignore",
    rules: otherRules,
    matchConditions: [{ name: "not-kengine-owned", expression: `!(${ours})` }],
  };
  return JSON.parse(JSON.stringify({ ...vwc, webhooks: [strict, others] })) as Obj;
}

/**
 * The Helm chart's template of the same configuration: Pepr's placeholders (`name`, the module's
 * name `pepr-<uuid>`, is the chart's `.Values.uuid`; timeout; the
 * strict webhook's failurePolicy, extra ignored namespaces) put back into the scoped object.
 */
export function webhookChartTemplate(
  scoped: Obj,
  name: string,
  stringify: (o: Obj) => string,
): string {
  return stringify(scoped)
    .split(name)
    .join("{{ .Values.uuid }}")
    .replace(
      /^(\s*)timeoutSeconds: \d+$/gm,
      "$1timeoutSeconds: {{ .Values.admission.webhookTimeout }}",
    )
    .replace(
      /^(\s*)failurePolicy: Fail$/gm,
      "$1failurePolicy: {{ .Values.admission.failurePolicy }}",
    )
    .replace(
      /^(\s*)- pepr-system\n/gm,
      "$1- pepr-system\n$1{{- range .Values.additionalIgnoredNamespaces }}\n$1- {{ . }}\n$1{{- end }}\n",
    );
}
