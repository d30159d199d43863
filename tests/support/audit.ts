/**
 * The local kube-apiserver's audit log (hack/cluster.sh: status-subresource writes of the
 * Gateway API and gateway.kengine.io, and HTTPRoute creates, at Metadata level; JSON lines in
 * .local/logs/audit.log plus rotated audit-<time>.log files).
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { localDir } from "./paths";

export interface AuditEvent {
  readonly stage: string;
  readonly verb: string;
  readonly userAgent?: string;
  readonly user?: { readonly username?: string };
  readonly objectRef?: {
    readonly resource?: string;
    readonly subresource?: string;
    readonly namespace?: string;
    readonly name?: string;
    readonly apiGroup?: string;
  };
  readonly responseStatus?: { readonly code?: number };
  readonly requestReceivedTimestamp: string;
  /** Set by admission plugins, e.g. `failed-open.validating.webhook.admission.k8s.io/round_0_index_1`. */
  readonly annotations?: Readonly<Record<string, string>>;
}

/**
 * The webhooks the API server could not call and admitted the request anyway (failurePolicy
 * Ignore), as its audit annotations name them for one completed create.
 */
export function webhooksFailedOpen(e: AuditEvent): string[] {
  return Object.entries(e.annotations ?? {})
    .filter(([k]) => k.startsWith("failed-open.validating.webhook.admission.k8s.io/"))
    .map(([, webhook]) => webhook);
}

const logs = join(localDir, "logs");
export const auditLogPath = join(logs, "audit.log");

/** Whether the API server writes an audit log (hack/cluster.sh up restarts it with one). */
export const auditLogEnabled = (): boolean => existsSync(auditLogPath);

/** Every completed request in the audit log and its rotated files, oldest file first. */
export function auditEvents(): AuditEvent[] {
  const files = readdirSync(logs)
    .filter(f => /^audit(-.+)?\.log$/.test(f))
    .sort((a, b) => (a === "audit.log" ? 1 : b === "audit.log" ? -1 : a < b ? -1 : 1));
  const out: AuditEvent[] = [];
  for (const f of files)
    for (const line of readFileSync(join(logs, f), "utf8").split("\n")) {
      if (!line.trim()) continue;
      try {
        const e = JSON.parse(line) as AuditEvent;
        if (e.stage === "ResponseComplete") out.push(e);
      } catch {
        // a line being written while we read
      }
    }
  return out;
}

/** Status writes (PATCH/PUT of a /status subresource) the API server accepted. */
export const isStatusWrite = (e: AuditEvent): boolean =>
  (e.verb === "patch" || e.verb === "update") &&
  e.objectRef?.subresource === "status" &&
  (e.responseStatus?.code ?? 0) >= 200 &&
  (e.responseStatus?.code ?? 0) < 300;

/** The audit event of a successful create of HTTPRoute `namespace/name`, once it is written. */
export const routeCreateEvent = (namespace: string, name: string): AuditEvent | undefined =>
  auditEvents().find(
    e =>
      e.verb === "create" &&
      e.objectRef?.resource === "httproutes" &&
      e.objectRef.namespace === namespace &&
      e.objectRef.name === name &&
      (e.responseStatus?.code ?? 0) < 300,
  );
