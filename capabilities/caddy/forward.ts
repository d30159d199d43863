/**
 * The reverse proxy of an entry: upstreams, timeouts, retries, health, session persistence and
 * weighted splits (by buckets of the request UUID).
 */
import { ActionIR, BackendIR } from "../ir";
import { escapePlaceholders } from "./placeholders";
import { sessionPolicy } from "./session";
import { CaddyHandler, CaddyRoute, CaddySelectionPolicy } from "./types";
import { Ctx, DEFAULT_ERROR_LISTEN } from "./render-context";
import { dial, egressGuardOf, PrefixMode, headerHandlers, rewriteHandlers } from "./handlers";

export const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
const lcm = (a: number, b: number): number => (a / gcd(a, b)) * b;

/**
 * One reverse_proxy for a rule's backends. Each backendRef's weight is split evenly over its
 * endpoints (integer weights via the LCM of endpoint counts); unresolved backendRefs keep
 * their share, answered with 500 by the internal error server. No endpoints at all: 503.
 */
export function forward(
  ctx: Ctx,
  given: readonly BackendIR[],
  policy: ForwardPolicy,
): CaddyHandler {
  // A name is never dialled without the guard (translation refuses it on such flavours too).
  const backends = ctx.caps.egressGuard
    ? given
    : given.map(b =>
        b.type === "service" && b.egressGuard
          ? { type: "invalid" as const, id: b.id, weight: b.weight }
          : b,
      );
  const live = backends.filter(b => b.type === "invalid" || b.endpoints.length > 0);
  // A guarded name (egressGuard) gets a reverse_proxy of its own: the guard refuses the
  // loopback error responder that an invalid share dials, and is for tenants' names only.
  const guarded = live.flatMap(b => (b.type === "service" && b.egressGuard ? [b] : []));
  if (
    live.some(b => b.type === "service" && (b.requestHeaders || b.responseHeaders || b.rewrite)) ||
    (guarded.length > 0 && guarded.length < live.length)
  )
    return split(ctx, live, policy);
  const guard = guarded.length > 0 ? egressGuardOf(guarded) : undefined;
  if (live.length === 0) {
    const allInvalid = backends.length > 0 && backends.every(b => b.type === "invalid");
    return { handler: "static_response", status_code: allInvalid ? 500 : 503 };
  }
  if (live.every(b => b.type === "invalid"))
    return { handler: "static_response", status_code: 500 };
  // One reverse_proxy has one transport: the first Service backend's TLS settings (from its
  // BackendTLSPolicy) apply; a backend in the same rule that needs other TLS settings gets the
  // invalid share (500) rather than a connection with the wrong verification.
  const first = live.find(b => b.type === "service");
  const tls = first?.type === "service" ? first.tls : undefined;
  const tlsKey = JSON.stringify(tls ?? null);
  const counts = live.map(b => (b.type === "service" ? b.endpoints.length : 1));
  const l = counts.reduce(lcm, 1);
  const upstreams: { dial: string; weight: number; h2c: boolean }[] = [];
  let errorShare = false;
  for (const b of live) {
    if (b.type === "invalid" || JSON.stringify(b.tls ?? null) !== tlsKey) {
      errorShare = true;
      ctx.needsErrorServer = true;
      upstreams.push({
        dial: ctx.opts.errorResponderListen ?? DEFAULT_ERROR_LISTEN,
        weight: b.weight * l,
        h2c: false,
      });
    } else {
      for (const e of b.endpoints)
        upstreams.push({
          dial: dial(e),
          weight: (b.weight * l) / b.endpoints.length,
          h2c: b.protocol === "h2c",
        });
    }
  }
  const g = upstreams.map(u => u.weight).reduce(gcd);
  const weights = upstreams.map(u => u.weight / g);
  const h2c = upstreams.some(u => u.h2c);
  const errorPort = (ctx.opts.errorResponderListen ?? DEFAULT_ERROR_LISTEN).split(":").pop()!;
  const headerTimeout = minDefined(policy.timeouts?.backendRequestMs, policy.timeouts?.requestMs);
  // The connection's timeouts (from an Ingress): every flavour's http transport has them.
  const connection = {
    ...(policy.timeouts?.connectMs !== undefined && {
      dial_timeout: `${policy.timeouts.connectMs}ms`,
    }),
    ...(policy.timeouts?.sendMs !== undefined && { write_timeout: `${policy.timeouts.sendMs}ms` }),
  };
  const timed = headerTimeout !== undefined || Object.keys(connection).length > 0;
  const retry = policy.retry;
  const match = retry && retryMatch(retry.codes, ctx.caps.retryOnTransportError);
  return {
    handler: "reverse_proxy",
    upstreams: upstreams.map(u => ({ dial: u.dial })),
    // A retried request must carry its whole body again: buffer bodies up to 1 MiB.
    ...(retry && { request_buffers: RETRY_BODY_BUFFER }),
    load_balancing: {
      selection_policy: withSession(
        ctx,
        policy,
        weights.every(w => w === weights[0])
          ? { policy: "round_robin" }
          : { policy: "weighted_round_robin", weights },
      ),
      ...(retry && {
        retries: retry.attempts,
        ...(match && { retry_match: [{ expression: match }] }),
        ...(retry.backoffMs !== undefined && { try_interval: `${retry.backoffMs}ms` }),
        // The request timeout bounds the whole exchange, retries included.
        ...(policy.timeouts?.requestMs !== undefined && {
          try_duration: `${policy.timeouts.requestMs}ms`,
          ...(retry.backoffMs === undefined && { try_interval: "1ms" }),
        }),
      }),
    },
    // Caddy ≥ 2.11 sends an HTTPS upstream its own address as Host unless told otherwise;
    // the backend must see the request's Host (or the URLRewrite hostname).
    ...(tls && {
      headers: {
        request: {
          set: {
            Host: [policy.host ? escapePlaceholders(policy.host) : "{http.request.hostport}"],
          },
        },
      },
    }),
    ...(tls
      ? {
          transport: {
            // subjectAltNames, a client certificate: our transport (proxy/santls), the
            // http one plus SAN checks and an inline client certificate.
            protocol:
              tls.subjectAltNames || ctx.clientCertificate || guard ? "kengine_http" : "http",
            ...(guard && { egress_guard: guard }),
            ...(ctx.clientCertificate && {
              client_certificate: {
                certificate: ctx.clientCertificate.certificatePem,
                key: ctx.clientCertificate.keyPem,
              },
            }),
            ...(tls.subjectAltNames && {
              subject_alt_names: {
                ...(tls.subjectAltNames.dns.length > 0 && { dns: [...tls.subjectAltNames.dns] }),
                ...(tls.subjectAltNames.uri.length > 0 && { uri: [...tls.subjectAltNames.uri] }),
              },
            }),
            ...(headerTimeout !== undefined && { response_header_timeout: `${headerTimeout}ms` }),
            ...connection,
            tls: {
              server_name: escapePlaceholders(tls.serverName),
              ...(tls.caCertificates && {
                ca: { provider: "inline", trusted_ca_certs: [...tls.caCertificates] },
              }),
              // The internal 500 responder speaks plain HTTP.
              ...(errorShare && { except_ports: [errorPort] }),
            },
          },
        }
      : (h2c || timed || guard) && {
          transport: {
            protocol: guard ? "kengine_http" : "http",
            ...(guard && { egress_guard: guard }),
            ...(h2c && { versions: ["h2c", "2"] }),
            ...(headerTimeout !== undefined && { response_header_timeout: `${headerTimeout}ms` }),
            ...connection,
          },
        }),
  };
}

const RETRY_BODY_BUFFER = 1 << 20;

/**
 * The `retry_match` expression of a rule's retry: its status codes, and, where the proxy can
 * tell (`retryOnTransportError`), any attempt that failed after the connection was made
 * (reset or closed by the backend, backendRequest timeout), whatever the method. Caddy
 * retries a failed dial by itself; without a `retry_match` it retries other failures of GET
 * requests only. One expression: a transport failure has no status code (the placeholder is
 * null, `in` is false), a response is no transport failure (null `== true` is false).
 */
function retryMatch(codes: readonly number[], transportErrors: boolean): string | undefined {
  const parts = [
    ...(transportErrors ? ["{http.reverse_proxy.is_transport_error} == true"] : []),
    ...(codes.length > 0 ? [`{http.reverse_proxy.status_code} in [${codes.join(", ")}]`] : []),
  ];
  return parts.length > 0 ? parts.join(" || ") : undefined;
}

/** The selection policy, wrapped in the rule's session persistence when it has one. */
const withSession = (
  ctx: Ctx,
  policy: ForwardPolicy,
  choose: CaddySelectionPolicy,
): CaddySelectionPolicy =>
  policy.session ? sessionPolicy(ctx.caps, policy.session, choose) : choose;

type ForwardPolicy = Pick<
  Extract<ActionIR, { type: "forward" }>,
  "timeouts" | "retry" | "session"
> & {
  /** URLRewrite hostname of the entry, if any. */
  readonly host?: string;
  /** How the entry's path capture serves ReplacePrefixMatch (backendRef URLRewrite). */
  readonly prefix?: PrefixMode;
};

const minDefined = (a?: number, b?: number): number | undefined =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b);

/** Random per-request value Caddy generates once per request (UUID v4, lower-case hex). */
const REQUEST_UUID = "{http.request.uuid}";
/** Weighted choice resolution: the first three hex digits of the request UUID (4096 buckets). */
const BUCKETS = 4096;

/**
 * Backends with their own filters (backendRef-level header modifiers and URLRewrite): the
 * backend is chosen first, by weight, from the request's random UUID, then that backend's
 * header operations and rewrite run and its own reverse_proxy sends the request. Shares are
 * exact to 1/4096.
 */
function split(ctx: Ctx, live: readonly BackendIR[], policy: ForwardPolicy): CaddyHandler {
  const branch = (b: BackendIR): CaddyHandler[] => {
    if (b.type === "invalid") return [{ handler: "static_response", status_code: 500 }];
    const handle: CaddyHandler[] = [];
    handle.push(...headerHandlers(b.requestHeaders, b.responseHeaders));
    handle.push(...rewriteHandlers(b.rewrite, policy.prefix));
    const own = { ...b, requestHeaders: undefined, responseHeaders: undefined, rewrite: undefined };
    handle.push(forward(ctx, [own], { ...policy, host: b.rewrite?.hostname ?? policy.host }));
    return handle;
  };
  if (live.length === 1) return { handler: "subroute", routes: [{ handle: branch(live[0]) }] };
  const total = live.reduce((n, b) => n + b.weight, 0);
  const routes: CaddyRoute[] = [];
  let cumulative = 0;
  let lower = 0;
  live.forEach((b, i) => {
    cumulative += b.weight;
    const upper = i === live.length - 1 ? BUCKETS : Math.round((cumulative * BUCKETS) / total);
    if (upper <= lower) return; // a share below one bucket
    lower = upper;
    routes.push({
      ...(upper < BUCKETS && {
        match: [{ vars_regexp: { [REQUEST_UUID]: { pattern: hexBelow(upper) } } }],
      }),
      handle: branch(b),
      terminal: true,
    });
  });
  return { handler: "subroute", routes };
}

const HEX = "0123456789abcdef";

/** RE2 pattern: the string starts with three hex digits whose value is below `n` (1..4095). */
export function hexBelow(n: number): string {
  const d = n
    .toString(16)
    .padStart(3, "0")
    .split("")
    .map(c => HEX.indexOf(c));
  const below = (x: number): string => `[${HEX.slice(0, x)}]`;
  const alts: string[] = [];
  if (d[0] > 0) alts.push(`${below(d[0])}[0-9a-f]{2}`);
  if (d[1] > 0) alts.push(`${HEX[d[0]]}${below(d[1])}[0-9a-f]`);
  if (d[2] > 0) alts.push(`${HEX[d[0]]}${HEX[d[1]]}${below(d[2])}`);
  return `^(?:${alts.join("|")})`;
}
