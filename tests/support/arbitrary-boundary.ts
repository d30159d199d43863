/**
 * fast-check arbitraries aimed at the tenant boundary: what a tenant
 * with route and ListenerSet rights can store in its own namespace to make a shared proxy dial
 * itself, answer for the platform's hostname, or buffer without bound. XBackends naming loopback,
 * link-local and numeric names in every spelling the XBackend CRD allows (and names only this
 * machine resolves to loopback), aimed at the proxy's admin API, its own listener, its error
 * responder or a canary; routes with mirrors, Host rewrites and redirects to such backends, for
 * tenant names, wildcards and the platform's hostname; ListenerSets with the platform's hostname,
 * ACME issuer options, certificates and ExternalAuth filters up to the CRD's largest body; a
 * Secret carrying an HTTP-01 answer for the platform's name. The class either keeps external
 * hostnames off (the default) or allows them (`spec.egress.externalHostnames: Allowed`).
 *
 * tests/integration/property-caddy.test.ts loads each sample beside the platform's Gateway
 * (`boundaryGateway`) into a real Bundled proxy and asks as an anonymous client.
 */
import fc from "fast-check";
import { KubeObject } from "../../capabilities/snapshot";
import {
  ACME_ISSUER_OPTION,
  AcmeAnnotation,
  acmeSecretName,
} from "../../capabilities/validation/acme";
import { createAuthority, generateKeyPair } from "../../capabilities/pki/pki";
import { LOOPBACK_SPELLINGS, loopbackResolvingNames } from "./boundary";
import { SECRET_CONTENTS, loopbackService, ns, tenantMeta } from "./arbitrary-hostile";

const GW = "gateway.networking.k8s.io/v1";
const XGW = "gateway.networking.x-k8s.io/v1alpha1";

/** The platform team's hostname: only its own listener (allowedRoutes Same) may serve it. */
export const PLATFORM_HOST = "platform.example";
/** The platform route's path (Exact). */
export const PLATFORM_PATH = "/healthy";
/** The tenant's own hostname. */
export const TENANT_HOST = "app.tenant.test";
/** An HTTP-01 token and key authorization a tenant stores for the platform's name. */
export const TENANT_TOKEN = "tenant-token-0123456789";
export const TENANT_KEY_AUTHORIZATION = `${TENANT_TOKEN}.tenant-account-thumbprint`;

/** The path prefix on which a sample's route sends to its i-th XBackend. */
export const boundaryPathOf = (i: number): string => `/xb-${i}`;

/** A name a request can carry as Host to reach a route with `hostnames` (wildcards filled in). */
export const hostFor = (hostnames: readonly string[]): string =>
  (hostnames[0] ?? TENANT_HOST).replace(/^\*\./, "a.");

/** Where a tenant may aim: resolved to real ports when the proxy and canaries are up. */
export interface BoundaryPorts {
  /** The proxy's admin API (loopback TCP in the host-spawned test proxy). */
  readonly admin: number;
  /** A loopback server that counts every request: it must see none. */
  readonly canary: number;
  /** The proxy's own HTTP listener. */
  readonly listener: number;
  /** The proxy's error responder. */
  readonly errorResponder: number;
}

const b64 = (s: string): string => Buffer.from(s).toString("base64");
const b = fc.integer({ min: 0, max: 255 });

/** The tenant's own valid certificate, Secret `tenant/tls-good` (the name the reports leave out). */
export const tenantTlsSecret = (): KubeObject =>
  ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "tls-good", namespace: "tenant" },
    type: "kubernetes.io/tls",
    data: {
      "tls.crt": b64(SECRET_CONTENTS.good.crt),
      "tls.key": b64(SECRET_CONTENTS.good.key),
    },
  }) as KubeObject;

/** A certificate for the platform's name, distinct from every tenant certificate. */
const platformPair = (() => {
  const r = createAuthority({
    commonName: PLATFORM_HOST,
    keys: generateKeyPair(),
    notBefore: new Date("2026-01-01T00:00:00Z"),
    lifetimeDays: 3650,
  });
  if (!r.ok) throw new Error(r.error);
  return { crt: r.value.certificatePem, key: r.value.privateKey.reveal() };
})();
export const PLATFORM_CERT_CN = PLATFORM_HOST;

/**
 * Names that reach the proxy's own host: loopback by definition, IPv4 in every notation a C
 * resolver reads (dotted, decimal, hex, octal, short), link-local and unspecified, and names
 * this machine's /etc/hosts resolves to loopback.
 */
export const loopbackName: fc.Arbitrary<string> = fc.oneof(
  // what a resolver on this machine maps to loopback: most samples, so that holes show
  {
    weight: 8,
    arbitrary: fc.constantFrom("localhost", "ip6-localhost", ...loopbackResolvingNames()),
  },
  { weight: 1, arbitrary: fc.constantFrom(...LOOPBACK_SPELLINGS) },
  { weight: 1, arbitrary: fc.stringMatching(/^[a-z][a-z0-9]{0,5}$/).map(l => `${l}.localhost`) },
  { weight: 1, arbitrary: fc.integer({ min: 0x7f000000, max: 0x7fffffff }).map(String) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 0x7f000000, max: 0x7fffffff }).map(n => `0x${n.toString(16)}`),
  },
  { weight: 1, arbitrary: fc.tuple(b, b, b).map(([x, y, z]) => `127.${x}.${y}.${z}`) },
  { weight: 1, arbitrary: fc.tuple(b, b).map(([x, y]) => `169.254.${x}.${y}`) },
  { weight: 1, arbitrary: b.map(x => `0177.0.0.${x}`) },
  { weight: 1, arbitrary: b.map(x => `127.${x}`) },
);

type Target = keyof BoundaryPorts;
const target: fc.Arbitrary<Target> = fc.constantFrom(
  "admin",
  "canary",
  "listener",
  "errorResponder",
);

/** Host header values aimed at an admin API on loopback. */
const adminHost = (ports: BoundaryPorts): fc.Arbitrary<string> =>
  fc.constantFrom(
    "localhost:2019",
    `localhost:${ports.admin}`,
    `127.0.0.1:${ports.admin}`,
    `[::1]:${ports.admin}`,
    "localhost",
  );

/** Hostnames a tenant route or listener may claim: its own, the platform's, wildcards, loopback. */
const claimedHost = fc.constantFrom(
  TENANT_HOST,
  PLATFORM_HOST,
  "*.example",
  "localhost",
  "*.tenant.test",
);

const xbackend = (name: string, hostname: string, port: number): KubeObject =>
  ({
    apiVersion: XGW,
    kind: "XBackend",
    metadata: {
      ...tenantMeta(name),
      uid: `00000000-0000-4000-8000-${name.padStart(12, "0").slice(-12)}`,
    },
    spec: { type: "ExternalHostname", externalHostname: { hostname }, port: { number: port } },
  }) as KubeObject;

/** A reference to an XBackend: the CRD forbids a port there (the XBackend has its own). */
const xref = (name: string, _port?: number) => ({
  group: "gateway.networking.x-k8s.io",
  kind: "XBackend",
  name,
});

/** One boundary sample: the class's switch and the tenant's objects. */
export interface BoundarySample {
  readonly externalHostnames: "Allowed" | "Denied";
  readonly objects: KubeObject[];
  /** More names the tenant's objects claim, asked for the admin API's paths too. */
  readonly hosts?: readonly string[];
}

/** Boundary samples whose destinations are the given ports. */
export function arbitraryBoundary(ports: BoundaryPorts): fc.Arbitrary<BoundarySample> {
  const backends = fc.array(fc.tuple(loopbackName, target), { minLength: 1, maxLength: 3 });
  const match = fc.constantFrom(
    { path: { type: "PathPrefix", value: "/" } },
    { path: { type: "RegularExpression", value: "/.*" } },
    { path: { type: "Exact", value: PLATFORM_PATH } },
    { path: { type: "PathPrefix", value: "/.well-known/acme-challenge" } },
  );
  const filters = (xb: readonly string[], portsOf: readonly number[]) =>
    fc.uniqueArray(
      fc.oneof(
        adminHost(ports).map(h => ({
          type: "RequestHeaderModifier",
          requestHeaderModifier: { set: [{ name: "Host", value: h }] },
        })),
        fc
          .constantFrom("localhost", ...LOOPBACK_SPELLINGS.filter(h => !/^[0-9.x]+$/.test(h)))
          .map(h => ({
            type: "URLRewrite",
            urlRewrite: { hostname: h },
          })),
        fc.nat(xb.length - 1).map(i => ({
          type: "RequestMirror",
          requestMirror: { backendRef: xref(xb[i]!, portsOf[i]!) },
        })),
      ),
      { maxLength: 3, selector: f => f.type },
    );
  return fc
    .record({
      externalHostnames: fc.constantFrom("Allowed" as const, "Denied" as const),
      backends,
      hostnames: fc.uniqueArray(claimedHost, { minLength: 1, maxLength: 2 }),
      match,
      toTenantEcho: fc.boolean(),
      seed: fc.nat(),
      listenerSet: fc.option(
        fc.record({
          hostname: fc.option(
            claimedHost.filter(h => h !== "localhost"),
            { nil: undefined },
          ),
          kind: fc.constantFrom("HTTP", "HTTPS-certificate", "HTTPS-acme"),
          port: fc.constantFrom(80, 443, 8443),
          maxSize: fc.constantFrom(0, 65536, 16 * 1024 * 1024, 2 ** 31 - 1),
          auth: fc.boolean(),
        }),
        { nil: undefined },
      ),
      acmeSecret: fc.boolean(),
    })
    .chain(r => {
      const names = r.backends.map((_, i) => `xb-${i}`);
      const portsOf = r.backends.map(([, t]) => ports[t]);
      return filters(names, portsOf).map(fs => ({ r, names, portsOf, fs }));
    })
    .map(({ r, names, portsOf, fs }): BoundarySample => {
      const objects: KubeObject[] = r.backends.map(([host], i) =>
        xbackend(names[i]!, host, portsOf[i]!),
      );
      objects.push({
        apiVersion: GW,
        kind: "HTTPRoute",
        metadata: tenantMeta("boundary"),
        spec: {
          parentRefs: [{ name: "gw", namespace: "default" }],
          hostnames: r.hostnames,
          rules: [
            {
              matches: [r.match],
              filters: fs,
              backendRefs: r.toTenantEcho
                ? [{ name: "echo", port: 8080 }]
                : [xref(names[r.seed % names.length]!, portsOf[r.seed % names.length]!)],
            },
            // each XBackend on a path of its own (BOUNDARY_PATH_OF), with the same filters
            ...names.map((n, i) => ({
              matches: [{ path: { type: "PathPrefix", value: boundaryPathOf(i) } }],
              filters: fs,
              backendRefs: [xref(n, portsOf[i]!)],
            })),
          ],
        },
      } as KubeObject);
      const ls = r.listenerSet;
      if (ls) {
        const https = ls.kind !== "HTTP";
        const port = https ? (ls.port === 80 ? 443 : ls.port) : 80;
        const authTo = names[r.seed % names.length]!;
        objects.push(
          tenantTlsSecret(),
          {
            apiVersion: GW,
            kind: "ListenerSet",
            metadata: tenantMeta("boundary"),
            spec: {
              parentRef: { name: "gw", namespace: "default" },
              listeners: [
                {
                  name: "l",
                  port,
                  protocol: https ? "HTTPS" : "HTTP",
                  ...(ls.hostname !== undefined && { hostname: ls.hostname }),
                  ...(https && {
                    tls: {
                      mode: "Terminate",
                      ...(ls.kind === "HTTPS-certificate"
                        ? { certificateRefs: [{ name: "tls-good" }] }
                        : { options: { [ACME_ISSUER_OPTION]: "anything" } }),
                    },
                  }),
                  ...(ls.auth && {
                    filters: {
                      requests: [
                        {
                          type: "ExternalAuth",
                          externalAuth: {
                            protocol: "HTTP",
                            backendRef: xref(authTo, portsOf[r.seed % names.length]!),
                            http: {},
                            ...(ls.maxSize > 0 && { forwardBody: { maxSize: ls.maxSize } }),
                          },
                        },
                      ],
                    },
                  }),
                },
              ],
            },
          } as KubeObject,
          {
            apiVersion: GW,
            kind: "HTTPRoute",
            metadata: tenantMeta("on-listenerset"),
            spec: {
              parentRefs: [
                { group: "gateway.networking.k8s.io", kind: "ListenerSet", name: "boundary" },
              ],
              rules: [{ backendRefs: [{ name: "echo", port: 8080 }] }],
            },
          } as KubeObject,
        );
      }
      if (r.acmeSecret)
        objects.push({
          apiVersion: "v1",
          kind: "Secret",
          metadata: {
            name: acmeSecretName(PLATFORM_HOST),
            namespace: "tenant",
            annotations: {
              [AcmeAnnotation.name]: PLATFORM_HOST,
              [AcmeAnnotation.state]: "Pending",
              [AcmeAnnotation.challenges]: JSON.stringify({
                [TENANT_TOKEN]: TENANT_KEY_AUTHORIZATION,
              }),
            },
          },
          type: "Opaque",
        } as KubeObject);
      return { externalHostnames: r.externalHostnames, objects };
    });
}

/**
 * The platform team's shared Gateway as docs/operations.md §11 advises it: its hostname on
 * listeners of its own (HTTP on 80, HTTPS on 443 with its certificate) that admit only routes of
 * its namespace, an open HTTP listener on 80 for tenants (routes from every namespace), and
 * ListenerSets from every namespace. The class's parameters keep ExternalHostname backends off
 * or allow them. The platform's echo answers `echo <path>`, the tenant's `tenant <path>`.
 */
export function boundaryGateway(
  echoPort: number,
  tenantEchoPort: number,
  externalHostnames: "Allowed" | "Denied",
): KubeObject[] {
  return [
    ns("default"),
    ns("tenant"),
    {
      apiVersion: "gateway.kengine.io/v1alpha1",
      kind: "KengineParameters",
      metadata: { name: "platform", namespace: "default" },
      spec: { egress: { externalHostnames } },
    } as KubeObject,
    {
      apiVersion: GW,
      kind: "GatewayClass",
      metadata: { name: "kengine", generation: 1 },
      spec: {
        controllerName: "kengine.io/gateway-controller",
        parametersRef: {
          group: "gateway.kengine.io",
          kind: "KengineParameters",
          name: "platform",
          namespace: "default",
        },
      },
    } as KubeObject,
    {
      apiVersion: GW,
      kind: "Gateway",
      metadata: { name: "gw", namespace: "default", generation: 1 },
      spec: {
        gatewayClassName: "kengine",
        allowedListeners: { namespaces: { from: "All" } },
        listeners: [
          { name: "platform", port: 80, protocol: "HTTP", hostname: PLATFORM_HOST },
          {
            name: "platform-tls",
            port: 443,
            protocol: "HTTPS",
            hostname: PLATFORM_HOST,
            tls: { certificateRefs: [{ name: "platform-cert" }] },
          },
          {
            name: "open",
            port: 80,
            protocol: "HTTP",
            allowedRoutes: { namespaces: { from: "All" } },
          },
        ],
      },
    } as KubeObject,
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "platform-cert", namespace: "default" },
      type: "kubernetes.io/tls",
      data: { "tls.crt": b64(platformPair.crt), "tls.key": b64(platformPair.key) },
    } as KubeObject,
    ...loopbackService("default", "echo", 8080, echoPort),
    ...loopbackService("tenant", "echo", 8080, tenantEchoPort),
    {
      apiVersion: GW,
      kind: "HTTPRoute",
      metadata: {
        name: "platform",
        namespace: "default",
        generation: 1,
        creationTimestamp: "2026-01-01T00:00:00Z",
      },
      spec: {
        parentRefs: [
          { name: "gw", sectionName: "platform" },
          { name: "gw", sectionName: "platform-tls" },
        ],
        hostnames: [PLATFORM_HOST],
        rules: [
          {
            matches: [{ path: { type: "Exact", value: PLATFORM_PATH } }],
            backendRefs: [{ name: "echo", port: 8080 }],
          },
        ],
      },
    } as KubeObject,
  ];
}
