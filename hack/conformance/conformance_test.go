// Package conformance runs the official Gateway API conformance suite
// (sigs.k8s.io/gateway-api/conformance) against Kengine Gateway. The same file builds against
// v1.6.1 (hack/go.mod) and v1.7.0 (hack/peers/conformance/go.mod, where it is a symlink).
//
// It is a thin driver around the suite's own runner: options come from the suite's own flags
// (-gateway-class, -conformance-profiles, -report-output, -run-test, -skip-tests, the
// implementation details, -timeout-config-overrides, ...), supported features come from the
// GatewayClass's status.supportedFeatures (never from a hand-written list), and the report is
// the suite's own ConformanceReport. hack/conformance.ts builds and runs it (npm run conformance).
//
// What this file adds to the suite's defaults:
//   - refuses -supported-features, -exempt-features and -all-features: what is tested is what
//     the controller advertises, nothing more, nothing less;
//   - fails with a clear message when the GatewayClass advertises no features;
//   - timeouts for a small (2-core) machine that runs every pod as a local process, applied
//     under any -timeout-config-overrides the caller gives;
//   - every test runs sequentially, so that the report records each test's real result
//     (v1.6.1 reports tests marked Parallel as passed before they run; see sequentialTests;
//     v1.7.0 fixed that, and sequential runs keep the two releases' results comparable);
//   - an HTTP dialer (the suite's own DefaultRoundTripper.CustomDialContext option) that only
//     lets the suite reach loopback and the local pod network, so a wrong Gateway address can
//     never send test traffic anywhere else.
package conformance

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance"
	"sigs.k8s.io/gateway-api/conformance/tests"
	conformanceconfig "sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/roundtripper"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"
)

var continueAfterSetupFailure = flag.Bool("kengine.continue-after-setup-failure", false,
	"run the tests even when the suite's setup fails (e.g. one base Pod never gets Ready); "+
		"the report then measures the tests against an incomplete setup")

// setupFailedMarker is logged when the suite's setup failed and the tests ran anyway;
// hack/conformance.ts looks for it.
const setupFailedMarker = "KENGINE-CONFORMANCE: SETUP FAILED"

// localTimeouts are the suite's timeouts for this machine, in the suite's own override syntax
// (seconds). One node on 2 cores: the base manifests start ~15 pods plus one proxy Deployment
// per Gateway, and namespace deletion waits for the kubelet.
// MaxTimeToConsistency stays at the suite's 30 s: that is the conformance maximum.
const localTimeouts = "CreateTimeout:120;DeleteTimeout:60;GetTimeout:20;" +
	"GatewayMustHaveAddress:240;GatewayMustHaveCondition:240;GWCMustBeAccepted:120;" +
	"NamespacesMustBeReady:600;RequestTimeout:10;MaxTimeToConsistency:30"

// allowedNets are the only destinations the suite's HTTP client may dial: loopback (the
// Gateways' LoadBalancer addresses are 127.20.x.x) and the local pod network.
var allowedNets = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("10.244.0.0/24"),
}

func guardedDial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return nil, fmt.Errorf("kengine conformance: refusing to dial %q: Gateway addresses must be IPs on loopback or the local pod network", addr)
	}
	ip = ip.Unmap()
	for _, p := range allowedNets {
		if p.Contains(ip) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
	}
	return nil, fmt.Errorf("kengine conformance: refusing to dial %s: only loopback (127.0.0.0/8) and the local pod network (10.244.0.0/24) are allowed", addr)
}

func flagWasSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

func TestConformance(t *testing.T) {
	for _, name := range []string{"supported-features", "exempt-features", "all-features"} {
		if flagWasSet(name) {
			t.Fatalf("-%s is not accepted: the features under test are the GatewayClass's status.supportedFeatures "+
				"(use -skip-tests or -run-test to focus a run; skipped tests show in the report)", name)
		}
	}

	opts := conformance.DefaultOptions(t)

	// Our timeouts first, then whatever the caller asked for on top.
	opts.TimeoutConfig = conformanceconfig.DefaultTimeoutConfig()
	conformanceconfig.ParseTimeoutOverrides(&opts.TimeoutConfig, localTimeouts)
	if f := flag.Lookup("timeout-config-overrides"); f != nil {
		conformanceconfig.ParseTimeoutOverrides(&opts.TimeoutConfig, f.Value.String())
	}

	opts.RoundTripper = &roundtripper.DefaultRoundTripper{
		Debug:             opts.Debug,
		TimeoutConfig:     opts.TimeoutConfig,
		CustomDialContext: guardedDial,
	}

	// Supported features: the GatewayClass's status, read here so that an empty list fails
	// with a message that says what the controller must do.
	gwc := &gatewayv1.GatewayClass{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := opts.Client.Get(ctx, types.NamespacedName{Name: opts.GatewayClassName}, gwc); err != nil {
		t.Fatalf("cannot read GatewayClass %q: %v", opts.GatewayClassName, err)
	}
	if len(gwc.Status.SupportedFeatures) == 0 {
		t.Fatalf("GatewayClass %q (controllerName %s) has an empty status.supportedFeatures: the controller must "+
			"advertise the Gateway API features it supports there; the conformance run tests exactly that list",
			opts.GatewayClassName, gwc.Spec.ControllerName)
	}
	names := make([]string, 0, len(gwc.Status.SupportedFeatures))
	for _, f := range gwc.Status.SupportedFeatures {
		names = append(names, string(f.Name))
	}
	t.Logf("GatewayClass %s status.supportedFeatures: %s", opts.GatewayClassName, strings.Join(names, ","))

	if opts.RunTest != "" {
		// The suite infers features from the GatewayClass only when no test is focused; for a
		// focused run pass the very same list explicitly.
		for _, n := range names {
			opts.SupportedFeatures = append(opts.SupportedFeatures, features.FeatureName(n))
		}
	}
	// Otherwise SupportedFeatures stays empty and the suite infers it from the same status.

	t.Logf("timeouts: %+v", opts.TimeoutConfig)
	run(t, opts, *continueAfterSetupFailure)
}

// sequentialTests is the suite's test list with every test run sequentially.
//
// v1.6.1's runner records a test's result from t.Run's return value, and writes the report
// before the parent test returns; a test that calls t.Parallel() makes t.Run return true at
// once and only runs after the report is written, so it is reported as passed whatever
// happens (kubernetes-sigs/gateway-api issue 5142, fixed upstream after v1.6.1 by PR 5143).
// Run sequentially, every test's recorded result is its real result. The tests themselves
// are unchanged.
func sequentialTests() []suite.ConformanceTest {
	out := make([]suite.ConformanceTest, len(tests.ConformanceTests))
	copy(out, tests.ConformanceTests)
	for i := range out {
		out[i].Parallel = false
	}
	return out
}

// run is the suite's own RunConformanceWithOptions (same public calls, same report), with the
// tests run sequentially (see sequentialTests). With tolerateSetupFailure, Setup runs as a
// subtest, so a setup failure is recorded and the tests still run; Setup's cleanups would run
// when that subtest ends, so the suite's base-resource cleanup is off and the base namespaces
// are deleted here at the end instead.
func run(t *testing.T, opts suite.ConformanceOptions, tolerateSetupFailure bool) {
	testList := sequentialTests()
	if opts.ReportOutputPath != "" {
		if err := opts.Implementation.Validate(); err != nil {
			t.Fatalf("supplied Implementation details are not valid: %v", err)
		}
	}
	cleanupBase := opts.CleanupBaseResources
	if tolerateSetupFailure {
		opts.CleanupBaseResources = false
	}
	cSuite, err := suite.NewConformanceTestSuite(opts)
	if err != nil {
		t.Fatalf("error initializing conformance suite: %v", err)
	}
	if tolerateSetupFailure && cleanupBase {
		t.Cleanup(func() {
			for _, ns := range []string{suite.InfrastructureNamespace, suite.AppBackendNamespace, suite.WebBackendNamespace} {
				obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
				if err := opts.Client.Delete(context.Background(), obj); err != nil {
					t.Logf("deleting namespace %s: %v", ns, err)
				}
			}
		})
	}
	if !tolerateSetupFailure {
		cSuite.Setup(t, testList)
	} else if !t.Run("Setup", func(t *testing.T) { cSuite.Setup(t, testList) }) {
		t.Logf("%s: running the tests anyway (-kengine.continue-after-setup-failure)", setupFailedMarker)
	}
	if opts.ReportOutputPath != "" {
		// The report is written in a cleanup registered before Run's own: v1.7.0's Run marks
		// the suite as running until its cleanup, and Report refuses to report a running
		// suite; cleanups run last-registered first, so this one runs after Run's (as in the
		// suite's own RunConformanceWithOptions; v1.6.1 accepts it the same way).
		t.Cleanup(func() { writeReport(t, cSuite, opts.ReportOutputPath) })
	}
	if err := cSuite.Run(t, testList); err != nil {
		t.Fatalf("running the suite: %v", err)
	}
}

func writeReport(t *testing.T, cSuite *suite.ConformanceTestSuite, path string) {
	report, err := cSuite.Report()
	if err != nil {
		t.Fatalf("error generating conformance profile report: %v", err)
	}
	raw, err := yaml.Marshal(report)
	if err != nil {
		t.Fatalf("marshalling the report: %v", err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatalf("writing the report: %v", err)
	}
	t.Logf("Conformance report:\n%s", raw)
}
