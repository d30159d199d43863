import {
  diagnoseLog,
  failureReasons,
  formatSummary,
  summarizeReportYaml,
} from "./conformance-summary";

// The shape sigs.k8s.io/gateway-api/conformance v1.6.1 writes (apis/v1 ConformanceReport,
// marshalled with sigs.k8s.io/yaml): Statistics fields carry no JSON tags, so Passed/Failed/
// Skipped are capitalised; `extended` is omitted when a profile ran no extended test.
const fixture = `apiVersion: gateway.networking.k8s.io/v1
date: "2026-11-21T09:00:00Z"
gatewayAPIChannel: experimental
gatewayAPIVersion: v1.6.1
implementation:
  contact:
  - https://github.com/kengine/kengine-gateway/issues
  organization: kengine
  project: kengine-gateway
  url: https://github.com/kengine/kengine-gateway
  version: 0.1.0
kind: ConformanceReport
mode: default
profiles:
- core:
    failedTests:
    - HTTPRouteSimpleSameNamespace
    - HTTPRouteWeight
    result: failure
    statistics:
      Failed: 2
      Passed: 30
      Skipped: 1
    skippedTests:
    - HTTPRouteHTTPSListener
  extended:
    failedTests:
    - HTTPRouteMethodMatching
    result: failure
    statistics:
      Failed: 1
      Passed: 5
      Skipped: 0
    supportedFeatures:
    - HTTPRouteMethodMatching
    - HTTPRoutePathRedirect
    unsupportedFeatures:
    - HTTPRouteCORS
    - HTTPRouteRequestMirror
    - HTTPRouteRequestTimeout
  name: GATEWAY-HTTP
  summary: Core tests failed with 2 test failures. Extended tests failed with 1 test failures.
- core:
    result: success
    statistics:
      Failed: 0
      Passed: 3
      Skipped: 0
  name: GATEWAY-GRPC
  summary: Core tests succeeded.
- core:
    failedTests:
    - HTTPRouteSimpleSameNamespace
    result: failure
    statistics:
      Failed: 1
      Passed: 10
      Skipped: 0
  name: GATEWAY-TLS
  summary: Core tests failed with 1 test failures.
`;

describe("summarizeReportYaml", () => {
  const s = summarizeReportYaml(fixture);

  it("reads the header", () => {
    expect(s.implementation).toEqual({
      organization: "kengine",
      project: "kengine-gateway",
      version: "0.1.0",
    });
    expect(s.gatewayAPIVersion).toBe("v1.6.1");
    expect(s.gatewayAPIChannel).toBe("experimental");
    expect(s.mode).toBe("default");
  });

  it("sorts profiles and reads core and extended statistics", () => {
    expect(s.profiles.map(p => p.name)).toEqual(["GATEWAY-GRPC", "GATEWAY-HTTP", "GATEWAY-TLS"]);
    const http = s.profiles[1];
    expect(http.core).toEqual({
      result: "failure",
      passed: 30,
      failed: 2,
      skipped: 1,
      failedTests: ["HTTPRouteSimpleSameNamespace", "HTTPRouteWeight"],
      skippedTests: ["HTTPRouteHTTPSListener"],
    });
    expect(http.extended).toMatchObject({ result: "failure", passed: 5, failed: 1, skipped: 0 });
    expect(http.extended?.supportedFeatures).toEqual([
      "HTTPRouteMethodMatching",
      "HTTPRoutePathRedirect",
    ]);
    expect(http.extended?.unsupportedFeatures).toHaveLength(3);
    expect(s.profiles[0].extended).toBeUndefined();
  });

  it("lists every failed test once and counts all failures", () => {
    expect(s.failedTests).toEqual([
      "HTTPRouteMethodMatching",
      "HTTPRouteSimpleSameNamespace",
      "HTTPRouteWeight",
    ]);
    // A test that belongs to two profiles counts in both, as in the report.
    expect(s.totalFailed).toBe(4);
  });

  it("formats a table with one row per profile", () => {
    const text = formatSummary(s);
    const lines = text.split("\n");
    expect(lines[0]).toContain("Gateway API v1.6.1 (experimental), kengine-gateway 0.1.0");
    expect(lines[1]).toMatch(
      /^profile\s+core\s+passed\s+failed\s+skipped\s+ext features\s+ext passed/,
    );
    expect(lines[3]).toMatch(/^GATEWAY-GRPC\s+success\s+3\s+0\s+0\s+-\s+-\s+-\s+-$/);
    expect(lines[4]).toMatch(/^GATEWAY-HTTP\s+failure\s+30\s+2\s+1\s+2\/5\s+5\s+1\s+0$/);
    expect(text).toContain(
      "failed tests (3):\n  HTTPRouteMethodMatching\n  HTTPRouteSimpleSameNamespace\n  HTTPRouteWeight",
    );
    expect(text).toContain("skipped tests (1): HTTPRouteHTTPSListener");
  });

  it("says so when nothing failed", () => {
    const ok = summarizeReportYaml(
      fixture.replace(/kind: ConformanceReport[\s\S]*/, "kind: ConformanceReport\nprofiles: []\n"),
    );
    expect(ok.profiles).toEqual([]);
    expect(formatSummary(ok)).toContain("failed tests: none");
  });

  it("rejects what is not a conformance report", () => {
    expect(() => summarizeReportYaml("kind: Pod\n")).toThrow(/ConformanceReport/);
    expect(() => summarizeReportYaml("")).toThrow(/ConformanceReport/);
  });
});

describe("diagnoseLog", () => {
  it("keeps the last distinct waiting messages and the testify error", () => {
    const log = [
      "=== RUN   TestConformance",
      "    helpers.go:273: 2026-11-21T09:00:00.9Z: Gateway gateway-conformance-infra/all-namespaces expected observedGeneration to be updated to 1 for all conditions, only 0/2 were updated. stale conditions are: Accepted (generation 0), Programmed (generation 0)",
      "    helpers.go:279: 2026-11-21T09:00:01.1Z: gateway-conformance-infra/same-namespace Gateway not Accepted yet",
      "    helpers.go:304: 2026-11-21T09:00:01.2Z: Pod gateway-conformance-infra/coredns-abc not ready yet",
      "    helpers.go:279: 2026-11-21T09:00:02.1Z: gateway-conformance-infra/same-namespace Gateway not Accepted yet",
      "    helpers.go:312: ",
      "        \tError Trace:\t/x/helpers.go:312",
      "        \tError:      \tReceived unexpected error:",
      "        \t            \tcontext deadline exceeded",
      "        \tTest:       \tTestConformance",
      "        \tMessages:   \terror waiting for gateway-conformance-infra namespaces to be ready",
      "--- FAIL: TestConformance (600.00s)",
    ].join("\n");
    expect(diagnoseLog(log)).toEqual([
      "Gateway gateway-conformance-infra/all-namespaces expected observedGeneration to be updated to 1 for all conditions, only 0/2 were updated. stale conditions are: Accepted (generation 0), Programmed (generation 0)",
      "Pod gateway-conformance-infra/coredns-abc not ready yet",
      "gateway-conformance-infra/same-namespace Gateway not Accepted yet",
      "error: Received unexpected error:",
      "error: context deadline exceeded",
      "error: error waiting for gateway-conformance-infra namespaces to be ready",
    ]);
  });

  it("reports our own GatewayClass check", () => {
    const log =
      '    conformance_test.go:120: GatewayClass "kengine" (controllerName kengine.io/gateway-controller) has an empty status.supportedFeatures: the controller must advertise';
    expect(diagnoseLog(log)).toEqual([
      'GatewayClass "kengine" (controllerName kengine.io/gateway-controller) has an empty status.supportedFeatures: the controller must advertise',
    ]);
  });
});

describe("failureReasons", () => {
  it("takes the first testify error of each failed test, following RUN/CONT/NAME headers", () => {
    const log = [
      "=== RUN   TestConformance/GatewayModifyListeners",
      "=== RUN   TestConformance/GatewayModifyListeners/should_add",
      "    helpers.go:304: 2026-11-21T08:30:38Z: Pod gateway-conformance-infra/coredns-x not ready yet",
      "=== PAUSE TestConformance/HTTPRouteWeight",
      "=== NAME  TestConformance/GatewayModifyListeners/should_add",
      "    helpers.go:312: ",
      "        \tError Trace:\t/x/helpers.go:312",
      "        \tError:      \tReceived unexpected error:",
      "        \t            \tcontext deadline exceeded",
      "        \tTest:       \tTestConformance/GatewayModifyListeners/should_add",
      "        \tMessages:   \terror waiting for gateway-conformance-infra namespaces to be ready",
      "        \tError:      \tsecond error, ignored",
      "=== CONT  TestConformance/HTTPRouteWeight",
      "        \tError:      \tShould be true",
      "        \tTest:       \tTestConformance/HTTPRouteWeight",
      "--- FAIL: TestConformance/HTTPRouteWeight (3.00s)",
    ].join("\n");
    const r = failureReasons(log, ["GatewayModifyListeners", "HTTPRouteWeight", "Missing"]);
    expect(r.get("GatewayModifyListeners")).toBe(
      "Received unexpected error: context deadline exceeded error waiting for gateway-conformance-infra namespaces to be ready " +
        "(last logged: Pod gateway-conformance-infra/coredns-x not ready yet)",
    );
    expect(r.get("HTTPRouteWeight")).toBe("Should be true");
    expect(r.get("Missing")).toBe("");
  });

  it("falls back to the last two log messages of a test that failed without a testify error", () => {
    const log = [
      "=== RUN   TestConformance/TLSRouteHostnameIntersection",
      "=== NAME  TestConformance/TLSRouteHostnameIntersection/sub",
      '    tls.go:78: 2026-11-21T08:54:01Z: Request failed, not ready yet: Get "https://127.20.0.9/": EOF (after 1.0s)',
      '    tls.go:78: 2026-11-21T08:54:02Z: Request failed, not ready yet: Get "https://127.20.0.9/": EOF (after 2.0s)',
      "    http.go:306: 2026-11-21T08:54:30Z: timeout while waiting after 30 attempts, 0/3 successes",
      "=== NAME  TestConformance/TLSRouteHostnameIntersection",
      "    apply.go:279: 2026-11-21T08:54:30Z: Deleting tlsroute-x TLSRoute",
    ].join("\n");
    expect(
      failureReasons(log, ["TLSRouteHostnameIntersection"]).get("TLSRouteHostnameIntersection"),
    ).toBe(
      'Request failed, not ready yet: Get "https://127.20.0.9/": EOF timeout while waiting after 30 attempts, 0/3 successes',
    );
  });
});
