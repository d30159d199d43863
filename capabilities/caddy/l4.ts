/** Layer-4 servers (caddy-l4): TLS passthrough, TCP and UDP routes and their upstreams. */
import { L4BackendIR, L4ServerIR } from "../ir";
import { MAX_L4_WEIGHT_RATIO } from "../validation/l4route";
import { escapePlaceholders } from "./placeholders";
import { CaddyL4Handler, CaddyL4Server, CaddyL4Upstream } from "./types";
import { Ctx, listenAddress, own, PERSISTENT_TCP_NETWORK } from "./render-context";
import { sniMatch } from "./listener-routes";
import { dial } from "./handlers";
import { gcd } from "./forward";

/**
 * Where connections go that no backend may take (unresolved backendRefs, no ready endpoints,
 * no backends at all): an abstract unix socket nobody listens on, so the proxy's dial fails at
 * once and the connection is closed. An empty handler list would not do: caddy-l4 then falls
 * through to the next (less specific) route.
 */
export const L4_REFUSE_DIAL = "unix/@kengine-gateway-no-backend";

export function l4Server(ctx: Ctx, s: L4ServerIR): CaddyL4Server {
  const network = s.protocol === "UDP" ? "udp/" : "";
  const listenNetwork =
    s.protocol === "UDP"
      ? "udp/"
      : ctx.caps.persistentListeners
        ? `${PERSISTENT_TCP_NETWORK}/`
        : "";
  const routes = s.routes.map(r => {
    const live = r.backends.filter(b => b.weight > 0);
    const upstreams: CaddyL4Upstream[] = [];
    if (live.length > 0) {
      const g = live.map(b => b.weight).reduce(gcd);
      for (const b of live) {
        // caddy-l4 has no weighted policy: each endpoint is repeated by its backendRef's reduced
        // weight (capped; validation/l4route.ts refuses more) and split evenly over its
        // endpoints by round robin.
        const times = Math.min(b.weight / g, MAX_L4_WEIGHT_RATIO);
        const dials =
          b.endpoints.length > 0 ? b.endpoints.map(e => `${network}${dial(e)}`) : [L4_REFUSE_DIAL];
        // BackendTLSPolicy behind a Terminate listener: re-encrypt (caddy-l4 upstream TLS).
        const tls = b.tls && b.endpoints.length > 0 ? l4UpstreamTLS(b.tls) : undefined;
        for (const d of dials)
          for (let i = 0; i < times; i++) upstreams.push({ dial: [d], ...(tls && { tls }) });
      }
    }
    const refuseAll = upstreams.every(u => u.dial[0] === L4_REFUSE_DIAL);
    const proxy: CaddyL4Handler = refuseAll
      ? { handler: "proxy", upstreams: [{ dial: [L4_REFUSE_DIAL] }] }
      : { handler: "proxy", upstreams, load_balancing: { selection: { policy: "round_robin" } } };
    const handle: CaddyL4Handler[] = [];
    if (r.terminate)
      handle.push({
        handler: "tls",
        connection_policies: [
          { certificate_selection: { any_tag: [...r.terminate.certificateIds] } },
        ],
      });
    handle.push(proxy);
    // One matcher set per name: caddy-l4 matches a route when any of its sets matches.
    const { kind, namespace, name } = r.route;
    return own(
      ctx,
      {
        ...(r.serverNames && { match: r.serverNames.map(n => ({ tls: sniMatch(ctx, n) })) }),
        handle,
      },
      [{ kind, namespace, name }],
    );
  });
  return { listen: [listenAddress(ctx, s.port, listenNetwork)], routes };
}

function l4UpstreamTLS(tls: NonNullable<L4BackendIR["tls"]>): CaddyL4Upstream["tls"] {
  return {
    server_name: escapePlaceholders(tls.serverName),
    ...(tls.caCertificates && {
      ca: { provider: "inline", trusted_ca_certs: [...tls.caCertificates] },
    }),
  };
}
