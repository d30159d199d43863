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

export interface ListenerFiltersLike {
  readonly requests?: readonly {
    readonly type?: string;
    readonly externalAuth?: { readonly protocol?: string };
  }[];
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
