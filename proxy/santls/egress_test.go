package santls

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	"kengine.io/gateway/proxy/internal/caddytest"
	"kengine.io/gateway/proxy/internal/egress"
)

func TestMain(m *testing.M) { caddytest.Main(m, "santls") }

// names is a resolver for tests: each name answers the given addresses.
type names map[string][]string

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, s := range n[host] {
		out = append(out, netip.MustParseAddr(s))
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

// countingServer is a loopback HTTP server that counts the connections it accepted.
func countingServer(t *testing.T, tls bool) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "loopback backend")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, &conns
}

// A real reverse_proxy with the kengine_http transport, its upstream a name that resolves to
// 127.0.0.1 where a backend listens: with the guard, 502 and the backend sees no connection,
// in each way the transport dials; without it, the same config reaches the backend.
func TestGuardedReverseProxyNeverReachesLoopback(t *testing.T) {
	defer func(r egress.Resolver) { egress.DefaultResolver = r }(egress.DefaultResolver)
	egress.DefaultResolver = names{"backend.tenant.test": {"127.0.0.1"}, "v6.tenant.test": {"::1", "::ffff:127.0.0.1"}}

	plain, plainConns := countingServer(t, false)
	secure, secureConns := countingServer(t, true)
	plainPort := plain.Listener.Addr().(*net.TCPAddr).Port
	securePort := secure.Listener.Addr().(*net.TCPAddr).Port
	sockDir, err := os.MkdirTemp("", "kg-up-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "up.sock")
	unixLn, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var unixConns atomic.Int64
	unixSrv := &http.Server{Handler: http.NotFoundHandler(), ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			unixConns.Add(1)
		}
	}}
	go func() { _ = unixSrv.Serve(unixLn) }()
	defer unixSrv.Close()

	admin := caddytest.AdminSocket(t)
	httpAddr := fmt.Sprintf("127.0.0.1:%d", caddytest.FreePort(t))
	guard := map[string]any{"deny": []string{"10.96.0.0/12"}}
	type route struct {
		path      string
		dial      string
		transport map[string]any
		conns     *atomic.Int64
	}
	routes := []route{
		{"/name", fmt.Sprintf("backend.tenant.test:%d", plainPort), map[string]any{"egress_guard": guard}, plainConns},
		{"/v6", fmt.Sprintf("v6.tenant.test:%d", plainPort), map[string]any{"egress_guard": guard}, plainConns},
		{"/literal", fmt.Sprintf("127.0.0.1:%d", plainPort), map[string]any{"egress_guard": guard}, plainConns},
		{"/localhost", fmt.Sprintf("localhost:%d", plainPort), map[string]any{"egress_guard": map[string]any{}}, plainConns},
		{"/h2c", fmt.Sprintf("backend.tenant.test:%d", plainPort), map[string]any{"egress_guard": guard, "versions": []string{"h2c"}}, plainConns},
		{"/h1h2", fmt.Sprintf("backend.tenant.test:%d", plainPort), map[string]any{"egress_guard": guard, "versions": []string{"1.1", "2"}}, plainConns},
		{"/proxy-protocol", fmt.Sprintf("backend.tenant.test:%d", plainPort), map[string]any{"egress_guard": guard, "proxy_protocol": "v2"}, plainConns},
		{"/tls", fmt.Sprintf("backend.tenant.test:%d", securePort), map[string]any{"egress_guard": guard,
			"tls": map[string]any{"insecure_skip_verify": true}}, secureConns},
		{"/tls-placeholder-sni", fmt.Sprintf("backend.tenant.test:%d", securePort), map[string]any{"egress_guard": guard,
			"tls": map[string]any{"insecure_skip_verify": true, "server_name": "{http.request.host}"}}, secureConns},
		{"/unix", "unix/" + sock, map[string]any{"egress_guard": guard}, &unixConns},
	}
	var caddyRoutes []any
	for _, r := range routes {
		tr := map[string]any{"protocol": "kengine_http"}
		for k, v := range r.transport {
			tr[k] = v
		}
		caddyRoutes = append(caddyRoutes, map[string]any{
			"match":    []any{map[string]any{"path": []string{r.path}}},
			"handle":   []any{map[string]any{"handler": "reverse_proxy", "transport": tr, "upstreams": []any{map[string]any{"dial": r.dial}}}},
			"terminal": true,
		})
	}
	// The control: the same name without the guard reaches the backend.
	caddyRoutes = append(caddyRoutes, map[string]any{
		"match": []any{map[string]any{"path": []string{"/unguarded"}}},
		"handle": []any{map[string]any{"handler": "reverse_proxy", "transport": map[string]any{"protocol": "kengine_http"},
			"upstreams": []any{map[string]any{"dial": fmt.Sprintf("127.0.0.1:%d", plainPort)}}}},
	})
	config, err := json.Marshal(map[string]any{
		"admin": map[string]any{"listen": admin.Listen},
		"apps": map[string]any{"http": map[string]any{"servers": map[string]any{"s": map[string]any{
			"listen": []string{httpAddr}, "automatic_https": map[string]any{"disable": true}, "routes": caddyRoutes,
		}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := caddy.Load(config, true); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = caddy.Stop() }()

	get := func(path string) (int, string) {
		t.Helper()
		res, err := http.Get("http://" + httpAddr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, r := range routes {
		before := r.conns.Load()
		if code, body := get(r.path); code != http.StatusBadGateway {
			t.Errorf("%s: %d %q, want 502", r.path, code, body)
		}
		if n := r.conns.Load() - before; n != 0 {
			t.Errorf("%s: the loopback backend accepted %d connections", r.path, n)
		}
	}
	if code, body := get("/unguarded"); code != http.StatusOK || body != "loopback backend" {
		t.Fatalf("without the guard: %d %q", code, body)
	}
	if plainConns.Load() == 0 {
		t.Fatal("the control request made no connection")
	}
}

// Caddy's dialer dials the checked literal, not the name: the dial info reverse_proxy puts in
// the context is replaced (a name that resolves to a refused and an unreachable address: the
// dial error names the unreachable literal, never a lookup of the name by Caddy's dialer).
func TestGuardHandsCaddysDialerTheCheckedLiteral(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	tr := &Transport{
		HTTPTransport: reverseproxy.HTTPTransport{DialTimeout: caddy.Duration(200 * time.Millisecond)},
		EgressGuard:   &egress.Config{},
	}
	if err := tr.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Cleanup() }()
	tr.guard.Resolver = names{"backend.test": {"127.0.0.1", "192.0.2.1"}}
	// With dial info (as reverse_proxy sends), and without (a bare round trip).
	withInfo := context.WithValue(context.Background(), dialInfoKey, reverseproxy.DialInfo{
		Network: "tcp", Address: "backend.test:80", Host: "backend.test", Port: "80",
	})
	if info, ok := reverseproxy.GetDialInfo(withInfo); !ok || info.Address != "backend.test:80" {
		t.Fatal("dialInfoKey is not reverse_proxy's dial info key")
	}
	for name, ctx := range map[string]context.Context{"dial info": withInfo, "bare": context.Background()} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://backend.test/", nil)
		_, err := tr.RoundTrip(req)
		if err == nil || !strings.Contains(err.Error(), "192.0.2.1:80") || strings.Contains(err.Error(), "lookup") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestGuardRefusesSettingsThatBypassIt(t *testing.T) {
	for _, c := range []struct {
		tr   Transport
		want string
	}{
		{Transport{HTTPTransport: reverseproxy.HTTPTransport{Versions: []string{"3"}}}, "HTTP/3"},
		{Transport{HTTPTransport: reverseproxy.HTTPTransport{ForwardProxyURL: "http://proxy.example:3128"}}, "forward_proxy_url"},
		{Transport{HTTPTransport: reverseproxy.HTTPTransport{NetworkProxyRaw: json.RawMessage(`{"from":"none"}`)}}, "network_proxy"},
		{Transport{HTTPTransport: reverseproxy.HTTPTransport{Resolver: &reverseproxy.UpstreamResolver{Addresses: []string{"10.0.0.10"}}}}, "resolver"},
		{Transport{EgressGuard: &egress.Config{Deny: []string{"10.0.0.0/99"}}}, "deny[0]"},
	} {
		if c.tr.EgressGuard == nil {
			c.tr.EgressGuard = &egress.Config{}
		}
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		err := c.tr.Provision(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v", c.want, err)
		}
	}
}
