/**
 * Which KengineParameters fields belong to the platform team (docs/architecture.md §4, "Privilege"): the
 * proxy's image and command (what runs) and its node placement (where it runs). They may come
 * only from the parameters a GatewayClass references (`spec.parametersRef`, owned by whoever
 * may write GatewayClasses), never from a Gateway's own `spec.infrastructure.parametersRef`,
 * which names a KengineParameters in the Gateway's namespace that any tenant there may write,
 * unless the class's parameters list the field in `spec.allowGatewayOverrides`. `spec.egress`
 * (validation/egress.ts) is class-level only, with no override. ACME issuers (`spec.acme`) are
 * class-only with no override too: the class's parameters grant each issuer to namespaces
 * instead (validation/acme.ts).
 *
 * One rule for every stage: admission refuses a Gateway whose parameters break it (when the
 * class and both parameters objects can be read), and the translator and provisioning
 * (provision/parameters.ts) make such a Gateway Accepted=False/InvalidParameters and give it
 * no proxies, whatever admission saw.
 */
import { FieldProblem, display, truncate } from "./regex";
import { gatewayLimitsProblems } from "./limits";
import { gatewayEgressProblems } from "./egress";
import { acmeGatewayParametersProblems } from "./acme";

/** spec.proxy fields only class-level parameters may set (or allow). */
export const PLATFORM_FIELDS = [
  "image",
  "command",
  "nodeSelector",
  "tolerations",
  "affinity",
] as const;
export type PlatformField = (typeof PLATFORM_FIELDS)[number];

/** The class-level field that lets Gateways set some platform fields themselves. */
export const ALLOW_OVERRIDES_FIELD = "allowGatewayOverrides";

export interface ParametersSpecLike {
  readonly proxy?: unknown;
  readonly allowGatewayOverrides?: unknown;
  readonly limits?: unknown;
  readonly egress?: unknown;
  /** ACME issuers: class level only, never overridable (validation/acme.ts). */
  readonly acme?: unknown;
}

const isPlatformField = (f: unknown): f is PlatformField =>
  typeof f === "string" && (PLATFORM_FIELDS as readonly string[]).includes(f);

/** The platform fields a class's parameters let Gateways set (none when unset or malformed). */
export function allowedOverrides(classSpec: ParametersSpecLike | undefined): Set<PlatformField> {
  const list = classSpec?.allowGatewayOverrides;
  return new Set(Array.isArray(list) ? list.filter(isPlatformField) : []);
}

/**
 * What a Gateway-level parameters spec sets that its class does not allow: one problem per
 * field, with the field's path in the KengineParameters object.
 */
export function gatewayOverrideProblems(
  gatewaySpec: ParametersSpecLike | undefined,
  classSpec: ParametersSpecLike | undefined,
): FieldProblem[] {
  const problems: FieldProblem[] = [...gatewayEgressProblems(gatewaySpec)];
  if (gatewaySpec?.allowGatewayOverrides !== undefined)
    problems.push({
      path: `spec.${ALLOW_OVERRIDES_FIELD}`,
      value: truncate(display(gatewaySpec.allowGatewayOverrides)),
      message:
        "has effect only in the parameters a GatewayClass references; a Gateway's own parameters cannot grant overrides",
    });
  problems.push(...gatewayLimitsProblems(gatewaySpec));
  problems.push(...acmeGatewayParametersProblems(gatewaySpec));
  const proxy = gatewaySpec?.proxy;
  if (typeof proxy !== "object" || proxy === null) return problems;
  const allowed = allowedOverrides(classSpec);
  for (const f of PLATFORM_FIELDS) {
    const v = (proxy as Readonly<Record<string, unknown>>)[f];
    if (v === undefined || allowed.has(f)) continue;
    problems.push({
      path: `spec.proxy.${f}`,
      value: truncate(display(v)),
      message: `is platform-owned: only the GatewayClass's parameters may set it (or allow it with ${ALLOW_OVERRIDES_FIELD}: [${f}])`,
    });
  }
  return problems;
}

/** Shape problems of spec.allowGatewayOverrides (the CRD's enum, for objects stored some other way). */
export function allowOverridesShapeProblems(list: unknown): FieldProblem[] {
  const at = `spec.${ALLOW_OVERRIDES_FIELD}`;
  if (list === undefined) return [];
  if (!Array.isArray(list))
    return [{ path: at, value: truncate(display(list)), message: "must be a list of field names" }];
  return list.slice(0, PLATFORM_FIELDS.length + 1).flatMap((f: unknown, i) =>
    isPlatformField(f)
      ? []
      : [
          {
            path: `${at}[${i}]`,
            value: truncate(display(f)),
            message: `accepted: ${PLATFORM_FIELDS.join(", ")}`,
          },
        ],
  );
}
