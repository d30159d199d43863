/**
 * Separate ServiceAccounts for Pepr's two Deployments (docs/rbac.md, "Admission and the
 * watcher: two ServiceAccounts"). Pepr 1.1.4's generator runs both under `pepr-<uuid>`, bound
 * to the watcher's ClusterRole (Secrets, workloads, status writes). `npm run build`
 * (hack/dist.ts) gives the admission Deployment its own account `pepr-<uuid>-admission` with
 * exactly what it uses, in the module YAML and in the Helm chart:
 *
 * - `capabilities/admission.ts`: get GatewayClasses, Gateways, ListenerSets (is this route's
 *   parent ours?); list HTTPRoutes, GRPCRoutes (routes by Service) and KengineParameters
 *   (platform-owned parameters); get and list IngressClasses (is this Ingress's class ours, by
 *   name or as the cluster's default?). hack/service-accounts.test.ts reads the file's
 *   lookups and fails when one is missing here: without it, admission denies every Ingress.
 * - Pepr 1.1.4's runtime (`pepr/dist/controller.js`, then its StoreController): it applies the
 *   PeprStore CRD at start (server-side apply: patch, or create when missing; it exits when
 *   refused) and opens its two stores in its namespace (get, create by apply, patch, and a
 *   watch by name, which is a list and a watch with a `metadata.name` field selector).
 *
 * Every write is limited by name to Pepr's own objects; no Secret, no workload, no status.
 * The watcher keeps `pepr-<uuid>` and gets `POD_NAME` from the downward API, the stable
 * identity of its leader-election Lease (capabilities/controller.ts).
 *
 * Pure; hack/service-accounts.test.ts checks the transformation, tests/e2e/deployed.test.ts
 * runs the result (admission under its own token, `kubectl auth can-i` of that account, the
 * Lease holder).
 */
import type { PolicyRule } from "./dist-check";
import { CONTROLLER_NAMESPACE } from "./dist-check";

type Obj = Record<string, unknown>;

/** The admission Deployment's ServiceAccount (and its roles' name). */
export const admissionAccount = (uuid: string): string => `pepr-${uuid}-admission`;

/** The PeprStore CRD Pepr's runtime applies at start. */
export const PEPR_STORE_CRD = "peprstores.pepr.dev";

/** What capabilities/admission.ts reads, cluster-wide. */
export const ADMISSION_READS: readonly PolicyRule[] = [
  {
    apiGroups: ["gateway.networking.k8s.io"],
    resources: ["gatewayclasses", "gateways", "listenersets"],
    verbs: ["get"],
  },
  {
    apiGroups: ["gateway.networking.k8s.io"],
    resources: ["httproutes", "grpcroutes"],
    verbs: ["list"],
  },
  { apiGroups: ["gateway.kengine.io"], resources: ["kengineparameters"], verbs: ["list"] },
  { apiGroups: ["networking.k8s.io"], resources: ["ingressclasses"], verbs: ["get", "list"] },
];

/** The admission account's ServiceAccount, ClusterRole, Role and bindings. */
export function admissionRbac(uuid: string, namespace = CONTROLLER_NAMESPACE): readonly Obj[] {
  const name = admissionAccount(uuid);
  const rbac = "rbac.authorization.k8s.io/v1";
  const subjects = [{ kind: "ServiceAccount", name, namespace }];
  const roleRef = (kind: string) => ({ apiGroup: "rbac.authorization.k8s.io", kind, name });
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name, namespace } },
    {
      apiVersion: rbac,
      kind: "ClusterRole",
      metadata: { name },
      rules: [
        ...ADMISSION_READS,
        // Pepr's runtime applies its store CRD at start (and exits if it cannot).
        {
          apiGroups: ["apiextensions.k8s.io"],
          resources: ["customresourcedefinitions"],
          resourceNames: [PEPR_STORE_CRD],
          verbs: ["create", "patch"],
        },
      ],
    },
    {
      apiVersion: rbac,
      kind: "ClusterRoleBinding",
      metadata: { name },
      roleRef: roleRef("ClusterRole"),
      subjects,
    },
    {
      apiVersion: rbac,
      kind: "Role",
      metadata: { name, namespace },
      rules: [
        // Pepr's stores, by name: get, create and patch (by apply), watch by name.
        {
          apiGroups: ["pepr.dev"],
          resources: ["peprstores"],
          resourceNames: [`pepr-${uuid}-store`, `pepr-${uuid}-schedule`],
          verbs: ["get", "list", "watch", "create", "patch"],
        },
      ],
    },
    {
      apiVersion: rbac,
      kind: "RoleBinding",
      metadata: { name, namespace },
      roleRef: roleRef("Role"),
      subjects,
    },
  ];
}

/** The watcher's Lease identity: its pod's name (downward API). */
export const POD_NAME_ENV = {
  name: "POD_NAME",
  valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.name" } },
} as const;

interface Container extends Obj {
  readonly env?: readonly { readonly name: string }[];
}
interface PodTemplate {
  readonly metadata?: { readonly labels?: Record<string, string> };
  readonly spec?: Obj & { readonly containers?: readonly Container[] };
}
const controllerOf = (o: Obj): string | undefined =>
  o.kind === "Deployment"
    ? (o.spec as { template?: PodTemplate } | undefined)?.template?.metadata?.labels?.[
        "pepr.dev/controller"
      ]
    : undefined;

function withPodSpec(o: Obj, edit: (spec: NonNullable<PodTemplate["spec"]>) => Obj): Obj {
  const spec = o.spec as Obj & { template: PodTemplate };
  return {
    ...o,
    spec: { ...spec, template: { ...spec.template, spec: edit(spec.template.spec ?? {}) } },
  };
}

export type Split = { ok: true; value: Obj[] } | { ok: false; error: string };

/**
 * The module YAML's objects with the admission Deployment on its own account, the watcher's
 * containers given POD_NAME, and the admission RBAC after Pepr's objects. Idempotent.
 */
export function splitServiceAccounts(documents: readonly Obj[], uuid: string): Split {
  const roles = documents.map(controllerOf);
  for (const want of ["admission", "watcher"])
    if (roles.filter(r => r === want).length !== 1)
      return { ok: false, error: `expected one Deployment labelled pepr.dev/controller=${want}` };
  const name = admissionAccount(uuid);
  const extra = admissionRbac(uuid);
  const key = (o: Obj) => `${o.kind as string}/${(o.metadata as { name?: string })?.name}`;
  const extraKeys = new Set(extra.map(key));
  const value = documents
    .filter(o => !extraKeys.has(key(o)))
    .map((o, i) => {
      if (roles[i] === "admission")
        return withPodSpec(o, spec => ({ ...spec, serviceAccountName: name }));
      if (roles[i] === "watcher")
        return withPodSpec(o, spec => ({
          ...spec,
          containers: (spec.containers ?? []).map(c => ({
            ...c,
            env: [...(c.env ?? []).filter(e => e.name !== POD_NAME_ENV.name), POD_NAME_ENV],
          })),
        }));
      return o;
    });
  return { ok: true, value: [...value, ...extra] };
}

/**
 * The Helm chart's side (its templates are text): the admission Deployment's account, the
 * watcher's POD_NAME, and a template with the admission RBAC (`name` → `{{ .Values.uuid }}`).
 * Fails when Pepr's templates no longer hold the lines this edits. Idempotent.
 */
export function chartEdits(
  templates: { readonly admission: string; readonly watcher: string },
  uuid: string,
  stringify: (o: Obj) => string,
):
  | { ok: true; value: { admission: string; watcher: string; rbac: string } }
  | { ok: false; error: string } {
  const account = /^(\s*serviceAccountName: \{\{ \.Values\.uuid \}\})(-admission)?$/m;
  if (!account.test(templates.admission))
    return {
      ok: false,
      error: "admission-deployment.yaml has no `serviceAccountName: {{ .Values.uuid }}`",
    };
  const watchMode = /^(\s*)- name: PEPR_WATCH_MODE\n\s*value: "true"\n/m;
  const m = watchMode.exec(templates.watcher);
  if (!m)
    return {
      ok: false,
      error: 'watcher-deployment.yaml has no `PEPR_WATCH_MODE: "true"` env entry',
    };
  const indent = m[1]!;
  const podName = [
    `${indent}- name: POD_NAME`,
    `${indent}  valueFrom:`,
    `${indent}    fieldRef:`,
    `${indent}      apiVersion: v1`,
    `${indent}      fieldPath: metadata.name`,
    "",
  ].join("\n");
  const module = `pepr-${uuid}`;
  const rbac =
    "{{- if .Values.admission.enabled }}\n" +
    admissionRbac(uuid)
      .map(o => stringify(o).split(module).join("{{ .Values.uuid }}"))
      .join("---\n") +
    "{{- end }}\n";
  return {
    ok: true,
    value: {
      admission: templates.admission.replace(account, "$1-admission"),
      watcher: templates.watcher.includes("- name: POD_NAME")
        ? templates.watcher
        : templates.watcher.replace(watchMode, s => s + podName),
      rbac,
    },
  };
}
