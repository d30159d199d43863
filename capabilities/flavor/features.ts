/**
 * Gateway API features (conformance feature names) this controller delivers on its own proxy
 * build (the Bundled flavour); a class whose parameters name another flavour advertises these
 * minus what that flavour lacks (proxy-flavor.ts) in GatewayClass.status.supportedFeatures.
 * Only list what is implemented and proven.
 */
export const SUPPORTED_FEATURES: readonly string[] = [
  "Gateway",
  "GatewayPort8080",
  "GRPCRoute",
  "HTTPRoute",
  "HTTPRouteDestinationPortMatching",
  "HTTPRouteHostRewrite",
  "HTTPRouteMethodMatching",
  "HTTPRoutePathRedirect",
  "HTTPRoutePathRewrite",
  "HTTPRoutePortRedirect",
  "HTTPRouteQueryParamMatching",
  "HTTPRouteResponseHeaderModification",
  "HTTPRouteSchemeRedirect",
  "HTTPRoute303RedirectStatusCode",
  "HTTPRoute307RedirectStatusCode",
  "HTTPRoute308RedirectStatusCode",
  "ReferenceGrant",
  "TLSRoute",
  // Terminate-mode TLS listeners (caddy-l4 tls handler), also sharing a port with Passthrough.
  "TLSRouteModeMixed",
  "TLSRouteModeTerminate",
  // Proven by the conformance suite:
  "GatewayHTTPListenerIsolation",
  "GatewayInfrastructurePropagation",
  "GRPCRouteNamedRouteRule",
  "HTTPRouteBackendProtocolH2C",
  "HTTPRouteBackendProtocolWebSocket",
  "HTTPRouteNamedRouteRule",
  "HTTPRouteParentRefPort",
  "TCPRoute",
  "UDPRoute",
  // Proven by the conformance suite (docs/features.md says how):
  "BackendTLSPolicy",
  "GatewayAddressEmpty",
  "GatewayHTTPSListenerDetectMisdirectedRequests",
  "HTTPRouteBackendRequestHeaderModification",
  "HTTPRouteBackendTimeout",
  "HTTPRouteCORS",
  "HTTPRouteRequestTimeout",
  "HTTPRouteRetry",
  "ListenerSet",
  // Proven by the conformance suite (the local load balancer honours spec.loadBalancerIP):
  "GatewayStaticAddresses",
  // Proven by the conformance suite (kengine_mirror, Bundled flavour only):
  "HTTPRouteRequestMirror",
  "HTTPRouteRequestMultipleMirrors",
  "HTTPRouteRequestPercentageMirror",
  // Proven by the conformance suite (kengine_http transport, Bundled flavour only):
  "BackendTLSPolicySANValidation",
  // No test in suite v1.6.1 (v1.7.0's connection-error test fails dials); proven on real Caddy
  // by tests/integration/retry-caddy.test.ts (retry_match on is_transport_error, Caddy >= 2.11.3):
  "HTTPRouteRetryBackendTimeout",
  "HTTPRouteRetryConnectionError",
  // Proven by the conformance suite (client certificates; the backend one on the
  // kengine_http transport, Bundled flavour only):
  "GatewayBackendClientCertificate",
  "GatewayFrontendClientCertificateValidation",
  "GatewayFrontendClientCertificateValidationInsecureFallback",
  // Gateway API v1.7.0 names (suite v1.6.1 ignores them; v1.6.1's names above stay for it).
  // Proven by suite v1.7.0 (GatewayInfrastructureMetadata, GRPCRouteRequestHeaderModifier):
  "GatewayInfrastructure",
  "GRPCRouteRequestHeaderModifier",
  // The route's own hostname breaks ties of intersected hostnames (precedence.ts):
  "GatewayRouteHostnameIntersectionPrecedence",
  // Retries bounded by the request timeout (kengine_deadline, Bundled only: caddy/deadline.ts):
  "HTTPRouteRetryCodes",
  // URLRewrite on a backendRef (its own handler chain in the weighted dispatch):
  "HTTPRouteBackendURLRewrite",
  // Pre-routing listener filters: ExternalAuth over HTTP (kengine_ext_auth, Bundled only).
  // Suite v1.7.0 has no test for it; proof: golden listener-filters + golden-caddy.test.ts.
  "GatewayListenerFilters",
  // CA certificates from ClusterTrustBundles (frontend validation, BackendTLSPolicy), every
  // flavour (the CAs are inline). No test in suite v1.7.0; proof: golden cluster-trust-bundle,
  // client-certificates.test.ts with every CA in a bundle, ingest.test.ts (bundles watched).
  "ClusterTrustBundle",
  // Address routability (GEP-5093), every flavour (it is about the proxies' Service, not the
  // proxy): the default, Cluster (the Service's cluster IP; a Cluster-only Gateway gets a ClusterIP
  // Service) and the conformance sentinel (provision/routability.ts). No test in suite v1.7.0;
  // proof: tests/integration/address-routability.test.ts (status, traffic to the cluster IP).
  "GatewayAddressRoutability",
  "GatewayAddressRoutabilityCluster",
]
  .slice()
  .sort();
