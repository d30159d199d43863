/** TLSRoute, TCPRoute and UDPRoute compiled: their backends resolved, weighted and refused by share. */
import type { Snapshot } from "../snapshot";
import { resolveBackend } from "./backends";
import type { L4CompiledBackend } from "./l4backendtls";
import type { RouteKind } from "./listeners";
import type { L4Compiled } from "./context";

/** One L4 route (`kind` is TLSRoute, TCPRoute or UDPRoute) compiled against the snapshot. */
export function compileL4Route(s: Snapshot, kind: RouteKind, obj: unknown): L4Compiled {
  const r = obj as {
    metadata: { name: string; namespace?: string; creationTimestamp?: string };
    spec?: {
      hostnames?: readonly string[];
      rules?: readonly {
        backendRefs?: readonly {
          name: string;
          namespace?: string;
          group?: string;
          kind?: string;
          port?: number;
          weight?: number;
        }[];
      }[];
    };
  };
  const ns = r.metadata.namespace ?? "";
  const backends: L4CompiledBackend[] = [];
  const policies = new Set<string>();
  let refProblem: { reason: string; message: string } | undefined;
  for (const rule of r.spec?.rules ?? []) {
    for (const ref of rule.backendRefs ?? []) {
      const res = resolveBackend(s, kind, ns, ref);
      const weight = ref.weight ?? 1;
      if (!res.ok) {
        refProblem ??= { reason: res.reason, message: res.message };
        // Its share of connections is refused, not handed to the other backends.
        if (weight > 0)
          backends.push({
            id: `${ref.namespace ?? ns}/${ref.name}:${ref.port ?? ""}`,
            weight,
            endpoints: [],
          });
        continue;
      }
      if (kind === "TLSRoute") for (const p of res.backendTLSPolicies ?? []) policies.add(p);
      if (weight > 0)
        backends.push({
          id: res.id,
          weight,
          endpoints: res.endpoints,
          ...(kind === "TLSRoute" && res.backendTLS && { backendTLS: res.backendTLS }),
        });
    }
  }
  return {
    kind: kind as L4Compiled["kind"],
    namespace: ns,
    name: r.metadata.name,
    created: r.metadata.creationTimestamp ?? "",
    hostnames: r.spec?.hostnames && r.spec.hostnames.length > 0 ? r.spec.hostnames : undefined,
    backends,
    refProblem,
    backendTLSPolicies: [...policies].sort(),
  };
}
