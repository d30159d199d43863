package routetable

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"kengine.io/gateway/proxy/internal/caddytest"
)

func TestMain(m *testing.M) { caddytest.Main(m, "routetable") }

// freePort is a loopback port nothing listens on right now.
func freePort(t *testing.T) int { return caddytest.FreePort(t) }

func staticRoutes(body string) string {
	return fmt.Sprintf(`[{"handle":[{"handler":"static_response","status_code":200,"body":%q}]}]`, body)
}

// A real Caddy (caddy.Load, in-process) with the handler on a loopback port and its admin API on
// a unix socket (as in the product): deltas through the admin API take effect at once on the same TCP connection, a reverse_proxy added by a delta
// proxies, and a config load that replaces the handler brings back the config's table.
func TestEndToEndDeltasThroughTheAdminAPI(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "backend saw "+r.Host)
	}))
	defer backend.Close()
	admin := caddytest.AdminSocket(t)
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	config := fmt.Sprintf(`{
	  "admin": {"listen": %q},
	  "apps": {"http": {"servers": {"s": {
	    "listen": [%q], "automatic_https": {"disable": true},
	    "routes": [
	      {"handle": [{"handler": "kengine_route_table", "id": "e2e/s", "hosts": {"old.test": %s}}]},
	      {"handle": [{"handler": "static_response", "status_code": 404, "body": "no route"}]}
	    ]}}}}}`, admin.Listen, httpAddr, staticRoutes("old"))
	if err := caddy.Load([]byte(config), true); err != nil {
		t.Fatal(err)
	}

	var dials atomic.Int64
	client := &http.Client{Transport: &http.Transport{
		MaxConnsPerHost: 1,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	get := func(host string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+httpAddr+"/", nil)
		req.Host = host
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", host, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, admin.URL+AdminPrefix+path, strings.NewReader(body))
		resp, err := admin.Client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	if code, body := get("old.test"); code != 200 || body != "old" {
		t.Fatalf("old.test: %d %q", code, body)
	}
	proxy := fmt.Sprintf(`[{"handle":[{"handler":"reverse_proxy","upstreams":[{"dial":%q}]}]}]`, backend.Listener.Addr().String())
	if code, body := call("PUT", "e2e%2Fs/hosts/new.test", proxy); code != 200 {
		t.Fatalf("PUT new.test: %d %s", code, body)
	}
	if code, body := get("New.Test:80"); code != 200 || body != "backend saw New.Test:80" {
		t.Errorf("new.test right after its delta: %d %q", code, body)
	}
	if code, body := call("DELETE", "e2e%2Fs/hosts/old.test", ""); code != 200 {
		t.Fatalf("DELETE old.test: %d %s", code, body)
	}
	if code, body := get("old.test"); code != 404 || body != "no route" {
		t.Errorf("old.test right after its removal: %d %q", code, body)
	}
	code, body := call("PUT", "e2e%2Fs/hosts/bad.test", `[{"handle":[{"handler":"reverse_proxy","load_balancing":{"selection_policy":{"policy":"no_such_policy"}}}]}]`)
	if code != 400 || !strings.Contains(body, "bad.test") {
		t.Errorf("a delta that does not provision: %d %s", code, body)
	}
	code, body = call("GET", "", "")
	var infos []Info
	if err := json.Unmarshal([]byte(body), &infos); code != 200 || err != nil || len(infos) != 1 || infos[0].Version != 3 || infos[0].Hosts != 1 {
		t.Errorf("GET of the tables: %d %s", code, body)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d connections for the requests, want 1: the listener must keep the connection", n)
	}

	// A config load replacing the handler: the config's table again (a load of the same bytes
	// needs forceReload, Cache-Control: must-revalidate over the API).
	if err := caddy.Load([]byte(config), true); err != nil {
		t.Fatal(err)
	}
	if code, body := get("old.test"); code != 200 || body != "old" {
		t.Errorf("old.test after the config load: %d %q", code, body)
	}
	if code, _ := get("new.test"); code != 404 {
		t.Errorf("new.test after the config load: %d", code)
	}
	if code, body = call("GET", "e2e%2Fs", ""); code != 200 || !strings.Contains(body, `"version":1`) {
		t.Errorf("GET after the config load: %d %s", code, body)
	}
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	if tb := lookupTable("e2e/s"); tb != nil {
		t.Error("the table is still registered after Caddy stopped")
	}
}
