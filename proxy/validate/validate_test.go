package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/caddyserver/caddy/v2"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	"kengine.io/gateway/proxy/internal/caddytest"
)

// probe is an app that counts what Caddy does with it.
type probe struct{}

var provisioned, started, cleaned atomic.Int32

func (probe) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "kengine_validate_probe", New: func() caddy.Module { return new(probe) }}
}
func (*probe) Provision(caddy.Context) error { provisioned.Add(1); return nil }
func (*probe) Start() error                  { started.Add(1); return nil }
func (*probe) Stop() error                   { return nil }
func (*probe) Cleanup() error                { cleaned.Add(1); return nil }

func init() { caddy.RegisterModule(probe{}) }

// running starts Caddy with only an admin endpoint, on a unix socket (never TCP).
func running(t *testing.T) caddytest.Admin {
	t.Helper()
	admin := caddytest.AdminSocket(t)
	cfg := fmt.Sprintf(`{"admin":{"listen":%q,"config":{"persist":false}}}`, admin.Listen)
	if err := caddy.Load([]byte(cfg), true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = caddy.Stop() })
	return admin
}

func post(t *testing.T, admin caddytest.Admin, body []byte) (int, string) {
	t.Helper()
	res, err := admin.Client.Post(admin.URL+Path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func statusOf(t *testing.T, admin caddytest.Admin, method, path, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, admin.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res, err := admin.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func runningConfig(t *testing.T, admin caddytest.Admin) string {
	t.Helper()
	res, err := admin.Client.Get(admin.URL + "/config/")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

func server(port int, handler string) string {
	return fmt.Sprintf(`{"apps":{"kengine_validate_probe":{},"http":{"servers":{"srv0":{"listen":["127.0.0.1:%d"],"routes":[{"handle":[{"handler":%q,"body":"hi"}]}]}}}}}`, port, handler)
}

func TestValidConfigIsProvisionedNeverStartedAndCleanedUp(t *testing.T) {
	admin := running(t)
	before := runningConfig(t, admin)
	port := caddytest.FreePort(t)
	p0, s0, c0 := provisioned.Load(), started.Load(), cleaned.Load()

	status, body := post(t, admin, []byte(server(port, "static_response")))
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	if got := provisioned.Load() - p0; got != 1 {
		t.Errorf("provisioned %d times, want 1", got)
	}
	if got := started.Load() - s0; got != 0 {
		t.Errorf("started %d times, want 0", got)
	}
	if got := cleaned.Load() - c0; got != 1 {
		t.Errorf("cleaned up %d times, want 1", got)
	}
	// no listener bound: the port is still free
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("the validated config's port is taken: %v", err)
	}
	ln.Close()
	// the admin server is the same and runs the same config
	if after := runningConfig(t, admin); after != before {
		t.Errorf("running config changed: %s -> %s", before, after)
	}
}

func TestRefusedConfigAnswers400WithCaddysError(t *testing.T) {
	admin := running(t)
	before := runningConfig(t, admin)
	status, body := post(t, admin, []byte(server(caddytest.FreePort(t), "no_such_handler")))
	if status != http.StatusBadRequest {
		t.Fatalf("status %d: %s", status, body)
	}
	var e struct{ Error string }
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("not JSON: %s", body)
	}
	for _, want := range []string{"server srv0", "route 0", "no_such_handler"} {
		if !strings.Contains(e.Error, want) {
			t.Errorf("error %q does not mention %q", e.Error, want)
		}
	}
	if after := runningConfig(t, admin); after != before {
		t.Errorf("running config changed: %s -> %s", before, after)
	}
	// the same config is refused by /load too (validation says what a load would say)
	if got := statusOf(t, admin, http.MethodPost, "/load", server(caddytest.FreePort(t), "no_such_handler")); got != http.StatusBadRequest {
		t.Errorf("/load answered %d", got)
	}
}

// negativeSerialCA is a self-signed CA certificate (base64 DER) with serial number -12345, made
// with `openssl req -x509 -set_serial -12345` (Go cannot make one).
const negativeSerialCA = "MIIBZTCCAQugAwIBAgICz8cwCgYIKoZIzj0EAwIwETEPMA0GA1UEAwwGbmVnLWNhMB4XDTI2MTEyNDAwMTM0MloXDTI3MTEyNDAwMTM0MlowETEPMA0GA1UEAwwGbmVnLWNhMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEemte4xsc3TVSROsyInDAl0jR2bI3xYrVG4CZU8H+uh7OiDcpxkGhkaDsvwfZb8YBAoAnu3QrXGB0tbNP/tN+DaNTMFEwHQYDVR0OBBYEFAXonKHbbe+KdlYWNUxn5v5VwMJQMB8GA1UdIwQYMBaAFAXonKHbbe+KdlYWNUxn5v5VwMJQMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIgafdNb3gBP+f1C4aX+PVDqxoEJjRV40I0/g5ahkw5hX4CIQCRBxxZQPCstDRsokF8W5JVhT3CUzpPM3ayQw+gG6mELQ=="

// A CA certificate with a negative serial number: Node's X509 parser (the translator's) takes
// it, Go's refuses it when the reverse proxy's transport is provisioned; validation says so
// without loading anything (tests/e2e/isolation.test.ts uses it as the hostile object).
func TestNegativeSerialCAIsRefusedAtProvision(t *testing.T) {
	admin := running(t)
	cfg := fmt.Sprintf(`{"apps":{"http":{"servers":{"s":{"listen":["127.0.0.1:%d"],"routes":[{"handle":[{"handler":"reverse_proxy","upstreams":[{"dial":"127.0.0.1:9"}],"transport":{"protocol":"http","tls":{"server_name":"x","ca":{"provider":"inline","trusted_ca_certs":[%q]}}}}]}]}}}}}`,
		caddytest.FreePort(t), negativeSerialCA)
	status, body := post(t, admin, []byte(cfg))
	if status != http.StatusBadRequest || !strings.Contains(body, "negative serial number") {
		t.Fatalf("status %d: %s", status, body)
	}
}

func TestUnknownFieldsAndBadJSONAreRefused(t *testing.T) {
	admin := running(t)
	for _, body := range []string{`{"apps":{"http":{"servers":{"s":{"nope":1}}}}}`, `{"apps":`, `{"unknown":1}`} {
		if status, got := post(t, admin, []byte(body)); status != http.StatusBadRequest {
			t.Errorf("%s: status %d: %s", body, status, got)
		}
	}
}

func TestBodyIsCappedAndOnlyPOSTIsAllowed(t *testing.T) {
	admin := running(t)
	big := append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), MaxBodyBytes)...)
	if status, body := post(t, admin, big); status != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d: %.200s", status, body)
	}
	if got := statusOf(t, admin, http.MethodGet, Path, ""); got != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d", got)
	}
}

func TestConcurrentValidations(t *testing.T) {
	admin := running(t)
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	ports := make([]int, 16)
	for i := range ports {
		ports[i] = caddytest.FreePort(t)
	}
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			handler := "static_response"
			want := http.StatusOK
			if i%2 == 1 {
				handler, want = "no_such_handler", http.StatusBadRequest
			}
			res, err := admin.Client.Post(admin.URL+Path, "application/json", strings.NewReader(server(ports[i], handler)))
			if err != nil {
				errs <- err.Error()
				return
			}
			res.Body.Close()
			if res.StatusCode != want {
				errs <- fmt.Sprintf("%d: status %d, want %d", i, res.StatusCode, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
