/**
 * A Gateway's proxy settings: defaults, then the GatewayClass's KengineParameters
 * (spec.parametersRef), then the Gateway's own (spec.infrastructure.parametersRef), field by
 * field. Pure; a reference that does not resolve is reported, never a crash.
 */
import type { KubeObject, Snapshot } from "../snapshot";
import { kengineParametersProblems } from "../validation/parameters";
import { PARAMETERS_KIND, parametersRefShapeProblem } from "../validation/parametersref";
import { problemText } from "../validation/message";
import { DEFAULT_PROXY_SETTINGS, ProxySettings } from "./settings";

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

export function resolveSettings(
  snapshot: Snapshot,
  gatewayClass: { readonly spec?: { readonly parametersRef?: Ref } } | undefined,
  gateway: {
    readonly metadata: { readonly namespace?: string };
    readonly spec?: { readonly infrastructure?: { readonly parametersRef?: Ref } };
  },
  defaults: ProxySettings = DEFAULT_PROXY_SETTINGS,
): ResolvedSettings {
  const classRef = gatewayClass?.spec?.parametersRef;
  const gwRef = gateway.spec?.infrastructure?.parametersRef;
  const fromClass = lookup(snapshot, classRef, classRef?.namespace, "GatewayClass parametersRef");
  const fromGateway = lookup(
    snapshot,
    gwRef,
    gateway.metadata.namespace,
    "Gateway infrastructure.parametersRef",
  );
  return {
    settings: merge(merge(defaults, fromClass.spec), fromGateway.spec),
    problems: [fromClass.problem, fromGateway.problem].filter((p): p is string => p !== undefined),
  };
}
