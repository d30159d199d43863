/**
 * Hostile tenant objects that broke a shared Gateway before issue 15 (each found by the
 * property-based hunt in tests/integration/property-caddy.test.ts, or named by the issue),
 * replayed by name on every run. docs/operations.md ("Hardening") says what each one did.
 */
import { KubeObject } from "../../capabilities/snapshot";
import { tenantListenerSet, tenantMeta } from "./arbitrary-hostile";

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
  // The case: braces in a regular expression became a placeholder inside the CEL text.
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
