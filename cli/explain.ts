/**
 * `kubectl kengine explain ROUTE`: for each hostname and path of a route, whether it is served,
 * by which Gateway listener and proxies, and if not, why. The answer comes from the translator
 * run here over the cluster's objects (model.ts: the controller's own computation) and from
 * the status the controller stored; when the two disagree the report says so. Pure.
 */
import { isDeepStrictEqual } from "node:util";
import { CONTROLLER_NAME } from "../capabilities/snapshot";
import { covers } from "../capabilities/translate";
import type { TranslateResult } from "../capabilities/translate";
import type { GatewayIR, HTTPMatchIR, RouteRef } from "../capabilities/ir";
import {
  ClusterView,
  RouteKindName,
  StoredCondition,
  WithStatus,
  proxyGateway,
  proxySynced,
} from "./model";
import { CellInput, cell, formatTable } from "./table";

export interface ExplainRow {
  readonly hostname: string;
  /** `PathPrefix /api`, `Exact /x`, or `*` for layer-4 routes. */
  readonly path: string;
  /** Extra match conditions (method, headers, query parameters), short. */
  readonly also?: string;
  readonly gateway?: string;
  /** Listener id (`<ns>/<gateway or listenerset>/<listener>`) and port. */
  readonly listener?: string;
  readonly port?: number;
  readonly served: boolean;
  /** Proxies of the Gateway running its current config, of all, and the pods still pending. */
  readonly proxies?: {
    readonly synced: number;
    readonly total: number;
    readonly pending: readonly string[];
  };
  /** Why it is not served, or why it is served only in part (shadowed, pending). */
  readonly why?: string;
  /** The entry another route's identical match wins over (Gateway API precedence). */
  readonly shadowedBy?: string;
}

export interface ParentExplanation {
  readonly parentRef: string;
  /** What the controller stored (its conditions for this parent). */
  readonly stored: readonly StoredCondition[];
  /** What the translator computes here for the same parent. */
  readonly computed: readonly StoredCondition[];
}

export interface ExplainReport {
  readonly route: {
    readonly kind: RouteKindName;
    readonly namespace: string;
    readonly name: string;
  };
  readonly rows: readonly ExplainRow[];
  readonly parents: readonly ParentExplanation[];
  /** Where the stored status and the local translation disagree. */
  readonly notes: readonly string[];
  readonly ok: boolean;
}

type RouteSpec = {
  readonly hostnames?: readonly string[];
  readonly parentRefs?: readonly {
    name: string;
    namespace?: string;
    kind?: string;
    sectionName?: string;
    port?: number;
  }[];
  readonly rules?: readonly { matches?: readonly { path?: { type?: string; value?: string } }[] }[];
};

const pathText = (m: HTTPMatchIR): string => `${m.path.type} ${m.path.value}`;
const alsoText = (m: HTTPMatchIR): string | undefined => {
  const parts = [
    ...(m.method ? [m.method] : []),
    ...m.headers.map(h => `header ${h.name}${h.type === "Exact" ? "=" : "~"}${h.value}`),
    ...m.queryParams.map(q => `query ${q.name}${q.type === "Exact" ? "=" : "~"}${q.value}`),
    ...(m.grpc ? ["gRPC"] : []),
  ];
  return parts.length > 0 ? parts.join(", ") : undefined;
};
const refText = (r: RouteRef): string =>
  `${r.kind} ${r.namespace}/${r.name} (rule ${r.rule}, match ${r.match})`;
const sameRoute = (
  r: { kind: string; namespace: string; name: string },
  k: ExplainReport["route"],
): boolean => r.kind === k.kind && r.namespace === k.namespace && r.name === k.name;

const parentText = (
  p: { name: string; namespace?: string; kind?: string; sectionName?: string; port?: number },
  ns: string,
): string =>
  `${p.kind ?? "Gateway"} ${p.namespace ?? ns}/${p.name}${p.sectionName ? `/${p.sectionName}` : ""}${p.port ? `:${p.port}` : ""}`;

function fleet(view: ClusterView, gateway: string): ExplainRow["proxies"] {
  const ps = view.proxies.filter(p => proxyGateway(p) === gateway);
  const pending = ps
    .filter(p => !proxySynced(p))
    .map(p => p.spec?.pod ?? p.metadata.name)
    .sort();
  return { synced: ps.length - pending.length, total: ps.length, pending };
}

/** The served entries of the route in every Gateway's IR. */
function servedRows(
  irs: readonly GatewayIR[],
  route: ExplainReport["route"],
  view: ClusterView,
): ExplainRow[] {
  const rows: ExplainRow[] = [];
  for (const ir of irs) {
    const gateway = `${ir.namespace}/${ir.name}`;
    const proxies = fleet(view, gateway);
    const pending = (base: ExplainRow): ExplainRow =>
      proxies && proxies.pending.length > 0 && !base.why
        ? {
            ...base,
            why: `pending on ${proxies.pending.join(", ")} (not yet running the current config)`,
          }
        : proxies && proxies.total === 0 && !base.why
          ? { ...base, why: "no proxy of the Gateway is known yet" }
          : base;
    for (const s of ir.httpServers)
      for (const l of s.listeners)
        l.routes.forEach((e, i) => {
          if (!sameRoute(e.route, route)) return;
          const winner = l.routes
            .slice(0, i)
            .find(o => !sameRoute(o.route, route) && isDeepStrictEqual(o.match, e.match));
          const also = alsoText(e.match);
          rows.push(
            pending({
              hostname: e.match.hostname ?? l.hostname ?? "*",
              path: pathText(e.match),
              ...(also && { also }),
              gateway,
              listener: l.id,
              port: s.port,
              served: !winner,
              ...(proxies && { proxies }),
              ...(winner && {
                shadowedBy: refText(winner.route),
                why: `shadowed by ${refText(winner.route)}: identical match, and Gateway API precedence gives it to the older route (creationTimestamp, then namespace/name)`,
              }),
            }),
          );
        });
    for (const s of ir.l4Servers)
      for (const r of s.routes)
        if (sameRoute(r.route, route))
          for (const host of r.serverNames ?? ["*"])
            rows.push(
              pending({
                hostname: host,
                path: "*",
                gateway,
                listener: `${s.protocol} :${s.port}`,
                port: s.port,
                served: true,
                ...(proxies && { proxies }),
              }),
            );
  }
  return rows;
}

/** Explains one route; undefined when it does not exist. */
export function explainRoute(
  view: ClusterView,
  translation: TranslateResult,
  route: ExplainReport["route"],
): ExplainReport | undefined {
  const obj = view.objects.find(
    o =>
      o.kind === route.kind &&
      o.metadata.namespace === route.namespace &&
      o.metadata.name === route.name,
  ) as (WithStatus & { spec?: RouteSpec }) | undefined;
  if (!obj) return undefined;
  const spec = (obj.spec ?? {}) as RouteSpec;
  const rows = servedRows(translation.gateways, route, view);
  const computed = translation.statuses.routes.find(r => sameRoute(r, route));
  const notes: string[] = [];

  const parents: ParentExplanation[] = (spec.parentRefs ?? []).map(ref => {
    const same = (p: { name: string; namespace?: string; sectionName?: string }) =>
      p.name === ref.name &&
      (p.namespace ?? route.namespace) === (ref.namespace ?? route.namespace) &&
      (p.sectionName ?? "") === (ref.sectionName ?? "");
    const stored =
      obj.status?.parents?.find(p => p.controllerName === CONTROLLER_NAME && same(p.parentRef))
        ?.conditions ?? [];
    const local = computed?.parents.find(p => same(p.parentRef))?.conditions ?? [];
    return { parentRef: parentText(ref, route.namespace), stored, computed: local };
  });

  // A parent that did not take the route leaves each of its hostnames unserved.
  const names = spec.hostnames?.length ? spec.hostnames : ["*"];
  for (const p of parents) {
    const bad = [...p.stored, ...(p.stored.length === 0 ? p.computed : [])].filter(
      c => c.status === "False",
    );
    if (p.stored.length === 0 && p.computed.length === 0) {
      for (const hostname of names)
        rows.push({
          hostname,
          path: "*",
          served: false,
          why: `${p.parentRef}: not a Gateway of the Kengine classes, or not found`,
        });
      continue;
    }
    for (const c of bad)
      for (const hostname of names)
        rows.push({
          hostname,
          path: "*",
          served: false,
          why: `${p.parentRef}: ${c.type}=False ${c.reason ?? ""}: ${c.message ?? ""}`,
        });
    for (const type of ["Accepted", "ResolvedRefs"]) {
      const s = p.stored.find(c => c.type === type);
      const c = p.computed.find(x => x.type === type);
      if (s && c && (s.status !== c.status || s.reason !== c.reason))
        notes.push(
          `${p.parentRef}: the controller's status says ${type}=${s.status} ${s.reason ?? ""}, a translation of the objects you can read says ${c.status} ${c.reason ?? ""} (the controller may not have handled the latest change yet, or some objects are not readable to you)`,
        );
      if (!s && c) notes.push(`${p.parentRef}: no status from the controller yet`);
    }
  }

  // Hostnames of the route no listener took, on parents that accepted it.
  const accepted = parents.some(p =>
    (p.stored.length > 0 ? p.stored : p.computed).some(
      c => c.type === "Accepted" && c.status === "True",
    ),
  );
  if (accepted)
    for (const h of spec.hostnames ?? [])
      if (
        !rows.some(
          r =>
            r.served !== undefined && r.gateway && (covers(h, r.hostname) || covers(r.hostname, h)),
        )
      )
        rows.push({
          hostname: h,
          path: "*",
          served: false,
          why: "no listener of the route's parents serves this hostname",
        });

  if (view.unreadable.length > 0)
    notes.push(
      `Could not list ${view.unreadable.join(", ")}: the local translation treats them as empty.`,
    );
  const ok = rows.length > 0 && rows.every(r => r.served && !r.why);
  return { route, rows, parents, notes, ok };
}

/** The table `explain` prints, then each parent's conditions and the notes. */
export function formatExplain(r: ExplainReport, colour: boolean): string {
  const headers = ["hostname", "path", "match", "gateway", "listener", "proxies", "served", "why"];
  const rows: CellInput[][] = r.rows.map(x => [
    x.hostname,
    x.path,
    x.also,
    x.gateway,
    x.listener,
    x.proxies
      ? cell(
          `${x.proxies.synced}/${x.proxies.total}`,
          x.proxies.pending.length > 0 || x.proxies.total === 0 ? "warn" : "ok",
        )
      : undefined,
    cell(x.served ? "yes" : "no", x.served ? (x.why ? "warn" : "ok") : "bad"),
    x.why,
  ]);
  const lines = [
    `${r.route.kind} ${r.route.namespace}/${r.route.name}`,
    "",
    formatTable(headers, rows, colour),
  ];
  for (const p of r.parents) {
    lines.push("", `parent ${p.parentRef}:`);
    const conds = p.stored.length > 0 ? p.stored : p.computed;
    if (conds.length === 0) lines.push("  no conditions");
    for (const c of conds)
      lines.push(`  ${c.type}=${c.status} ${c.reason ?? ""}${c.message ? `: ${c.message}` : ""}`);
  }
  for (const n of r.notes) lines.push("", `note: ${n}`);
  return lines.join("\n");
}

/** `KIND/NAME` or `NAME` (an HTTPRoute) → the route kind and name. */
export function parseRouteArg(arg: string): { kind: RouteKindName; name: string } | undefined {
  const [a, b] = arg.includes("/") ? arg.split("/", 2) : ["httproute", arg];
  const kinds: Record<string, RouteKindName> = {
    httproute: "HTTPRoute",
    httproutes: "HTTPRoute",
    grpcroute: "GRPCRoute",
    grpcroutes: "GRPCRoute",
    tlsroute: "TLSRoute",
    tlsroutes: "TLSRoute",
    tcproute: "TCPRoute",
    tcproutes: "TCPRoute",
    udproute: "UDPRoute",
    udproutes: "UDPRoute",
  };
  const kind = kinds[(a ?? "").toLowerCase().replace(/\..*$/, "")];
  return kind && b ? { kind, name: b } : undefined;
}
