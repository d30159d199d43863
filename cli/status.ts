/**
 * `kubectl kengine status`: per Gateway of our classes, what the controller's objects say:
 * proxies running the current config (KengineProxy), the last push and its error, listeners and
 * routes the controller did not accept (their conditions, verbatim), and certificate expiries
 * (listener Secrets, ACME Secrets, the proxies' admin-channel certificates). Pure: the cluster
 * is read by cluster.ts, the time is an argument.
 */
import { X509Certificate } from "node:crypto";
import { CONTROLLER_NAME } from "../capabilities/snapshot";
import type { KubeObject } from "../capabilities/snapshot";
import { AcmeAnnotation, ACME_LABEL } from "../capabilities/validation/acme";
import {
  ClusterView,
  ROUTE_KINDS,
  StoredCondition,
  WithStatus,
  conditionOf,
  keyOf,
  ourGateways,
  proxyGateway,
  proxySynced,
} from "./model";
import { CellInput, age, cell, formatTable } from "./table";

/** Certificates closer to expiry than this are a problem (renewal should have happened). */
export const EXPIRY_WARNING_DAYS = 7;

export interface ProxyReport {
  readonly name: string;
  readonly pod?: string;
  readonly synced: boolean;
  readonly appliedHash?: string;
  readonly desiredHash?: string;
  readonly channel?: string;
  readonly lastSyncTime?: string;
  readonly lastError?: string;
}

export interface ObjectProblem {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  /** Listener name, for a listener's condition. */
  readonly listener?: string;
  readonly condition: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
}

export interface CertificateReport {
  /** What serves it: `listener <name>` or `proxy <pod> (admin channel)`. */
  readonly usedBy: string;
  /** `Secret <ns>/<name>` (certificateRefs or ACME). */
  readonly source: string;
  readonly notAfter?: string;
  /** ACME: Pending, Valid or Failed, and the CA's last word. */
  readonly acmeState?: string;
  readonly acmeMessage?: string;
}

export interface GatewayReport {
  readonly namespace: string;
  readonly name: string;
  readonly gatewayClassName: string;
  readonly accepted?: StoredCondition;
  readonly programmed?: StoredCondition;
  readonly proxies: {
    readonly synced: number;
    readonly total: number;
    readonly items: readonly ProxyReport[];
  };
  readonly lastSyncTime?: string;
  readonly lastError?: string;
  readonly routes: { readonly attached: number; readonly accepted: number };
  /** Listeners and routes with a condition saying something is wrong, verbatim. */
  readonly refused: readonly ObjectProblem[];
  readonly certificates: readonly CertificateReport[];
  /** One line per thing that is wrong; empty: healthy. */
  readonly problems: readonly string[];
}

export interface StatusReport {
  readonly gateways: readonly GatewayReport[];
  /** Kinds the user may not read: the report may miss what depends on them. */
  readonly unreadable: readonly string[];
  readonly ok: boolean;
}

type RouteLike = WithStatus & {
  readonly spec?: {
    readonly parentRefs?: readonly {
      name: string;
      namespace?: string;
      kind?: string;
      sectionName?: string;
    }[];
  };
};

/** Conditions that are wrong when False (and Conflicted when True). */
const wrong = (c: StoredCondition): boolean =>
  c.type === "Conflicted" ? c.status === "True" : c.status === "False";

const secretData = (o: KubeObject | undefined, key: string): string | undefined => {
  const v = (o as { data?: Record<string, string> } | undefined)?.data?.[key];
  return v === undefined ? undefined : Buffer.from(v, "base64").toString("utf8");
};

function certificateNotAfter(pem: string | undefined): string | undefined {
  if (!pem) return undefined;
  try {
    return new Date(new X509Certificate(pem).validTo).toISOString();
  } catch {
    return undefined;
  }
}

interface ListenerSpec {
  readonly name: string;
  readonly hostname?: string;
  readonly tls?: {
    readonly certificateRefs?: readonly { name: string; namespace?: string; kind?: string }[];
    readonly options?: Readonly<Record<string, string>>;
  };
}

function certificates(gw: WithStatus, view: ClusterView): CertificateReport[] {
  const ns = gw.metadata.namespace ?? "";
  const secrets = new Map(view.objects.filter(o => o.kind === "Secret").map(o => [keyOf(o), o]));
  const out: CertificateReport[] = [];
  for (const l of (gw.spec?.["listeners"] ?? []) as ListenerSpec[]) {
    for (const ref of l.tls?.certificateRefs ?? []) {
      if ((ref.kind ?? "Secret") !== "Secret") continue;
      const key = `${ref.namespace ?? ns}/${ref.name}`;
      const notAfter = certificateNotAfter(secretData(secrets.get(key), "tls.crt"));
      out.push({
        usedBy: `listener ${l.name}`,
        source: `Secret ${key}`,
        ...(notAfter && { notAfter }),
      });
    }
    if (l.tls?.options?.["kengine.io/acme-issuer"] && l.hostname) {
      const s = [...secrets.values()].find(
        o =>
          o.metadata.namespace === ns &&
          o.metadata.labels?.[ACME_LABEL] === "certificate" &&
          o.metadata.annotations?.[AcmeAnnotation.name] === l.hostname,
      );
      const a = s?.metadata.annotations ?? {};
      out.push({
        usedBy: `listener ${l.name}`,
        source: s ? `Secret ${keyOf(s)} (ACME)` : `ACME ${l.hostname} (no Secret yet)`,
        ...(a[AcmeAnnotation.notAfter] && { notAfter: a[AcmeAnnotation.notAfter] }),
        ...(a[AcmeAnnotation.state] && { acmeState: a[AcmeAnnotation.state] }),
        ...(a[AcmeAnnotation.message] && { acmeMessage: a[AcmeAnnotation.message] }),
      });
    }
  }
  for (const p of view.proxies)
    if (proxyGateway(p) === keyOf(gw) && p.status?.channel?.serverCertificateNotAfter)
      out.push({
        usedBy: `proxy ${p.spec?.pod ?? p.metadata.name} (admin channel)`,
        source: `Secret ${ns}/${gw.metadata.name}-kengine-admin`,
        notAfter: p.status.channel.serverCertificateNotAfter,
      });
  return out;
}

/** Whether a route's parentRef names this Gateway (directly or through one of its ListenerSets). */
function parentOf(
  ref: { name: string; namespace?: string; kind?: string },
  routeNamespace: string,
  gw: KubeObject,
  listenerSets: ReadonlySet<string>,
): boolean {
  const key = `${ref.namespace ?? routeNamespace}/${ref.name}`;
  if ((ref.kind ?? "Gateway") === "Gateway") return key === keyOf(gw);
  return ref.kind === "ListenerSet" && listenerSets.has(key);
}

export function gatewayReport(gw: WithStatus, view: ClusterView, now: Date): GatewayReport {
  const problems: string[] = [];
  const gwKey = keyOf(gw);
  const accepted = conditionOf(gw.status?.conditions, "Accepted");
  const programmed = conditionOf(gw.status?.conditions, "Programmed");
  if (accepted?.status !== "True")
    problems.push(
      `Gateway ${gwKey}: Accepted=${accepted?.status ?? "<unset>"} ${accepted?.reason ?? ""}: ${accepted?.message ?? "no status from the controller yet"}`,
    );
  else if (programmed?.status !== "True")
    problems.push(
      `Gateway ${gwKey}: Programmed=${programmed?.status ?? "<unset>"} ${programmed?.reason ?? ""}: ${programmed?.message ?? ""}`,
    );

  const items: ProxyReport[] = view.proxies
    .filter(p => proxyGateway(p) === gwKey)
    .sort((a, b) => keyOf(a).localeCompare(keyOf(b)))
    .map(p => ({
      name: p.metadata.name,
      ...(p.spec?.pod && { pod: p.spec.pod }),
      synced: proxySynced(p),
      ...(p.status?.appliedHash && { appliedHash: p.status.appliedHash }),
      ...(p.status?.desiredHash && { desiredHash: p.status.desiredHash }),
      ...(p.status?.channel?.state && { channel: p.status.channel.state }),
      ...(p.status?.lastSyncTime && { lastSyncTime: p.status.lastSyncTime }),
      ...(p.status?.lastError && { lastError: p.status.lastError }),
    }));
  for (const p of items)
    if (!p.synced)
      problems.push(
        `proxy ${p.pod ?? p.name}: not running the current config (applied ${p.appliedHash ?? "none"}, desired ${p.desiredHash ?? "none"})${p.lastError ? `: ${p.lastError}` : ""}`,
      );
  const synced = items.filter(p => p.synced).length;
  const lastSyncTime = items
    .map(p => p.lastSyncTime)
    .filter(Boolean)
    .sort()
    .at(-1);
  const lastError = items.find(p => p.lastError && !p.synced)?.lastError;

  const refused: ObjectProblem[] = [];
  const ns = gw.metadata.namespace ?? "";
  for (const l of gw.status?.listeners ?? [])
    for (const c of l.conditions ?? [])
      if (wrong(c))
        refused.push({
          kind: "Listener",
          namespace: ns,
          name: gw.metadata.name,
          listener: l.name,
          condition: c.type,
          status: c.status,
          ...(c.reason && { reason: c.reason }),
          ...(c.message && { message: c.message }),
        });

  const listenerSets = new Set(
    view.objects
      .filter(o => o.kind === "ListenerSet")
      .filter(o => {
        const p = (o as WithStatus).spec?.["parentRef"] as
          | { name: string; namespace?: string }
          | undefined;
        return p && `${p.namespace ?? o.metadata.namespace}/${p.name}` === gwKey;
      })
      .map(keyOf),
  );
  let attached = 0;
  let acceptedRoutes = 0;
  for (const r of view.objects as readonly RouteLike[]) {
    if (!(ROUTE_KINDS as readonly string[]).includes(r.kind ?? "")) continue;
    const rns = r.metadata.namespace ?? "";
    const refs = (r.spec?.parentRefs ?? []).filter(ref => parentOf(ref, rns, gw, listenerSets));
    if (refs.length === 0) continue;
    attached++;
    let ok = true;
    for (const ref of refs) {
      const entry = r.status?.parents?.find(
        p =>
          p.controllerName === CONTROLLER_NAME &&
          p.parentRef.name === ref.name &&
          (p.parentRef.namespace ?? rns) === (ref.namespace ?? rns) &&
          (p.parentRef.sectionName ?? "") === (ref.sectionName ?? ""),
      );
      if (!entry) {
        ok = false;
        refused.push({
          kind: r.kind!,
          namespace: rns,
          name: r.metadata.name,
          condition: "Accepted",
          status: "Unknown",
          message: "no status from the controller for this parent yet",
        });
        continue;
      }
      for (const c of entry.conditions ?? [])
        if (wrong(c)) {
          ok = false;
          refused.push({
            kind: r.kind!,
            namespace: rns,
            name: r.metadata.name,
            condition: c.type,
            status: c.status,
            ...(c.reason && { reason: c.reason }),
            ...(c.message && { message: c.message }),
          });
        }
    }
    if (ok) acceptedRoutes++;
  }
  for (const o of refused)
    problems.push(
      `${o.kind} ${o.namespace}/${o.name}${o.listener ? ` listener ${o.listener}` : ""}: ${o.condition}=${o.status}${o.reason ? ` ${o.reason}` : ""}${o.message ? `: ${o.message}` : ""}`,
    );

  const certs = certificates(gw, view);
  const soon = now.getTime() + EXPIRY_WARNING_DAYS * 86_400_000;
  for (const c of certs) {
    if (c.acmeState === "Failed")
      problems.push(
        `certificate of ${c.usedBy} (${c.source}): ACME Failed${c.acmeMessage ? `: ${c.acmeMessage}` : ""}`,
      );
    if (c.notAfter && Date.parse(c.notAfter) < soon)
      problems.push(`certificate of ${c.usedBy} (${c.source}) expires ${c.notAfter}`);
  }

  return {
    namespace: ns,
    name: gw.metadata.name,
    gatewayClassName: String(gw.spec?.["gatewayClassName"] ?? ""),
    ...(accepted && { accepted }),
    ...(programmed && { programmed }),
    proxies: { synced, total: items.length, items },
    ...(lastSyncTime && { lastSyncTime }),
    ...(lastError && { lastError }),
    routes: { attached, accepted: acceptedRoutes },
    refused,
    certificates: certs,
    problems,
  };
}

/** The report of every Gateway of ours in `namespace` (all when undefined), or only `name`. */
export function statusReport(
  view: ClusterView,
  now: Date,
  filter: { readonly namespace?: string; readonly name?: string } = {},
): StatusReport {
  const gateways = ourGateways(view)
    .filter(g => filter.namespace === undefined || g.metadata.namespace === filter.namespace)
    .filter(g => filter.name === undefined || g.metadata.name === filter.name)
    .map(g => gatewayReport(g, view, now));
  return {
    gateways,
    unreadable: view.unreadable,
    ok: gateways.every(g => g.problems.length === 0),
  };
}

const earliest = (certs: readonly CertificateReport[]): string | undefined =>
  certs
    .map(c => c.notAfter)
    .filter((t): t is string => !!t)
    .sort()[0];

/** The table (and, below it, every problem) `status` prints. */
export function formatStatus(
  r: StatusReport,
  now: Date,
  colour: boolean,
  allNamespaces: boolean,
): string {
  if (r.gateways.length === 0) return "No Gateways of the Kengine classes found.";
  const headers = [
    ...(allNamespaces ? ["namespace"] : []),
    "name",
    "class",
    "programmed",
    "proxies",
    "last-sync",
    "routes",
    "refused",
    "cert-expiry",
  ];
  const rows: CellInput[][] = r.gateways.map(g => {
    const programmed = g.programmed?.status ?? "Unknown";
    const expiry = earliest(g.certificates);
    const soon =
      expiry !== undefined && Date.parse(expiry) < now.getTime() + EXPIRY_WARNING_DAYS * 86_400_000;
    return [
      ...(allNamespaces ? [g.namespace] : []),
      g.name,
      g.gatewayClassName,
      cell(programmed, programmed === "True" ? "ok" : "bad"),
      cell(
        `${g.proxies.synced}/${g.proxies.total}`,
        g.proxies.synced === g.proxies.total && g.proxies.total > 0 ? "ok" : "bad",
      ),
      g.lastSyncTime ? age(g.lastSyncTime, now) : undefined,
      cell(
        `${g.routes.accepted}/${g.routes.attached}`,
        g.routes.accepted === g.routes.attached ? "ok" : "bad",
      ),
      cell(String(g.refused.length), g.refused.length === 0 ? undefined : "bad"),
      expiry ? cell(expiry.slice(0, 10), soon ? "bad" : undefined) : undefined,
    ];
  });
  const lines = [formatTable(headers, rows, colour)];
  for (const g of r.gateways)
    if (g.problems.length > 0) {
      lines.push("", `${g.namespace}/${g.name}:`);
      for (const p of g.problems) lines.push(`  ${p}`);
    }
  if (r.unreadable.length > 0)
    lines.push(
      "",
      `Could not list ${r.unreadable.join(", ")} (forbidden): what depends on them is not shown.`,
    );
  return lines.join("\n");
}
