/**
 * XTelemetryPolicy (gateway.networking.x-k8s.io/v1alpha1, experimental channel of v1.7.0): one
 * reading for admission (capabilities/admission.ts refuses what it finds wrong) and
 * translation (translate/telemetry.ts marks a stored policy Accepted=False/Invalid with the
 * same text).
 *
 * What a Caddy can run: the HTTP handler `tracing` (OpenTelemetry through otelhttp), first in
 * each HTTP server's handler chain, with a span name and `span_attributes` whose values may be
 * placeholders, set once the request has been served. The exporter, the sampler and the
 * resource (service.name) come only from the proxy process's environment (autoexport,
 * OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_* / OTEL_TRACES_SAMPLER / OTEL_SERVICE_NAME), not
 * from the JSON config. So this reading refuses, with field and reason:
 *   · a samplingRate other than 100%: the tracer samples every new trace (its sampler is the
 *     SDK default, ParentBased(AlwaysOn), per process and not per policy);
 *   · parentBasedSampling mode Disabled, or a parent-based samplingRate other than 100%:
 *     the same sampler always follows the parent's decision;
 *   · serviceName and provider.headers: process environment only;
 *   · an attribute of sourceType Attribute whose key we cannot take from the request;
 *   · mode Enabled without a provider, a provider with one where tracing is not Enabled (spec);
 *   · a provider backendRef that is not a core Service.
 */
import { FieldProblem, display, truncate } from "./regex";

export interface TelemetryPolicyLike {
  readonly spec?: {
    readonly targetRefs?: readonly unknown[];
    readonly tracing?: {
      readonly mode?: string;
      readonly spanName?: string;
      readonly serviceName?: string;
      readonly samplingRate?: { readonly numerator?: number; readonly denominator?: number };
      readonly parentBasedSampling?: {
        readonly mode?: string;
        readonly samplingRate?: { readonly numerator?: number; readonly denominator?: number };
      };
      readonly attributes?: readonly {
        readonly name?: string;
        readonly sourceType?: string;
        readonly literalValue?: string;
        readonly headerName?: string;
        readonly attributeKey?: string;
      }[];
      readonly provider?: {
        readonly backendRef?: {
          readonly group?: string;
          readonly kind?: string;
          readonly name?: string;
          readonly namespace?: string;
          readonly port?: number;
        };
        readonly headers?: readonly unknown[];
      };
    };
  };
}

/** One span attribute: its name and the value (a Caddy placeholder or literal text). */
export interface SpanAttribute {
  readonly name: string;
  readonly value: string;
}

/** What a policy asks the proxy to run. */
export interface TracingSpec {
  /** Mode Enabled: trace every request of the targeted Gateways. */
  readonly enabled: boolean;
  /** Span name; undefined: the proxy's default (the `tracing` handler's). */
  readonly spanName?: string;
  readonly attributes: readonly SpanAttribute[];
  /** The collector Service (provider.backendRef), namespace filled in. */
  readonly collector?: {
    readonly namespace: string;
    readonly name: string;
    readonly port?: number;
  };
}

/**
 * OpenTelemetry semantic-convention keys (sourceType Attribute) and the Caddy placeholder
 * holding each one's value for the request.
 */
export const ATTRIBUTE_PLACEHOLDERS: Readonly<Record<string, string>> = {
  "http.request.method": "{http.request.method}",
  "url.path": "{http.request.uri.path}",
  "url.query": "{http.request.uri.query}",
  "url.scheme": "{http.request.scheme}",
  "server.address": "{http.request.host}",
  "server.port": "{http.request.port}",
  "client.address": "{http.request.remote.host}",
  "client.port": "{http.request.remote.port}",
  "network.protocol.version": "{http.request.proto}",
  "user_agent.original": "{http.request.header.User-Agent}",
};

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

const full = (r: { numerator?: number; denominator?: number } | undefined): boolean =>
  r === undefined || (r.numerator ?? 0) === (r.denominator ?? 100);

/** Literal text as a placeholder-free value: Caddy expands `{…}` and unescapes `\{`, `\}`. */
const literal = (v: string): string => v.replace(/[{}]/g, c => `\\${c}`);

/** Reads a policy: what it asks for, or every problem with it (path, value, reason). */
export function readTelemetryPolicy(
  p: TelemetryPolicyLike,
  namespace: string,
): { ok: true; value: TracingSpec } | { ok: false; error: readonly FieldProblem[] } {
  const out: FieldProblem[] = [];
  const add = (path: string, value: unknown, message: string) =>
    out.push({ path, value: truncate(display(value)), message });
  const t = p?.spec?.tracing;
  const mode = t?.mode ?? "ImplementationDefault";
  const enabled = mode === "Enabled";
  if (!t) return { ok: true, value: { enabled: false, attributes: [] } };
  if (!["Enabled", "Disabled", "ImplementationDefault"].includes(mode))
    add("spec.tracing.mode", mode, "must be Enabled, Disabled or ImplementationDefault");
  if (!full(t.samplingRate))
    add(
      "spec.tracing.samplingRate",
      t.samplingRate,
      "the proxy samples every new trace (its tracer's sampler is set per process, not per policy): only 100% can be honoured",
    );
  const pb = t.parentBasedSampling;
  if (pb?.mode === "Disabled")
    add(
      "spec.tracing.parentBasedSampling.mode",
      pb.mode,
      "the proxy always follows the parent's sampling decision: only Enabled or ImplementationDefault",
    );
  if (!full(pb?.samplingRate))
    add(
      "spec.tracing.parentBasedSampling.samplingRate",
      pb?.samplingRate,
      "the proxy keeps every trace its parent sampled: only 100% can be honoured",
    );
  if (t.serviceName !== undefined)
    add(
      "spec.tracing.serviceName",
      t.serviceName,
      "the proxy takes service.name from its process environment (OTEL_SERVICE_NAME), not per policy",
    );
  if (t.spanName !== undefined && (t.spanName === "" || t.spanName.length > 256))
    add("spec.tracing.spanName", t.spanName, "must be 1 to 256 characters");
  const attributes: SpanAttribute[] = [];
  const seen = new Set<string>();
  (t.attributes ?? []).slice(0, 64).forEach((a, i) => {
    const path = `spec.tracing.attributes[${i}]`;
    const name = a?.name ?? "";
    if (name === "" || seen.has(name)) {
      add(`${path}.name`, name, name === "" ? "must not be empty" : "is named twice");
      return;
    }
    seen.add(name);
    if (a.sourceType === "Literal" && a.literalValue !== undefined)
      attributes.push({ name, value: literal(a.literalValue) });
    else if (a.sourceType === "Header" && a.headerName && HEADER_NAME.test(a.headerName))
      attributes.push({ name, value: `{http.request.header.${a.headerName}}` });
    else if (a.sourceType === "Attribute" && ATTRIBUTE_PLACEHOLDERS[a.attributeKey ?? ""])
      attributes.push({ name, value: ATTRIBUTE_PLACEHOLDERS[a.attributeKey!] });
    else if (a.sourceType === "Attribute")
      add(
        `${path}.attributeKey`,
        a.attributeKey,
        `the proxy can take only ${Object.keys(ATTRIBUTE_PLACEHOLDERS).join(", ")} from the request`,
      );
    else if (a.sourceType === "Header")
      add(`${path}.headerName`, a.headerName, "must be a header name");
    else if (a.sourceType === "Literal") add(`${path}.literalValue`, undefined, "is required");
    else add(`${path}.sourceType`, a.sourceType, "must be Header, Literal or Attribute");
  });
  const provider = t.provider;
  if (enabled && !provider)
    add("spec.tracing.provider", undefined, "is required when mode is Enabled");
  if (!enabled && provider)
    add("spec.tracing.provider", provider, "must not be set unless mode is Enabled");
  if (provider?.headers?.length)
    add(
      "spec.tracing.provider.headers",
      provider.headers,
      "the proxy's exporter takes headers from its process environment (OTEL_EXPORTER_OTLP_HEADERS), not per policy",
    );
  const ref = provider?.backendRef;
  if (ref && ((ref.group ?? "") !== "" || (ref.kind ?? "Service") !== "Service"))
    add("spec.tracing.provider.backendRef", ref, "must be a Service (core group)");
  if (out.length > 0) return { ok: false, error: out };
  return {
    ok: true,
    value: {
      enabled,
      ...(t.spanName !== undefined && { spanName: t.spanName }),
      attributes,
      ...(ref?.name && {
        collector: {
          namespace: ref.namespace ?? namespace,
          name: ref.name,
          ...(ref.port !== undefined && { port: ref.port }),
        },
      }),
    },
  };
}

/** The problems of a policy (admission). */
export const telemetryPolicyProblems = (p: TelemetryPolicyLike): FieldProblem[] => {
  const r = readTelemetryPolicy(p, "");
  return r.ok ? [] : [...r.error];
};
