/**
 * What `npm run build` checks and adds after `pepr build` (pure; hack/dist.ts does the I/O):
 * the bundle budget, "no wildcard" in the generated RBAC, and the namespaced Role that Pepr's
 * `rbac` block cannot express (Pepr only generates one ClusterRole). docs/rbac.md explains
 * every rule.
 */
import { DEFAULT_LEASE_NAME } from "../capabilities/election/env";
import { CA_SECRET_NAME } from "../capabilities/reconcile/authority";

/** Our budget for the module bundle: Pepr refuses a module Secret over 1 MiB. */
export const BUNDLE_BUDGET_BYTES = 900 * 1024;
export const PEPR_LIMIT_BYTES = 1024 * 1024;
/** The Lease the controller replicas elect a leader with (KENGINE_LEASE_NAME changes it: change the Role too). */
export const LEASE_NAME = DEFAULT_LEASE_NAME;
/** The controller's namespace: Pepr deploys into it; KENGINE_NAMESPACE defaults to it. */
export const CONTROLLER_NAMESPACE = "pepr-system";

export type Check = { ok: true; message: string } | { ok: false; message: string };

const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;

/**
 * The module Secret Pepr makes of the bundle (gzip + base64) against our budget: that Secret is
 * what Pepr's 1 MiB limit applies to. The raw size is reported, not limited.
 */
export function checkBundle(file: string, rawBytes: number, secretBytes: number): Check {
  const sizes = `${file}: ${kib(rawBytes)} (${rawBytes} bytes); module Secret (gzip+base64) ${kib(secretBytes)} (${secretBytes} bytes)`;
  if (secretBytes > BUNDLE_BUDGET_BYTES) {
    return {
      ok: false,
      message:
        `module bundle over budget: ${sizes}; the budget is ${kib(BUNDLE_BUDGET_BYTES)} ` +
        `(Pepr refuses a module over ${kib(PEPR_LIMIT_BYTES)}). Find what grew in pepr build's ` +
        `size table above, or in dist/*.js.map, and drop or lazy-load it.`,
    };
  }
  return {
    ok: true,
    message: `module bundle within budget: ${sizes} of ${kib(BUNDLE_BUDGET_BYTES)}`,
  };
}

export interface PolicyRule {
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly resourceNames?: readonly string[];
  readonly verbs: readonly string[];
}

interface RbacObject {
  readonly kind?: string;
  readonly metadata?: { readonly name?: string };
  readonly rules?: readonly PolicyRule[];
}

/** Every rule of every Role/ClusterRole without "*" in groups, resources or verbs. */
export function wildcardProblems(objects: readonly RbacObject[]): string[] {
  const problems: string[] = [];
  for (const o of objects) {
    if (o.kind !== "ClusterRole" && o.kind !== "Role") continue;
    for (const [i, r] of (o.rules ?? []).entries()) {
      for (const field of ["apiGroups", "resources", "verbs"] as const) {
        if ((r[field] ?? []).includes("*"))
          problems.push(
            `${o.kind} ${o.metadata?.name}: rules[${i}].${field} contains "*" (is rbacMode "scoped" set in package.json's pepr block?)`,
          );
      }
    }
  }
  return problems;
}

/**
 * The controller's rules that belong to its own namespace only: the leader-election Lease and
 * the admin CA Secret. Bound to Pepr's ServiceAccount (pepr-<uuid>).
 */
export function namespacedRbac(uuid: string, namespace = CONTROLLER_NAMESPACE) {
  const name = `pepr-${uuid}-kengine`;
  const sa = `pepr-${uuid}`;
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name, namespace },
      rules: [
        // Leader election: create the Lease once, then read and renew (server-side apply) it.
        { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] },
        {
          apiGroups: ["coordination.k8s.io"],
          resources: ["leases"],
          resourceNames: [LEASE_NAME],
          verbs: ["get", "patch"],
        },
        // The admin channel's CA: read by name (creation is covered by the ClusterRole's
        // secrets "create", which the per-Gateway Secrets need anyway).
        {
          apiGroups: [""],
          resources: ["secrets"],
          resourceNames: [CA_SECRET_NAME],
          verbs: ["get"],
        },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name, namespace },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
      subjects: [{ kind: "ServiceAccount", name: sa, namespace }],
    },
  ] as const;
}
