/**
 * What `npm run build` checks and adds after `pepr build` (pure but for reading a chart
 * directory; hack/dist.ts does the rest of the I/O):
 * the bundle budget, "no wildcard" in the generated RBAC, and the namespaced Role that Pepr's
 * `rbac` block cannot express (Pepr only generates one ClusterRole). docs/rbac.md explains
 * every rule.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { DEFAULT_LEASE_NAME } from "../capabilities/election/env";
import { CA_SECRET_NAME } from "../capabilities/pki/authority";

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

/** Kubernetes refuses a Secret whose data is over 1 MiB; Helm keeps each release in one. */
export const HELM_RELEASE_LIMIT_BYTES = 1024 * 1024;
/**
 * What the estimate below may use: the limit less what the estimate may miss (the rendered
 * values of the other templates, the release's own fields). The helm e2e compares the estimate
 * with the release Secret a real `helm install` writes.
 */
export const HELM_RELEASE_BUDGET_BYTES = HELM_RELEASE_LIMIT_BYTES - 48 * 1024;
/**
 * Room the build keeps free under HELM_RELEASE_BUDGET_BYTES: the release estimate must leave at
 * least this much, so the next capability fits without first winning bytes back. 150 KiB of
 * release is about 56 KiB of gzipped code, about 170 KiB minified (docs/bench.md, "Bundle,
 * module Secret and Helm release").
 */
export const HELM_RELEASE_HEADROOM_BYTES = 150 * 1024;
/** The most the release estimate may be: the budget less the headroom. */
export const HELM_RELEASE_MAX_BYTES = HELM_RELEASE_BUDGET_BYTES - HELM_RELEASE_HEADROOM_BYTES;

/**
 * Release bytes per gzipped byte of code: the chart holds the gzipped module as a file and the
 * manifest as base64 text; each gzips back to about its bytes, and the release is base64 (4/3).
 */
const RELEASE_PER_GZIP_BYTE = 8 / 3;
/** Module Secret bytes per gzipped byte of code (base64). */
const SECRET_PER_GZIP_BYTE = 4 / 3;

/** The sizes `npm run build` checks. */
export interface BuildSizes {
  /** The module bundle as `pepr build` wrote it (minified). */
  readonly bundleBytes: number;
  readonly gzipBytes: number;
  /** The module Secret's data: the gzipped bundle, base64-encoded. */
  readonly secretBytes: number;
  /** The Helm release Secret, estimated (helmReleaseBytes). */
  readonly releaseBytes: number;
}

/**
 * The bundle, the module Secret and the Helm release, each with the budget it has left. The
 * release binds first (it holds the code twice), so the bundle's and the Secret's room is also
 * said as what the release's budget still allows. Fails when the Secret is over its budget or
 * the release leaves less than HELM_RELEASE_HEADROOM_BYTES of its budget.
 */
export function checkBudgets(file: string, s: BuildSizes): Check {
  const releaseLeft = HELM_RELEASE_MAX_BYTES - s.releaseBytes;
  const gzipRoom = releaseLeft / RELEASE_PER_GZIP_BYTE;
  const rawRoom = gzipRoom * (s.bundleBytes / s.gzipBytes);
  const secretLeft = BUNDLE_BUDGET_BYTES - s.secretBytes;
  const lines = [
    `bundle ${file}: ${kib(s.bundleBytes)} minified (${s.bundleBytes} bytes), ${kib(s.gzipBytes)} gzipped; ` +
      `the release budget leaves room for ~${kib(gzipRoom)} more gzipped code (~${kib(rawRoom)} minified)`,
    `module Secret (gzip+base64): ${kib(s.secretBytes)} (${s.secretBytes} bytes) of ${kib(BUNDLE_BUDGET_BYTES)}: ` +
      `${kib(secretLeft)} left (Pepr refuses over ${kib(PEPR_LIMIT_BYTES)}); the release budget allows ` +
      `~${kib(gzipRoom * SECRET_PER_GZIP_BYTE)} more`,
    `Helm release Secret: ~${kib(s.releaseBytes)} (estimated, ${s.releaseBytes} bytes) of ${kib(HELM_RELEASE_MAX_BYTES)}: ` +
      `${kib(releaseLeft)} left (the budget keeps ${kib(HELM_RELEASE_HEADROOM_BYTES)} of the ` +
      `${kib(HELM_RELEASE_BUDGET_BYTES)} a release may take free for the next capability)`,
  ];
  const problems = [
    ...(secretLeft < 0
      ? [`the module Secret is over its budget of ${kib(BUNDLE_BUDGET_BYTES)}`]
      : []),
    ...(releaseLeft < 0
      ? [
          s.releaseBytes > HELM_RELEASE_BUDGET_BYTES
            ? `the Helm release is over ${kib(HELM_RELEASE_BUDGET_BYTES)}: \`helm install\` would be ` +
              `refused ("Too long", a Secret holds at most ${kib(HELM_RELEASE_LIMIT_BYTES)})`
            : `the Helm release leaves less than ${kib(HELM_RELEASE_HEADROOM_BYTES)} of ` +
              `${kib(HELM_RELEASE_BUDGET_BYTES)} free`,
        ]
      : []),
  ];
  if (problems.length === 0)
    return { ok: true, message: `sizes within budget:\n  ${lines.join("\n  ")}` };
  return {
    ok: false,
    message:
      `${problems.join("; ")}:\n  ${lines.join("\n  ")}\n` +
      `The module's code is most of it: find what grew in pepr build's size table above (or ` +
      `dist/*.js.map) and drop or replace it.`,
  };
}

/** One file of the chart directory: its path in the chart (forward slashes) and bytes. */
export interface ChartFile {
  readonly path: string;
  readonly data: Buffer;
}

/**
 * The size of the release Secret `helm install` would write for the chart, as Helm stores it:
 * the release as JSON (every chart file's bytes base64-encoded, the values, and the rendered
 * manifest) gzipped and base64-encoded. The manifest is estimated as the templates' own text,
 * with `{{ .Files.Get "<file>" | b64enc }}` expanded: that expansion is the module's code, the
 * bulk of it.
 */
export function helmReleaseBytes(files: readonly ChartFile[]): number {
  const byPath = new Map(files.map(f => [f.path, f.data]));
  const b64 = (d: Buffer) => d.toString("base64");
  const templates = files.filter(f => f.path.startsWith("templates/"));
  const other = files.filter(
    f =>
      !f.path.startsWith("templates/") &&
      !["Chart.yaml", "values.yaml", "values.schema.json"].includes(f.path),
  );
  const manifest = templates
    .filter(f => /\.ya?ml$/.test(f.path))
    .map(f =>
      f.data
        .toString("utf8")
        .replace(/\{\{\s*\.Files\.Get\s+"([^"]+)"\s*\|\s*b64enc\s*\}\}/g, (_, p: string) =>
          b64(byPath.get(p) ?? Buffer.alloc(0)),
        ),
    )
    .join("---\n");
  const release = {
    chart: {
      metadata: byPath.get("Chart.yaml")?.toString("utf8"),
      templates: templates.map(f => ({ name: f.path, data: b64(f.data) })),
      values: byPath.get("values.yaml")?.toString("utf8"),
      schema: b64(byPath.get("values.schema.json") ?? Buffer.alloc(0)),
      files: other.map(f => ({ name: f.path, data: b64(f.data) })),
    },
    manifest,
  };
  return Buffer.byteLength(gzipSync(JSON.stringify(release)).toString("base64"));
}

/** Every file under a chart directory, paths relative to it. */
export function chartFiles(dir: string, prefix = ""): ChartFile[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(e =>
    e.isDirectory()
      ? chartFiles(join(dir, e.name), `${prefix}${e.name}/`)
      : [{ path: `${prefix}${e.name}`, data: readFileSync(join(dir, e.name)) }],
  );
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

/** A Deployment as Pepr generates it (the fields the heap check reads). */
export interface ControllerDeployment {
  readonly kind?: string;
  readonly metadata?: { readonly name?: string };
  readonly spec?: {
    readonly template?: {
      readonly spec?: {
        readonly containers?: readonly {
          readonly env?: readonly { readonly name: string; readonly value?: string }[];
          readonly resources?: { readonly limits?: { readonly memory?: string } };
        }[];
      };
    };
  };
}

/** Bytes of a Kubernetes memory quantity (Ki, Mi, Gi and plain bytes; what Pepr writes). */
export const memoryBytes = (q: string): number | undefined => {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(q);
  if (!m) return undefined;
  return Number(m[1]) * { "": 1, Ki: 1024, Mi: 2 ** 20, Gi: 2 ** 30 }[m[2] ?? ""]!;
};

/**
 * Each controller container's V8 heap limit (`--max-old-space-size` in NODE_OPTIONS) must fit
 * inside its memory limit with room for what is not JavaScript heap (Node's code, buffers, the
 * young generation): at most three quarters of it. Without a limit V8 sizes the heap itself and
 * the pod can be OOM-killed before V8 collects.
 */
export function heapLimitProblems(objects: readonly ControllerDeployment[]): string[] {
  const problems: string[] = [];
  for (const d of objects) {
    if (d?.kind !== "Deployment") continue;
    for (const c of d.spec?.template?.spec?.containers ?? []) {
      const flags = c.env?.find(e => e.name === "NODE_OPTIONS")?.value ?? "";
      const heapMiB = Number(/--max-old-space-size=(\d+)/.exec(flags)?.[1] ?? 0);
      const limit = c.resources?.limits?.memory;
      const limitBytes = limit === undefined ? undefined : memoryBytes(limit);
      const name = d.metadata?.name ?? "?";
      if (!heapMiB) problems.push(`${name}: no --max-old-space-size in NODE_OPTIONS`);
      else if (limitBytes === undefined)
        problems.push(`${name}: heap limit ${heapMiB} MiB but no readable memory limit`);
      else if (heapMiB * 2 ** 20 > 0.75 * limitBytes)
        problems.push(
          `${name}: heap limit ${heapMiB} MiB is over three quarters of the memory limit ${limit}`,
        );
    }
  }
  return problems;
}
