/**
 * Rules for a listener's pre-routing filters (Listener `filters.requests`, Gateway API v1.7,
 * feature GatewayListenerFilters). The Kengine proxy runs ExternalAuth over HTTP (module
 * `kengine_ext_auth`, proxy/extauth); it has no gRPC ext_authz client and no pre-routing
 * extensions. Admission refuses what no proxy of ours can run; the translator calls the same
 * rules (through listenerProblems) and marks such a listener Accepted=False/UnsupportedValue.
 * Whether a Gateway's flavour has the module is translate/listenerfilters.ts's business.
 */
import { Collector, items } from "./budget";
import { FieldProblem, display } from "./regex";
import { MAX_EXTERNAL_AUTH_BODY_BYTES } from "./limits";

export interface ListenerFiltersLike {
  readonly requests?: readonly {
    readonly type?: string;
    readonly externalAuth?: {
      readonly protocol?: string;
      readonly forwardBody?: { readonly maxSize?: number };
    };
  }[];
}

/**
 * Why an ExternalAuth filter at `at` (`…filters.requests[i]`) may not forward `maxSize` bytes
 * of the body: above `limit`, the class's KengineParameters spec.limits.externalAuthMaxBodyBytes
 * (default 65536), never above 16 MiB. Admission checks the class's limit when it can read it;
 * translation always does (translate/listenerfilters.ts), and the rendered handler never
 * forwards more.
 */
export function externalAuthBodyProblem(
  at: string,
  maxSize: unknown,
  limit: number = MAX_EXTERNAL_AUTH_BODY_BYTES,
): FieldProblem | undefined {
  if (typeof maxSize !== "number" || maxSize <= limit) return undefined;
  return {
    path: `${at}.externalAuth.forwardBody.maxSize`,
    value: String(maxSize),
    message:
      limit >= MAX_EXTERNAL_AUTH_BODY_BYTES
        ? `is above ${MAX_EXTERNAL_AUTH_BODY_BYTES} bytes (16 MiB), the most the proxy reads into memory for an authorization request`
        : `is above ${limit} bytes, the limit of the GatewayClass's parameters (KengineParameters spec.limits.externalAuthMaxBodyBytes)`,
  };
}

/** Protocols whose listeners can have pre-routing filters (the request phase needs HTTP). */
export const FILTERED_PROTOCOLS: readonly string[] = ["HTTP", "HTTPS"];

/** The problems of `filters` on a listener of `protocol`, the listener at `at`. */
export function listenerFilterProblems(
  at: string,
  protocol: string | undefined,
  filters: ListenerFiltersLike | undefined,
  c = new Collector(),
): FieldProblem[] {
  const requests = items(filters?.requests);
  if (requests.length === 0) return c.problems();
  if (!FILTERED_PROTOCOLS.includes(protocol ?? "")) {
    c.add([
      {
        path: `${at}.filters`,
        value: "",
        message: `pre-routing filters run only on HTTP and HTTPS listeners, not ${display(protocol ?? "")}`,
      },
    ]);
    return c.problems();
  }
  requests.forEach((f, i) => {
    if (!c.spend(`${at}.filters.requests[${i}]`)) return;
    const path = `${at}.filters.requests[${i}]`;
    if (f?.type !== "ExternalAuth") {
      c.add([
        {
          path: `${path}.type`,
          value: display(f?.type ?? ""),
          message:
            "is not supported: the Kengine proxy has no pre-routing extensions (it runs ExternalAuth filters with protocol HTTP)",
        },
      ]);
      return;
    }
    const body = externalAuthBodyProblem(path, f.externalAuth?.forwardBody?.maxSize);
    if (body) c.add([body]);
    const protocolOf = f.externalAuth?.protocol;
    if (protocolOf !== "HTTP")
      c.add([
        {
          path: `${path}.externalAuth.protocol`,
          value: display(protocolOf ?? ""),
          message:
            "is not supported: the Kengine proxy asks authorization servers over HTTP only (no gRPC ext_authz client): use protocol HTTP",
        },
      ]);
  });
  return c.problems();
}

/**
 * The ExternalAuth filters of `listeners` (a Gateway's or ListenerSet's spec.listeners) that
 * forward more body than `limit`, the class's externalAuthMaxBodyBytes. Above 16 MiB is
 * listenerFilterProblems' (no look-up needed), so not repeated here.
 */
export function externalAuthLimitProblems(
  listeners: readonly { readonly filters?: ListenerFiltersLike }[] | undefined,
  limit: number,
): FieldProblem[] {
  if (limit >= MAX_EXTERNAL_AUTH_BODY_BYTES) return [];
  return items(listeners).flatMap((l, li) =>
    items(l?.filters?.requests).flatMap((f, i) => {
      const size = f?.externalAuth?.forwardBody?.maxSize;
      const p =
        typeof size === "number" && size <= MAX_EXTERNAL_AUTH_BODY_BYTES
          ? externalAuthBodyProblem(`spec.listeners[${li}].filters.requests[${i}]`, size, limit)
          : undefined;
      return p ? [p] : [];
    }),
  );
}
