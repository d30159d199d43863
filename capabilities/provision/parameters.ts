/**
 * A Gateway's proxy settings: defaults, then the GatewayClass's KengineParameters
 * (spec.parametersRef), then the Gateway's own (spec.infrastructure.parametersRef), field by
 * field. Pure; a reference that does not resolve is reported, never a crash. The Gateway's own
 * parameters may not set the platform-owned fields (image, command, placement) unless the
 * class's parameters allow it (validation/overrides.ts): such parameters are reported and not
 * used at all, like invalid ones.
 */
import type { KubeObject, Snapshot } from "../snapshot";
import { kengineParametersProblems } from "../validation/parameters";
import { PARAMETERS_KIND, parametersRefShapeProblem } from "../validation/parametersref";
import { problemText } from "../validation/message";
import { PlatformField, gatewayOverrideProblems } from "../validation/overrides";
import { DEFAULT_PROXY_SETTINGS, ProxySettings } from "./settings";
import { resolveLimits } from "../validation/limits";
import { EgressSettings, readEgress } from "../validation/egress";

export { PARAMETERS_GROUP, PARAMETERS_KIND } from "../validation/parametersref";

interface Ref {
  readonly group?: string;
  readonly kind?: string;
  readonly name?: string;
  readonly namespace?: string;
}

interface ParametersSpec {
  readonly mode?: ProxySettings["mode"];
  readonly external?: ProxySettings["external"];
  readonly proxy?: Partial<
    Pick<
      ProxySettings,
      | "kind"
      | "replicas"
      | "image"
      | "flavor"
      | "command"
      | "resources"
      | "nodeSelector"
      | "tolerations"
      | "affinity"
    >
  >;
  readonly addresses?: ProxySettings["addresses"];
  readonly allowGatewayOverrides?: readonly PlatformField[];
  /** Class level only: a Gateway's own parameters that set it are refused (validation/limits.ts). */
  readonly limits?: unknown;
  readonly egress?: unknown;
  readonly service?: Partial<ProxySettings["service"]> & {
    readonly type?: ProxySettings["serviceType"];
  };
}

export interface ResolvedSettings {
  readonly settings: ProxySettings;
  /** Why a reference was ignored, e.g. "GatewayClass parametersRef: KengineParameters ns/x not found". */
  readonly problems: readonly string[];
}

/** Why a parametersRef does not resolve to usable KengineParameters (undefined: it does, or there is none). */
export function parametersRefProblem(
  snapshot: Snapshot,
  ref: Ref | undefined,
  namespace: string | undefined,
  where: string,
): string | undefined {
  return lookup(snapshot, ref, namespace, where).problem;
}

function lookup(
  snapshot: Snapshot,
  ref: Ref | undefined,
  namespace: string | undefined,
  where: string,
): { spec?: ParametersSpec; problem?: string } {
  if (!ref) return {};
  // What the reference alone says (admission warns with the same text).
  const shape = parametersRefShapeProblem(ref, namespace, where);
  if (shape) return { problem: shape };
  const obj = snapshot.objects.KengineParameters.get(`${namespace}/${ref.name}`) as
    | (KubeObject & { spec?: ParametersSpec })
    | undefined;
  if (!obj) return { problem: `${where}: ${PARAMETERS_KIND} ${namespace}/${ref.name} not found` };
  // The rules admission applies (validation/parameters.ts): stored some other way, such
  // parameters are reported, never used.
  const invalid = kengineParametersProblems(obj);
  if (invalid.length > 0)
    return {
      problem: `${where}: ${PARAMETERS_KIND} ${namespace}/${ref.name} is invalid: ${invalid.map(problemText).join("; ")}`,
    };
  return { spec: obj.spec ?? {} };
}

const merge = (base: ProxySettings, p: ParametersSpec | undefined): ProxySettings =>
  p
    ? {
        ...base,
        ...Object.fromEntries(Object.entries(p.proxy ?? {}).filter(([, v]) => v !== undefined)),
        mode: p.mode ?? base.mode,
        ...(p.addresses || base.addresses ? { addresses: p.addresses ?? base.addresses } : {}),
        ...(p.limits !== undefined && { limits: resolveLimits(p.limits) }),
        ...(p.external || base.external
          ? {
              external: {
                ...base.external,
                ...Object.fromEntries(
                  Object.entries(p.external ?? {}).filter(([, v]) => v !== undefined),
                ),
              },
            }
          : {}),
        serviceType: p.service?.type ?? base.serviceType,
        service: {
          ...base.service,
          ...Object.fromEntries(
            Object.entries(p.service ?? {}).filter(([k, v]) => k !== "type" && v !== undefined),
          ),
        },
      }
    : base;

interface GatewayLike {
  readonly metadata: { readonly namespace?: string };
  readonly spec?: { readonly infrastructure?: { readonly parametersRef?: Ref } };
}
type ClassLike = { readonly spec?: { readonly parametersRef?: Ref } } | undefined;

const classLookup = (snapshot: Snapshot, gatewayClass: ClassLike, where: string) => {
  const ref = gatewayClass?.spec?.parametersRef;
  return lookup(snapshot, ref, ref?.namespace, where);
};

/**
 * The Gateway's own parameters, refused (with every field named) when they set what only the
 * class's parameters may: the class's parameters decide, and when they do not resolve nothing
 * is allowed.
 */
function gatewayLookup(
  snapshot: Snapshot,
  classSpec: ParametersSpec | undefined,
  gateway: GatewayLike,
  where: string,
): { spec?: ParametersSpec; problem?: string } {
  const ref = gateway.spec?.infrastructure?.parametersRef;
  const found = lookup(snapshot, ref, gateway.metadata.namespace, where);
  if (!found.spec) return found;
  const refused = gatewayOverrideProblems(found.spec, classSpec);
  return refused.length === 0
    ? found
    : {
        problem: `${where}: ${PARAMETERS_KIND} ${gateway.metadata.namespace}/${ref?.name} sets what only the GatewayClass's parameters may: ${refused.map(problemText).join("; ")}`,
      };
}

/** Why a Gateway's own parameters cannot be used (undefined: they can, or there are none). */
export function gatewayParametersProblem(
  snapshot: Snapshot,
  gatewayClass: ClassLike,
  gateway: GatewayLike,
  where = "spec.infrastructure.parametersRef",
): string | undefined {
  const fromClass = classLookup(snapshot, gatewayClass, "GatewayClass parametersRef");
  return gatewayLookup(snapshot, fromClass.spec, gateway, where).problem;
}

export function resolveSettings(
  snapshot: Snapshot,
  gatewayClass: ClassLike,
  gateway: GatewayLike,
  defaults: ProxySettings = DEFAULT_PROXY_SETTINGS,
): ResolvedSettings {
  const fromClass = classLookup(snapshot, gatewayClass, "GatewayClass parametersRef");
  const fromGateway = gatewayLookup(
    snapshot,
    fromClass.spec,
    gateway,
    "Gateway infrastructure.parametersRef",
  );
  return {
    settings: merge(merge(defaults, fromClass.spec), fromGateway.spec),
    problems: [fromClass.problem, fromGateway.problem].filter((p): p is string => p !== undefined),
  };
}

/**
 * The egress settings of a Gateway's class (validation/egress.ts): only the parameters the
 * GatewayClass references count; when they do not resolve or are invalid, the defaults
 * (ExternalHostname backends denied, no extra denied ranges).
 */
export function classEgress(snapshot: Snapshot, gatewayClass: ClassLike): EgressSettings {
  return readEgress(classLookup(snapshot, gatewayClass, "GatewayClass parametersRef").spec);
}
