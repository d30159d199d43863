/**
 * The admission/watcher ServiceAccount split (hack/service-accounts.ts), applied to objects and
 * template lines of the shape Pepr 1.1.4's generators write (`pepr build`: the module YAML's
 * Deployments and Pepr's Helm templates, reduced to what the split reads and writes).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse, parseAllDocuments, stringify } from "yaml";
import { LIST_PATHS } from "../capabilities/snapshot/kinds";
import { wildcardProblems } from "./dist-check";
import {
  ADMISSION_READS,
  admissionAccount,
  admissionRbac,
  chartEdits,
  splitServiceAccounts,
} from "./service-accounts";

type Obj = Record<string, unknown>;
const UUID = "0b5e1f36-7c1d-4f2e-9a3b-123456789abc";
const NAME = `pepr-${UUID}`;

const peprDeployment = (controller: "admission" | "watcher"): Obj => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: {
    name: controller === "watcher" ? `${NAME}-watcher` : NAME,
    namespace: "pepr-system",
    labels: { app: NAME, "pepr.dev/controller": controller },
  },
  spec: {
    template: {
      metadata: { labels: { app: NAME, "pepr.dev/controller": controller } },
      spec: {
        serviceAccountName: NAME,
        containers: [
          {
            name: controller === "watcher" ? "watcher" : "server",
            env: [
              { name: "PEPR_WATCH_MODE", value: controller === "watcher" ? "true" : "false" },
              { name: "LOG_LEVEL", value: "info" },
            ],
          },
        ],
      },
    },
  },
});

/** Pepr's generated objects, as `pepr build` writes them into the module YAML (excerpt). */
const generated = (): Obj[] => [
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: NAME },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: NAME },
    subjects: [{ kind: "ServiceAccount", name: NAME, namespace: "pepr-system" }],
  },
  { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: NAME, namespace: "pepr-system" } },
  peprDeployment("watcher"),
  peprDeployment("admission"),
];

/**
 * Pepr 1.1.4's Helm templates (admissionDeployTemplate, watcherDeployTemplate in its
 * src/lib/assets/helm.ts), the lines the split edits.
 */
const peprTemplate = (controller: "admission" | "watcher") => `    spec:
      serviceAccountName: {{ .Values.uuid }}
      containers:
        - name: ${controller === "watcher" ? "watcher" : "server"}
          env:
            {{- toYaml .Values.${controller}.env | nindent 12 }}
            - name: PEPR_WATCH_MODE
              value: "${controller === "watcher"}"
            {{- if .Values.additionalIgnoredNamespaces }}
            - name: PEPR_ADDITIONAL_IGNORED_NAMESPACES
              value: "{{ join ", " .Values.additionalIgnoredNamespaces }}"
            {{- end }}
          envFrom:
`;

interface Deployment {
  spec: {
    template: {
      metadata: { labels: Record<string, string> };
      spec: {
        serviceAccountName: string;
        containers: { env?: { name: string; value?: string; valueFrom?: unknown }[] }[];
      };
    };
  };
}
const deployment = (docs: readonly Obj[], controller: string) =>
  docs.find(
    o =>
      o.kind === "Deployment" &&
      (o as unknown as Deployment).spec.template.metadata.labels["pepr.dev/controller"] ===
        controller,
  ) as unknown as Deployment;

const ok = <T>(r: { ok: true; value: T } | { ok: false; error: string }): T => {
  if (!r.ok) throw new Error(r.error);
  return r.value;
};

describe("separate ServiceAccounts for admission and the watcher", () => {
  it("runs Pepr's admission Deployment under its own account and leaves the watcher on pepr-<uuid>", () => {
    const before = generated();
    // What Pepr generates: one account for both.
    expect(deployment(before, "admission").spec.template.spec.serviceAccountName).toBe(NAME);
    const after = ok(splitServiceAccounts(before, UUID));
    expect(deployment(after, "admission").spec.template.spec.serviceAccountName).toBe(
      `${NAME}-admission`,
    );
    expect(deployment(after, "watcher").spec.template.spec.serviceAccountName).toBe(NAME);
    // Pepr's ClusterRoleBinding still binds the watcher's account only.
    const crb = after.find(
      o => o.kind === "ClusterRoleBinding" && (o.metadata as Obj).name === NAME,
    );
    expect((crb as { subjects: { name: string }[] }).subjects.map(s => s.name)).toEqual([NAME]);
    // The new account exists, and each of its roles is bound to it alone.
    const mine = after.filter(o => (o.metadata as Obj).name === admissionAccount(UUID));
    expect(mine.map(o => o.kind).sort()).toEqual([
      "ClusterRole",
      "ClusterRoleBinding",
      "Role",
      "RoleBinding",
      "ServiceAccount",
    ]);
    for (const b of mine.filter(o => String(o.kind).endsWith("Binding")))
      expect(b).toMatchObject({
        subjects: [
          { kind: "ServiceAccount", name: admissionAccount(UUID), namespace: "pepr-system" },
        ],
      });
  });

  it("gives every watcher container POD_NAME from the downward API, once", () => {
    const after = ok(splitServiceAccounts(generated(), UUID));
    for (const c of deployment(after, "watcher").spec.template.spec.containers) {
      const pod = (c.env ?? []).filter(e => e.name === "POD_NAME");
      expect(pod).toEqual([
        {
          name: "POD_NAME",
          valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.name" } },
        },
      ]);
      // Pepr's own entries are kept.
      expect(c.env?.find(e => e.name === "PEPR_WATCH_MODE")?.value).toBe("true");
    }
    for (const c of deployment(after, "admission").spec.template.spec.containers)
      expect((c.env ?? []).some(e => e.name === "POD_NAME")).toBe(false);
  });

  it("is idempotent (dist.ts may run again on its own output)", () => {
    const once = ok(splitServiceAccounts(generated(), UUID));
    expect(ok(splitServiceAccounts(once, UUID))).toEqual(once);
  });

  it("refuses input without exactly one admission and one watcher Deployment", () => {
    const docs = generated().filter(o => o.kind !== "Deployment");
    const r = splitServiceAccounts(docs, UUID);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toMatch(/pepr\.dev\/controller=admission/);
  });

  it("grants admission only reads, and writes only Pepr's own objects by name", () => {
    const roles = admissionRbac(UUID).filter(o => String(o.kind).endsWith("Role")) as {
      kind: string;
      metadata: { name: string };
      rules: {
        apiGroups: string[];
        resources: string[];
        resourceNames?: string[];
        verbs: string[];
      }[];
    }[];
    expect(wildcardProblems(roles)).toEqual([]);
    const rules = roles.flatMap(r => r.rules);
    expect(rules.flatMap(r => r.resources)).not.toContain("secrets");
    for (const r of rules) {
      const writes = r.verbs.filter(v => !["get", "list", "watch"].includes(v));
      if (writes.length) {
        expect(r.resourceNames?.length).toBeGreaterThan(0);
        expect(r.apiGroups).toEqual(
          expect.arrayContaining([expect.stringMatching(/pepr\.dev|apiextensions/)]),
        );
      }
    }
    // What capabilities/admission.ts reads is all there.
    for (const read of ADMISSION_READS) expect(rules).toContainEqual(read);
  });

  it("grants every lookup capabilities/admission.ts makes (a missing one denies the object)", () => {
    // Deployed admission once lacked IngressClasses: every Ingress in the cluster was denied
    // ("could not tell whether it belongs to a Kengine GatewayClass ... 403"), seen only when
    // the Ingress conformance suite first ran against the deployed module.
    const source = readFileSync(join(__dirname, "..", "capabilities", "admission.ts"), "utf8");
    const lookups = [...source.matchAll(/\b(read|list)<\w+>\("(\w+)"/g)].map(m => ({
      verb: m[1] === "read" ? "get" : "list",
      kind: m[2] as keyof typeof LIST_PATHS,
    }));
    const kinds = new Set(lookups.map(l => l.kind));
    // the ones known today, so that a change in how the file reads objects fails here too
    for (const k of ["GatewayClass", "Gateway", "ListenerSet", "HTTPRoute", "IngressClass"])
      expect(kinds).toContain(k);
    for (const { verb, kind } of lookups) {
      const path = LIST_PATHS[kind];
      expect(path).toBeDefined();
      const [, group, resource] = /^\/apis?\/(?:([^/]+)\/)?[^/]+\/([^/]+)$/.exec(path)!;
      const granted = ADMISSION_READS.some(
        r =>
          (r.apiGroups ?? []).includes(group ?? "") &&
          (r.resources ?? []).includes(resource!) &&
          r.verbs.includes(verb),
      );
      expect({ kind, verb, granted }).toEqual({ kind, verb, granted: true });
    }
  });

  it("edits Pepr's Helm templates the same way and adds the admission RBAC template", () => {
    const templates = {
      admission: peprTemplate("admission"),
      watcher: peprTemplate("watcher"),
    };
    const edited = ok(chartEdits(templates, UUID, o => stringify(o)));
    expect(edited.admission).toMatch(
      /^\s*serviceAccountName: \{\{ \.Values\.uuid \}\}-admission$/m,
    );
    expect(edited.admission.replace("}}-admission", "}}")).toBe(templates.admission);
    expect(edited.watcher).not.toBe(templates.watcher);
    expect(edited.watcher).not.toMatch(/serviceAccountName: \{\{ \.Values\.uuid \}\}-admission/);
    // Rendered with the chart's value (uuid: pepr-<uuid>), the POD_NAME entry is valid YAML
    // in the container's env and the RBAC template is the same objects as the module YAML's.
    const render = (t: string) =>
      t
        .split("{{ .Values.uuid }}")
        .join(NAME)
        .split("\n")
        .filter(l => !l.includes("{{"))
        .join("\n");
    const env = /^(\s*)env:\n([\s\S]*?)^\1envFrom:/m.exec(render(edited.watcher));
    expect(env).not.toBeNull();
    const entries = parse(env![2]!) as { name: string }[];
    expect(entries.filter(e => e.name === "POD_NAME")).toEqual([
      {
        name: "POD_NAME",
        valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.name" } },
      },
    ]);
    expect(parseAllDocuments(render(edited.rbac)).map(d => d.toJS())).toEqual(admissionRbac(UUID));
    // Idempotent.
    expect(ok(chartEdits(edited, UUID, o => stringify(o)))).toEqual(edited);
  });

  it("fails with the file's name when Pepr's templates change under it", () => {
    const r = chartEdits({ admission: "kind: Deployment\n", watcher: "" }, UUID, o => stringify(o));
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toMatch(/admission-deployment\.yaml/);
  });
});
