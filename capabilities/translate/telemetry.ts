/**
 * XTelemetryPolicy → per-Gateway tracing (GatewayIR.tracing) and the policies' status.
 *
 * - Targets: Gateways (group gateway.networking.k8s.io) in the policy's namespace. A policy
 *   gets status (one ancestor per target) when one of its targets is a Gateway of ours; a
 *   target Gateway that does not exist gets Accepted=False/TargetNotFound.
 * - Precedence (GEP-713, the API's notes): one policy per Gateway, the older by
 *   creationTimestamp then `<namespace>/<name>` (backendtls.ts `older`); the others get
 *   Accepted=False/Conflicted for that Gateway.
 * - What the proxy cannot run: validation/telemetry.ts (the reading admission uses), and
 *   span attributes on a flavour without them (Caddy 2.8) → Accepted=False/Invalid.
 * - provider.backendRef: a Service in the policy's namespace, or another one a ReferenceGrant
 *   allows; otherwise ResolvedRefs=False (BackendNotFound / RefNotPermitted) and no tracing.
 *   The proxy's exporter is set by its process environment only (OTEL_EXPORTER_OTLP_ENDPOINT;
 *   Caddy's `tracing` handler reads no exporter from its JSON config), so the Accepted message
 *   names the endpoint the proxy's environment must point at.
 */
import { GatewayIR, TracingIR } from "../ir";
import { ProxyFlavor, missingCapability } from "../flavor/proxy-flavor";
import {
  CONTROLLER_NAME,
  GATEWAY_GROUP,
  Gateway,
  Snapshot,
  X_GATEWAY_GROUP,
  keyOf,
} from "../snapshot";
import { Condition, ConditionType, condition } from "./conditions";
import { BackendTLSPolicyStatusResult } from "./status";
import { older } from "./backendtls";
import { refPermitted } from "./refs";
import { TelemetryPolicyLike, readTelemetryPolicy } from "../validation/telemetry";
import { problemText } from "../validation/message";

export const TelemetryReason = {
  Accepted: "Accepted",
  Conflicted: "Conflicted",
  Invalid: "Invalid",
  TargetNotFound: "TargetNotFound",
  ResolvedRefs: "ResolvedRefs",
  BackendNotFound: "BackendNotFound",
  RefNotPermitted: "RefNotPermitted",
} as const;

export interface TelemetryResult {
  /** Gateway key → the tracing its proxies run. */
  readonly tracing: ReadonlyMap<string, TracingIR>;
  readonly statuses: readonly BackendTLSPolicyStatusResult[];
}

/** What translation knows of one of our Gateways. */
export interface TelemetryGateway {
  readonly gateway: Gateway;
  readonly flavor: ProxyFlavor;
}

export function telemetry(
  s: Snapshot,
  gateways: ReadonlyMap<string, TelemetryGateway>,
): TelemetryResult {
  const policies = [...(s.objects.XTelemetryPolicy?.values() ?? [])].sort(older);
  const winner = new Map<string, string>();
  const tracing = new Map<string, TracingIR>();
  const statuses: BackendTLSPolicyStatusResult[] = [];
  for (const p of policies) {
    const ns = p.metadata.namespace ?? "";
    const gen = p.metadata.generation;
    const targets = [
      ...new Set(
        (p.spec?.targetRefs ?? [])
          .filter(t => t.group === GATEWAY_GROUP && t.kind === "Gateway")
          .map(t => `${ns}/${t.name}`),
      ),
    ];
    if (!targets.some(t => gateways.has(t))) continue;
    const read = readTelemetryPolicy(p as TelemetryPolicyLike, ns);
    const resolved = read.ok ? collectorCondition(s, ns, read.value.collector, gen) : undefined;
    const ancestors = targets
      .filter(t => gateways.has(t) || !s.objects.Gateway.has(t))
      .sort()
      .map(gwKey => {
        const [gwNs, gwName] = gwKey.split("/");
        const ctx = gateways.get(gwKey);
        const accepted = (reason: string, message: string, ok = false): Condition =>
          condition(ConditionType.Accepted, ok, reason, message, gen);
        let conditions: Condition[];
        if (!ctx) {
          conditions = [accepted(TelemetryReason.TargetNotFound, `Gateway ${gwKey} not found`)];
        } else if (winner.has(gwKey)) {
          conditions = [
            accepted(
              TelemetryReason.Conflicted,
              `XTelemetryPolicy ${winner.get(gwKey)} (older) targets this Gateway`,
            ),
          ];
        } else {
          winner.set(gwKey, keyOf(p));
          const missing =
            read.ok && read.value.attributes.length > 0
              ? missingCapability(ctx.flavor, ["spanAttributes"])
              : undefined;
          if (!read.ok)
            conditions = [
              accepted(TelemetryReason.Invalid, read.error.map(problemText).join("; ")),
            ];
          else if (missing)
            conditions = [accepted(TelemetryReason.Invalid, `spec.tracing.attributes: ${missing}`)];
          else {
            const v = read.value;
            const runs = v.enabled && resolved?.status === "True";
            if (runs)
              tracing.set(gwKey, {
                ...(v.spanName !== undefined && { spanName: v.spanName }),
                attributes: v.attributes,
              });
            conditions = [
              accepted(
                TelemetryReason.Accepted,
                acceptedMessage(v.enabled, v.collector, ctx.flavor),
                true,
              ),
            ];
          }
        }
        return {
          ancestorRef: { group: GATEWAY_GROUP, kind: "Gateway", namespace: gwNs, name: gwName },
          controllerName: CONTROLLER_NAME,
          conditions: resolved ? [...conditions, { ...resolved }] : conditions,
        };
      });
    statuses.push({ namespace: ns, name: p.metadata.name, ancestors });
  }
  statuses.sort((a, b) => (`${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1));
  return { tracing, statuses };
}

function acceptedMessage(
  enabled: boolean,
  collector: { namespace: string; name: string; port?: number } | undefined,
  flavor: ProxyFlavor,
): string {
  if (!enabled || !collector) return "tracing is off (mode is not Enabled)";
  // Caddy 2.8 (Kengine) exports with otlptracegrpc only; Caddy 2.11 through autoexport,
  // OTLP/HTTP protobuf by default.
  const grpc = flavor === "Kengine";
  const port = collector.port ?? (grpc ? 4317 : 4318);
  return (
    `tracing runs on the Gateway's proxies; their exporter is set by the proxy's environment ` +
    `only: ${grpc ? "OTLP/gRPC, " : "OTEL_TRACES_EXPORTER=otlp, "}` +
    `OTEL_EXPORTER_OTLP_ENDPOINT=http://${collector.name}.${collector.namespace}:${port}`
  );
}

/** ResolvedRefs of the collector Service (undefined: the policy names none). */
function collectorCondition(
  s: Snapshot,
  ns: string,
  c: { namespace: string; name: string } | undefined,
  gen: number | undefined,
): Condition | undefined {
  if (!c) return undefined;
  const to = { group: "", kind: "Service", namespace: c.namespace, name: c.name };
  const from = { group: X_GATEWAY_GROUP, kind: "XTelemetryPolicy", namespace: ns };
  if (!refPermitted(s, from, to))
    return condition(
      ConditionType.ResolvedRefs,
      false,
      TelemetryReason.RefNotPermitted,
      `no ReferenceGrant in ${c.namespace} allows a reference to Service ${c.name}`,
      gen,
    );
  if (!s.objects.Service.has(`${c.namespace}/${c.name}`))
    return condition(
      ConditionType.ResolvedRefs,
      false,
      TelemetryReason.BackendNotFound,
      `Service ${c.namespace}/${c.name} not found`,
      gen,
    );
  return condition(
    ConditionType.ResolvedRefs,
    true,
    TelemetryReason.ResolvedRefs,
    "all references resolved",
    gen,
  );
}

/** A Gateway's IR with its tracing (none: unchanged). */
export const withTracing = (ir: GatewayIR, t: TracingIR | undefined): GatewayIR =>
  t ? { ...ir, tracing: t } : ir;
