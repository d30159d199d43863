/**
 * What the request-path bench (request-load.ts) loads: the workload's objects for a case (the
 * probe route, an HTTPS listener with its certificate, a header filter) and the minimal
 * hand-written Caddy config doing the same routing.
 */
import {
  createAuthority,
  generateKeyPair,
  issueServerCertificate,
} from "../../capabilities/pki/pki";
import { KubeObject } from "../../capabilities/snapshot";
import { withLoopbackEndpoints } from "../../tests/support/loopback";
import { httpRoute, snapshotObjects } from "./workload";

/** The route every known-host request goes to: PathPrefix / to one Service, no filter. */
export const PROBE = 0;
export const ECHO_PATH = "/health";
const TLS_SECRET = "bench-tls";

/** What a case asks of the configs beside the route count. */
export interface Shape {
  /** An HTTPS listener (port 443) terminating with one certificate, instead of HTTP on 80. */
  readonly tls?: boolean;
  /** The probe route sets a request header and adds a response header. */
  readonly filter?: boolean;
}

export interface Certificate {
  readonly cert: string;
  readonly key: string;
}

/** A certificate for `*.bench.local`, issued by a throwaway CA (no client verifies it). */
export function benchCertificate(): Certificate {
  const must = <T>(r: { ok: true; value: T } | { ok: false; error: unknown }): T => {
    if (!r.ok) throw new Error(`certificate: ${JSON.stringify(r.error)}`);
    return r.value;
  };
  const notBefore = new Date(Date.now() - 60_000);
  const ca = must(
    createAuthority({
      commonName: "kengine bench CA",
      keys: generateKeyPair(),
      notBefore,
      lifetimeDays: 2,
    }),
  );
  const leaf = must(
    issueServerCertificate(ca, {
      commonName: "*.bench.local",
      dnsNames: ["*.bench.local"],
      keys: generateKeyPair(),
      notBefore,
      lifetimeDays: 1,
    }),
  );
  return { cert: leaf.certificatePem, key: leaf.privateKey.reveal() };
}

export const listenerPort = (shape: Shape): number => (shape.tls ? 443 : 80);

/**
 * The workload of `routes` routes on one Gateway, route PROBE made simple (with the header
 * filter when asked), the listener HTTPS when asked, endpoints on loopback.
 */
export async function objectsFor(
  routes: number,
  echoPort: number,
  shape: Shape,
  certificate: Certificate,
): Promise<KubeObject[]> {
  const opts = { routes, gateways: 1 };
  const probe = (o: KubeObject): KubeObject => {
    const route = httpRoute(PROBE, opts, true) as KubeObject & {
      spec: { rules: Record<string, unknown>[] };
    };
    if (shape.filter)
      route.spec.rules[0].filters = [
        {
          type: "RequestHeaderModifier",
          requestHeaderModifier: { set: [{ name: "X-Bench-Route", value: "r0" }] },
        },
        {
          type: "ResponseHeaderModifier",
          responseHeaderModifier: { add: [{ name: "X-Served-By", value: "kengine" }] },
        },
      ];
    return o.kind === "HTTPRoute" ? route : o;
  };
  const https = (o: KubeObject): KubeObject =>
    ({
      ...o,
      spec: {
        ...(o as unknown as { spec: Record<string, unknown> }).spec,
        listeners: [
          {
            name: "https",
            port: 443,
            protocol: "HTTPS",
            tls: { mode: "Terminate", certificateRefs: [{ name: TLS_SECRET }] },
          },
        ],
      },
    }) as KubeObject;
  const objects = snapshotObjects(opts).map(o =>
    o.kind === "HTTPRoute" && o.metadata.name === `r${PROBE}`
      ? probe(o)
      : shape.tls && o.kind === "Gateway"
        ? https(o)
        : o,
  );
  if (shape.tls)
    objects.push({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: TLS_SECRET, namespace: "bench" },
      type: "kubernetes.io/tls",
      data: {
        "tls.crt": Buffer.from(certificate.cert).toString("base64"),
        "tls.key": Buffer.from(certificate.key).toString("base64"),
      },
    } as unknown as KubeObject);
  return withLoopbackEndpoints(objects, async () => echoPort);
}

/**
 * A hand-written config doing the same routing: the hosts → the echo server (every backend of
 * the scenario is that server), anything else → 404. One `host` matcher holds every host
 * (Caddy sorts a long list and searches it). With `tls`, the server terminates TLS with that
 * certificate; with `filter`, a `headers` handler does what the probe route's filters do.
 */
export function minimalConfig(
  adminAddress: string,
  port: number,
  hosts: readonly string[],
  echoPort: number,
  metrics = false,
  shape: Shape = {},
  certificate?: Certificate,
): object {
  const headers = {
    handler: "headers",
    request: { set: { "X-Bench-Route": ["r0"] } },
    response: { add: { "X-Served-By": ["kengine"] }, deferred: true },
  };
  return {
    admin: { listen: adminAddress, config: { persist: false } },
    apps: {
      http: {
        ...(metrics && { metrics: { per_host: true } }),
        servers: {
          bench: {
            listen: [`127.0.0.1:${port}`],
            automatic_https: { disable: true },
            ...(shape.tls && { tls_connection_policies: [{}] }),
            routes: [
              {
                match: [{ host: hosts }],
                handle: [
                  ...(shape.filter ? [headers] : []),
                  { handler: "reverse_proxy", upstreams: [{ dial: `127.0.0.1:${echoPort}` }] },
                ],
                terminal: true,
              },
              { handle: [{ handler: "static_response", status_code: 404 }] },
            ],
          },
        },
      },
      ...(shape.tls &&
        certificate && {
          tls: {
            certificates: { load_pem: [{ certificate: certificate.cert, key: certificate.key }] },
          },
        }),
    },
  };
}
