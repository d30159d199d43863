import { SUPPORTED_FEATURES } from "./features";
import {
  DEFAULT_PROXY_FLAVOR,
  FEATURE_NEEDS,
  PROXY_FLAVORS,
  capabilitiesOf,
  missingCapability,
  supportedFeaturesOf,
} from "./proxy-flavor";

describe("proxy flavours", () => {
  it("our own build is the default and can do everything", () => {
    expect(DEFAULT_PROXY_FLAVOR).toBe("Bundled");
    expect(capabilitiesOf("Bundled")).toEqual({
      persistentListeners: true,
      mirror: true,
      extAuth: true,
      retryOnStatus: true,
      retryOnTransportError: true,
      requestDeadline: true,
      sniRegexp: true,
      backendSANs: true,
      backendClientCertificate: true,
      celPh: true,
      appMetrics: true,
      routeTable: true,
      sessionModule: true,
      cookieMaxAge: true,
      spanAttributes: true,
      readIdleTimeout: true,
      egressGuard: true,
    });
    expect(supportedFeaturesOf("Bundled")).toEqual(SUPPORTED_FEATURES);
  });

  it("stock flavours have none of our modules; Kengine 2.8 neither retries on status nor matches server names by regexp", () => {
    expect(capabilitiesOf("Caddy")).toEqual({
      persistentListeners: false,
      mirror: false,
      extAuth: false,
      retryOnStatus: true,
      retryOnTransportError: true,
      requestDeadline: false,
      sniRegexp: true,
      backendSANs: false,
      backendClientCertificate: false,
      celPh: true,
      appMetrics: true,
      routeTable: false,
      sessionModule: false,
      cookieMaxAge: true,
      spanAttributes: true,
      readIdleTimeout: false,
      egressGuard: false,
    });
    expect(capabilitiesOf("Kengine")).toEqual({
      persistentListeners: false,
      mirror: false,
      extAuth: false,
      retryOnStatus: false,
      retryOnTransportError: false,
      requestDeadline: false,
      sniRegexp: false,
      backendSANs: false,
      backendClientCertificate: false,
      celPh: false,
      appMetrics: false, // Caddy 2.8: per-server metrics only, no host label
      routeTable: false,
      sessionModule: false,
      cookieMaxAge: false, // Caddy 2.8's cookie policy has no max_age
      spanAttributes: false, // Caddy 2.8's tracing handler has only `span`
      readIdleTimeout: false,
      egressGuard: false,
    });
    expect(supportedFeaturesOf("Caddy")).toContain("HTTPRouteRetry");
    expect(supportedFeaturesOf("Kengine")).not.toContain("HTTPRouteRetry");
    // HTTPRouteRetryCodes: its request timeout must bound the retries (our kengine_deadline).
    expect(supportedFeaturesOf("Caddy", ["HTTPRoute", "HTTPRouteRetryCodes"])).toEqual([
      "HTTPRoute",
    ]);
    expect(supportedFeaturesOf("Bundled", ["HTTPRouteRetryCodes"])).toEqual([
      "HTTPRouteRetryCodes",
    ]);
    for (const f of ["HTTPRouteRetryBackendTimeout", "HTTPRouteRetryConnectionError"]) {
      expect(supportedFeaturesOf("Caddy")).toContain(f);
      expect(supportedFeaturesOf("Kengine")).not.toContain(f);
    }
    expect(supportedFeaturesOf("Caddy", ["HTTPRoute", "HTTPRouteRequestMirror"])).toEqual([
      "HTTPRoute",
    ]);
    // Frontend client certificate validation is stock Caddy (2.8 too); presenting a client
    // certificate to backends needs our transport.
    for (const flavor of ["Caddy", "Kengine"] as const) {
      expect(supportedFeaturesOf(flavor)).toContain("GatewayFrontendClientCertificateValidation");
      expect(supportedFeaturesOf(flavor)).toContain(
        "GatewayFrontendClientCertificateValidationInsecureFallback",
      );
      expect(supportedFeaturesOf(flavor)).not.toContain("GatewayBackendClientCertificate");
      // Pre-routing external authorization needs our handler (proxy/extauth).
      expect(supportedFeaturesOf(flavor)).not.toContain("GatewayListenerFilters");
    }
    expect(supportedFeaturesOf("Bundled")).toContain("GatewayListenerFilters");
  });

  it("a flavour drops exactly the features whose capability it lacks", () => {
    for (const flavor of PROXY_FLAVORS) {
      const caps = capabilitiesOf(flavor);
      const dropped = SUPPORTED_FEATURES.filter(f => !supportedFeaturesOf(flavor).includes(f));
      expect(dropped).toEqual(
        SUPPORTED_FEATURES.filter(f => FEATURE_NEEDS[f] !== undefined && !caps[FEATURE_NEEDS[f]]),
      );
    }
  });

  it("names what is missing", () => {
    expect(missingCapability("Bundled", ["mirror", "retryOnStatus"])).toBeUndefined();
    expect(missingCapability("Kengine", [])).toBeUndefined();
    expect(missingCapability("Kengine", ["mirror", "retryOnStatus"])).toBe(
      "the Kengine proxy flavour has no request mirroring, retries on response status codes",
    );
  });
});
