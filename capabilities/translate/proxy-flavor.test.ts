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
      retryOnStatus: true,
      retryOnTransportError: true,
      sniRegexp: true,
      backendSANs: true,
      backendClientCertificate: true,
      celPh: true,
      appMetrics: true,
      sessionModule: true,
      cookieMaxAge: true,
    });
    expect(supportedFeaturesOf("Bundled")).toEqual(SUPPORTED_FEATURES);
  });

  it("stock flavours have none of our modules; Kengine 2.8 neither retries on status nor matches server names by regexp", () => {
    expect(capabilitiesOf("Caddy")).toEqual({
      persistentListeners: false,
      mirror: false,
      retryOnStatus: true,
      retryOnTransportError: true,
      sniRegexp: true,
      backendSANs: false,
      backendClientCertificate: false,
      celPh: true,
      appMetrics: true,
      sessionModule: false,
      cookieMaxAge: true,
    });
    expect(capabilitiesOf("Kengine")).toEqual({
      persistentListeners: false,
      mirror: false,
      retryOnStatus: false,
      retryOnTransportError: false,
      sniRegexp: false,
      backendSANs: false,
      backendClientCertificate: false,
      celPh: false,
      appMetrics: false, // Caddy 2.8: per-server metrics only, no host label
      sessionModule: false,
      cookieMaxAge: false, // Caddy 2.8's cookie policy has no max_age
    });
    expect(supportedFeaturesOf("Caddy")).toContain("HTTPRouteRetry");
    expect(supportedFeaturesOf("Kengine")).not.toContain("HTTPRouteRetry");
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
    }
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
