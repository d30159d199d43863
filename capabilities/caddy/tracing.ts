/**
 * XTelemetryPolicy tracing (GatewayIR.tracing) as Caddy JSON: the `tracing` handler in a
 * route of its own at the head of each HTTP server of the Gateway. Not terminal: Caddy chains
 * a server's routes, so the handler wraps every route after it and the span covers the whole
 * request (listener choice, filters, routing, proxying). Span attributes are placeholders the
 * handler expands once the request has been served; the exporter is the process's (OTEL_*).
 */
import { TracingIR } from "../ir";
import { CaddyRoute } from "./types";
import { escapePlaceholders } from "./placeholders";

export function tracingRoute(t: TracingIR): CaddyRoute {
  return {
    handle: [
      {
        handler: "tracing",
        // Caddy expands placeholders in the span name: the policy's text stays literal.
        ...(t.spanName !== undefined && { span: escapePlaceholders(t.spanName) }),
        ...(t.attributes.length > 0 && {
          span_attributes: Object.fromEntries(t.attributes.map(a => [a.name, a.value])),
        }),
      },
    ],
  };
}
