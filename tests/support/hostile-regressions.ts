/**
 * Hostile tenant objects that broke a shared Gateway before the hostile-object hunt (each found by the
 * property-based hunt in tests/integration/property-caddy.test.ts, or named by the issue),
 * replayed by name on every run. docs/operations.md ("Hardening") says what each one did.
 */
import { KubeObject } from "../../capabilities/snapshot";
import { tenantListenerSet, tenantMeta } from "./arbitrary-hostile";
import {
  BoundaryPorts,
  BoundarySample,
  PLATFORM_HOST,
  TENANT_HOST,
  TENANT_KEY_AUTHORIZATION,
  TENANT_TOKEN,
} from "./arbitrary-boundary";
import { loopbackResolvingNames } from "./boundary";
import {
  ACME_ISSUER_OPTION,
  AcmeAnnotation,
  acmeSecretName,
} from "../../capabilities/validation/acme";

const GW = "gateway.networking.k8s.io/v1";
const parentRefs = [{ name: "gw", namespace: "default" }];
const echo = [{ name: "echo", port: 8080 }];

const route = (kind: "HTTPRoute" | "GRPCRoute", rules: readonly object[]): KubeObject[] => [
  {
    apiVersion: GW,
    kind,
    metadata: tenantMeta("hostile"),
    spec: { parentRefs, rules },
  } as KubeObject,
];

const queries = (...params: readonly object[]): KubeObject[] =>
  route("HTTPRoute", [{ matches: [{ queryParams: params }], backendRefs: echo }]);

export const REGRESSIONS: Readonly<Record<string, KubeObject[]>> = {
  // The issue's case: braces in a regular expression became a placeholder inside the CEL text.
  "issue-15-query-regex-braces": queries(
    { type: "RegularExpression", name: "a", value: "x{ab}" },
    { type: "RegularExpression", name: "b", value: "[0-9]+" },
  ),
  // Found by the hunt: a query parameter name with a token character outside [A-Za-z0-9_.-]
  // was left as `{…}` text by Caddy's CEL placeholder sugar: CEL syntax error.
  "query-name-token-characters": queries(
    { type: "RegularExpression", name: "F'Z'JOB'eV", value: "[a-z]+" },
    { type: "RegularExpression", name: "8jdzrkJiwOR7", value: "\\pL" },
  ),
  // Found by the hunt: `{http.request.host}` in a regular expression became a function call
  // inside a CEL string literal.
  "query-regex-placeholder-text": queries(
    { type: "RegularExpression", name: "q", value: '{http.request.host}\\Q{}\\E"' },
    { type: "RegularExpression", name: "r", value: "\\d+" },
  ),
  // Found by the hunt (and named by the issue): a TLS Secret whose key is not the certificate's.
  "listenerset-mismatched-key": tenantListenerSet({ secret: "mismatched", port: 8443, http: true }),
  // Found by the hunt: a key on a curve Go cannot load (secp256k1), though node:crypto parses it.
  "listenerset-unsupported-curve": tenantListenerSet({
    secret: "unsupported-curve",
    port: 8443,
    http: false,
  }),
  // Found by the hunt: the key belongs to the second certificate of tls.crt, not the leaf.
  "listenerset-chain-wrong-leaf": tenantListenerSet({
    secret: "chain-wrong-leaf",
    port: 9443,
    http: false,
  }),
  // Found by the hunt (2026-11-24): header names that are Object.prototype's own keys
  // (`constructor`, `__proto__`, `toString`) made the header handler's map building throw
  // (`add[name].push is not a function`) or set a prototype instead of a header.
  "header-names-prototype-keys": route("HTTPRoute", [
    {
      filters: [
        {
          type: "RequestHeaderModifier",
          requestHeaderModifier: {
            add: [
              { name: "constructor", value: "a" },
              { name: "toString", value: "b" },
            ],
            set: [{ name: "__proto__", value: "c" }],
          },
        },
        {
          type: "ResponseHeaderModifier",
          responseHeaderModifier: { add: [{ name: "hasOwnProperty", value: "d" }] },
        },
      ],
      backendRefs: echo,
    },
  ]),
  // Found by the hunt: an empty ResponseHeaderModifier made Caddy 2.8 (Kengine) panic while
  // provisioning, killing the proxy process.
  "empty-response-header-modifier": route("HTTPRoute", [
    {
      filters: [{ type: "ResponseHeaderModifier", responseHeaderModifier: {} }],
      backendRefs: echo,
    },
  ]),
  // Found by the hunt: the same through a backendRef's own filter (split dispatch).
  "empty-backend-response-header-modifier": route("HTTPRoute", [
    {
      backendRefs: [
        {
          name: "echo",
          port: 8080,
          filters: [{ type: "ResponseHeaderModifier", responseHeaderModifier: { set: [] } }],
        },
      ],
    },
  ]),
};

/* ------------------------------------------------------------------ the tenant boundary */

const XGW = "gateway.networking.x-k8s.io/v1alpha1";
/** A name only this machine resolves to loopback (e.g. its own host name), else localhost. */
const LOOPBACK_NAME = loopbackResolvingNames()[0] ?? "localhost";

const xbackend = (name: string, hostname: string, port: number): KubeObject =>
  ({
    apiVersion: XGW,
    kind: "XBackend",
    metadata: tenantMeta(name),
    spec: { type: "ExternalHostname", externalHostname: { hostname }, port: { number: port } },
  }) as KubeObject;

/** A reference to an XBackend: the CRD forbids a port there (the XBackend has its own). */
const xref = (name: string, _port?: number) => ({
  group: "gateway.networking.x-k8s.io",
  kind: "XBackend",
  name,
});

const boundaryRoute = (hostnames: readonly string[], rule: object): KubeObject =>
  ({
    apiVersion: GW,
    kind: "HTTPRoute",
    metadata: tenantMeta("boundary"),
    spec: { parentRefs, hostnames, rules: [rule] },
  }) as KubeObject;

const authListenerSet = (backendRef: object, hostname: string, maxSize: number): KubeObject[] => [
  {
    apiVersion: GW,
    kind: "ListenerSet",
    metadata: tenantMeta("boundary"),
    spec: {
      parentRef: { name: "gw", namespace: "default" },
      listeners: [
        {
          name: "l",
          port: 80,
          protocol: "HTTP",
          hostname,
          filters: {
            requests: [
              {
                type: "ExternalAuth",
                externalAuth: {
                  protocol: "HTTP",
                  backendRef,
                  http: {},
                  forwardBody: { maxSize },
                },
              },
            ],
          },
        },
      ],
    },
  } as KubeObject,
  {
    apiVersion: GW,
    kind: "HTTPRoute",
    metadata: tenantMeta("on-listenerset"),
    spec: {
      parentRefs: [{ group: "gateway.networking.k8s.io", kind: "ListenerSet", name: "boundary" }],
      rules: [{ backendRefs: echo }],
    },
  } as KubeObject,
];

/**
 * Tenant objects that turned a shared proxy against its owners before the tenant boundary was enforced (named by the
 * issue, each one also found by the boundary property of
 * tests/integration/property-caddy.test.ts), replayed by name on every run; their destinations
 * are the test proxy's own ports and a canary (`BoundaryPorts`).
 */
export const BOUNDARY_REGRESSIONS: Readonly<Record<string, (p: BoundaryPorts) => BoundarySample>> =
  {
    // The issue's case: an XBackend named localhost at the admin port and a route for
    // `localhost`: any client read the running config (private keys included) and could POST /load.
    "boundary-xbackend-localhost-admin": p => ({
      externalHostnames: "Allowed",
      objects: [
        xbackend("admin", "localhost", p.admin),
        boundaryRoute(["localhost", TENANT_HOST], { backendRefs: [xref("admin", p.admin)] }),
      ],
    }),
    // A name that is not loopback by definition but that the proxy's resolver maps to loopback
    // (here: /etc/hosts): only the dial-time check refuses it.
    "boundary-xbackend-loopback-resolving-name": p => ({
      externalHostnames: "Allowed",
      objects: [
        xbackend("admin", LOOPBACK_NAME, p.admin),
        xbackend("canary", LOOPBACK_NAME, p.canary),
        boundaryRoute([TENANT_HOST, "localhost"], { backendRefs: [xref("admin", p.admin)] }),
      ],
    }),
    // The issue's case: a RequestHeaderModifier setting Host to the admin address, on any route
    // hostname, so that the admin API's Host check passes.
    "boundary-host-rewrite-admin": p => ({
      externalHostnames: "Allowed",
      objects: [
        xbackend("admin", LOOPBACK_NAME, p.admin),
        boundaryRoute(["*.example", TENANT_HOST], {
          filters: [
            {
              type: "RequestHeaderModifier",
              requestHeaderModifier: { set: [{ name: "Host", value: `localhost:${p.admin}` }] },
            },
          ],
          backendRefs: [xref("admin", p.admin)],
        }),
      ],
    }),
    // The issue's case: a RequestMirror delivering each client's request (POST /load bodies
    // included) to the admin API blind.
    "boundary-mirror-to-admin": p => ({
      externalHostnames: "Allowed",
      objects: [
        xbackend("admin", "localhost", p.admin),
        xbackend("canary", LOOPBACK_NAME, p.canary),
        boundaryRoute([TENANT_HOST, "*.example"], {
          filters: [
            { type: "RequestMirror", requestMirror: { backendRef: xref("canary", p.canary) } },
          ],
          backendRefs: echo,
        }),
      ],
    }),
    // The same dial through an ExternalAuth filter.
    "boundary-extauth-to-loopback": p => ({
      externalHostnames: "Allowed",
      objects: [
        xbackend("canary", LOOPBACK_NAME, p.canary),
        ...authListenerSet(xref("canary", p.canary), TENANT_HOST, 65536),
      ],
    }),
    // The issue's case: ExternalAuth forwardBody.maxSize as the CRD allows (2^31-1), copied as
    // written: the proxy read that much of one anonymous upload into memory. Refused (the class
    // limit) or capped, the rest of the Gateway is served.
    "boundary-extauth-body-beyond-the-cap": () => ({
      externalHostnames: "Denied",
      objects: authListenerSet({ name: "echo", port: 8080 }, TENANT_HOST, 2 ** 31 - 1),
    }),
    // An XBackend at the proxy's own listener: every request loops through the proxy.
    "boundary-xbackend-own-listener": p => ({
      externalHostnames: "Allowed",
      objects: [
        xbackend("self", LOOPBACK_NAME, p.listener),
        boundaryRoute([TENANT_HOST], { backendRefs: [xref("self", p.listener)] }),
      ],
    }),
    // The issue's case: a ListenerSet listener for the platform's name naming an ACME issuer, and
    // a Secret with the tenant's HTTP-01 answer for that name: the platform's port-80 listener
    // served it, so the tenant could get a certificate for a name it does not own.
    "boundary-http01-for-the-platform-name": () => ({
      externalHostnames: "Denied",
      objects: [
        {
          apiVersion: GW,
          kind: "ListenerSet",
          metadata: tenantMeta("boundary"),
          spec: {
            parentRef: { name: "gw", namespace: "default" },
            listeners: [
              {
                name: "l",
                port: 8443,
                protocol: "HTTPS",
                hostname: PLATFORM_HOST,
                tls: { mode: "Terminate", options: { [ACME_ISSUER_OPTION]: "anything" } },
              },
            ],
          },
        } as KubeObject,
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: {
            name: acmeSecretName(PLATFORM_HOST),
            namespace: "tenant",
            annotations: {
              [AcmeAnnotation.name]: PLATFORM_HOST,
              [AcmeAnnotation.challenges]: JSON.stringify({
                [TENANT_TOKEN]: TENANT_KEY_AUTHORIZATION,
              }),
            },
          },
          type: "Opaque",
        } as KubeObject,
      ],
    }),
  };
