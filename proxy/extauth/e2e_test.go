package extauth

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/caddyserver/caddy/v2"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	"kengine.io/gateway/proxy/internal/caddytest"
	// The goldens render Bundled listeners as route tables.
	_ "kengine.io/gateway/proxy/routetable"
)

func TestMain(m *testing.M) { caddytest.Main(m, "extauth") }

// recorder is a loopback HTTP server that logs what it got and answers with `answer`.
type recorder struct {
	mu   sync.Mutex
	got  []*http.Request
	body []string
	srv  *httptest.Server
}

func newRecorder(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *recorder {
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.got = append(rec.got, r.Clone(r.Context()))
		rec.body = append(rec.body, string(b))
		rec.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (r *recorder) addr() string { return strings.TrimPrefix(r.srv.URL, "http://") }

// seen is the requests (and bodies) whose path contains `part`.
func (r *recorder) seen(part string) ([]*http.Request, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var reqs []*http.Request
	var bodies []string
	for i, q := range r.got {
		if strings.Contains(q.URL.Path, part) {
			reqs = append(reqs, q)
			bodies = append(bodies, r.body[i])
		}
	}
	return reqs, bodies
}

// The controller's golden for listener filters (tests/golden/listener-filters.*), loaded into a
// real Caddy (in-process) with its endpoints pointed at loopback servers: the filters run
// before the listener's route matching, in order, only on the filtered listeners.
func TestGoldenListenerFiltersOnRealCaddy(t *testing.T) {
	raw, err := os.ReadFile("../../tests/golden/listener-filters.caddy.json")
	if err != nil {
		t.Fatal(err)
	}
	var goldens map[string]json.RawMessage
	if err := json.Unmarshal(raw, &goldens); err != nil {
		t.Fatal(err)
	}
	backend := func(name string) *recorder {
		return newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"backend": name, "user": r.Header.Get("X-Auth-User")})
		})
	}
	web, admin := backend("web"), backend("admin")
	auth := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "deny") {
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, "denied by auth")
			return
		}
		if g := r.URL.Query().Get("grant"); g != "" {
			w.Header().Set("X-Auth-User", g)
		}
		w.WriteHeader(http.StatusOK)
	})
	auth2 := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Auth-User", r.URL.Query().Get("second"))
		w.Header().Set("X-Ignored", "not allowed")
		w.WriteHeader(http.StatusOK)
	})
	http80 := fmt.Sprintf("127.0.0.1:%d", caddytest.FreePort(t))
	http81 := fmt.Sprintf("127.0.0.1:%d", caddytest.FreePort(t))
	config := strings.NewReplacer(
		`"127.0.0.22:3000"`, fmt.Sprintf("%q", web.addr()),
		`"127.0.0.23:3000"`, fmt.Sprintf("%q", admin.addr()),
		`"127.0.0.24:3000"`, fmt.Sprintf("%q", auth.addr()),
		`"127.0.0.25:3000"`, fmt.Sprintf("%q", auth2.addr()),
		`"kengine-http/:80"`, fmt.Sprintf("%q", http80),
		`"kengine-http/:81"`, fmt.Sprintf("%q", http81),
	).Replace(string(goldens["default/gw"]))
	// The admin API on a unix socket of the test's, never on TCP.
	adminAPI := caddytest.AdminSocket(t)
	if err := caddy.Load(caddytest.WithAdmin(t, []byte(config), adminAPI.Listen), true); err != nil {
		t.Fatalf("Caddy refused the golden: %v", err)
	}
	t.Cleanup(func() { _ = caddy.Stop() })

	type reply struct {
		status int
		body   string
		header http.Header
	}
	do := func(addr, method, host, path, body string, header map[string]string) reply {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Host = host
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s%s: %v", method, host, path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return reply{res.StatusCode, string(b), res.Header}
	}
	backendOf := func(r reply) string {
		var v struct{ Backend, User string }
		_ = json.Unmarshal([]byte(r.body), &v)
		return v.Backend + "/" + v.User
	}

	// Granted: route matching sees the header the authorization server granted (rule 1).
	r := do(http80, http.MethodPost, "auth.example.com", "/lf/a?grant=alice", "payload",
		map[string]string{"Authorization": "Bearer t", "X-Tenant": "t1", "X-Secret": "s"})
	if r.status != 200 || backendOf(r) != "admin/alice" {
		t.Fatalf("granted: %d %s", r.status, r.body)
	}
	reqs, bodies := auth.seen("/lf/a")
	if len(reqs) != 1 {
		t.Fatalf("auth asked %d times", len(reqs))
	}
	q := reqs[0]
	if q.Method != http.MethodPost || q.URL.RequestURI() != "/check/lf/a?grant=alice" || q.Host != "auth.example.com" ||
		q.Header.Get("Authorization") != "Bearer t" || q.Header.Get("X-Tenant") != "t1" ||
		q.Header.Get("X-Secret") != "" || bodies[0] != "" {
		t.Fatalf("authorization request: %s %s Host %s %v body %q", q.Method, q.URL.RequestURI(), q.Host, q.Header, bodies[0])
	}
	// Granted without the header: rule 2.
	if r := do(http80, http.MethodGet, "auth.example.com", "/lf/b", "", nil); backendOf(r) != "web/" {
		t.Fatalf("no grant: %d %s", r.status, r.body)
	}
	// Refused: the authorization server's answer, no backend reached.
	r = do(http80, http.MethodGet, "auth.example.com", "/lf/deny", "", nil)
	if r.status != http.StatusUnauthorized || r.body != "denied by auth" || r.header.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("denied: %d %q %v", r.status, r.body, r.header)
	}
	if w, _ := web.seen("/lf/deny"); len(w) != 0 {
		t.Fatal("a refused request reached the backend")
	}
	// The listener without filters on the same port asks nobody.
	if r := do(http80, http.MethodGet, "other.example.com", "/lf/open?grant=alice", "", nil); backendOf(r) != "web/" {
		t.Fatalf("open listener: %d %s", r.status, r.body)
	}
	if a, _ := auth.seen("/lf/open"); len(a) != 0 {
		t.Fatal("the unfiltered listener asked the authorization server")
	}
	// Two filters in order: the first grants alice, the second (4 bytes of the body, prefix
	// /second, only x-auth-user copied) replaces it with bob.
	r = do(http80, http.MethodPut, "two.example.com", "/lf/two?grant=alice&second=bob", "0123456789", nil)
	if backendOf(r) != "web/bob" {
		t.Fatalf("two filters: %d %s", r.status, r.body)
	}
	second, secondBodies := auth2.seen("/lf/two")
	if len(second) != 1 || second[0].URL.Path != "/second/lf/two" || secondBodies[0] != "0123" {
		t.Fatalf("second filter asked %d times: %v %q", len(second), second, secondBodies)
	}
	r = do(http80, http.MethodPut, "two.example.com", "/lf/two?grant=alice&second=alice", "x", nil)
	if backendOf(r) != "admin/alice" {
		t.Fatalf("two filters, both grant alice: %d %s", r.status, r.body)
	}
	// The first refuses: the second is never asked.
	if r := do(http80, http.MethodGet, "two.example.com", "/lf/two-deny", "", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("first refuses: %d", r.status)
	}
	if s, _ := auth2.seen("/lf/two-deny"); len(s) != 0 {
		t.Fatal("the second filter ran after the first refused")
	}
	// An authorization Service without ready endpoints: every request refused.
	if r := do(http81, http.MethodGet, "any.example.com", "/lf/down", "", nil); r.status != http.StatusForbidden {
		t.Fatalf("no endpoints: %d", r.status)
	}
	if w, _ := web.seen("/lf/down"); len(w) != 0 {
		t.Fatal("a request got through an authorization Service without endpoints")
	}
}

// A real Caddy: the authorization server refuses /admin and what is under it; routing sends
// /admin to the admin backend. Every spelling of a path that routing reads as /admin is asked
// as /admin and refused, and the backends get the path routing used.
func TestAuthSeesThePathRoutingUses(t *testing.T) {
	web := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "web "+r.RequestURI) })
	admin := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "admin "+r.RequestURI) })
	auth := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if p := strings.TrimPrefix(r.URL.RawPath, "/check"); strings.HasPrefix(r.URL.Path, "/check/admin") || strings.HasPrefix(p, "/admin") {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	httpAddr := fmt.Sprintf("127.0.0.1:%d", caddytest.FreePort(t))
	adminAPI := caddytest.AdminSocket(t)
	config := fmt.Sprintf(`{"admin": {"listen": %q}, "apps": {"http": {"servers": {"s": {
	  "listen": [%q], "automatic_https": {"disable": true},
	  "routes": [
	    {"handle": [{"handler": "kengine_ext_auth", "dial": [%q], "path_prefix": "/check"}]},
	    {"match": [{"path_regexp": {"pattern": "^/admin(?:/.*)?$"}}], "handle": [{"handler": "reverse_proxy", "upstreams": [{"dial": %q}]}], "terminal": true},
	    {"handle": [{"handler": "reverse_proxy", "upstreams": [{"dial": %q}]}]}
	  ]}}}}}`, adminAPI.Listen, httpAddr, auth.addr(), admin.addr(), web.addr())
	if err := caddy.Load([]byte(config), true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = caddy.Stop() })
	// A raw request line: Go's client would send these paths as written too, but this way
	// nothing in between can change them.
	send := func(target string) (int, string) {
		t.Helper()
		conn, err := net.Dial("tcp", httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: app.example.com\r\nConnection: close\r\n\r\n", target)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, target := range []string{"/admin", "/public/../admin", "/public/%2e%2e/admin", "/public/%2E%2e/admin/users",
		"/public%2F..%2Fadmin", "//admin", "/./admin", "/public/./../admin/", "/%61dmin", "/public/../../admin"} {
		if code, body := send(target); code != http.StatusForbidden {
			t.Errorf("%s: %d %q, want 403", target, code, body)
		}
	}
	if reqs, _ := admin.seen(""); len(reqs) != 0 {
		t.Fatalf("the admin backend was reached %d times", len(reqs))
	}
	for target, want := range map[string]string{
		"/public/x":             "web /public/x",
		"/public/a/../b":        "web /public/b",
		"/public//x/./y?q=../a": "web /public/x/y?q=../a",
		"/public%2Fx":           "web /public/x",
	} {
		if code, body := send(target); code != http.StatusOK || body != want {
			t.Errorf("%s: %d %q, want %q", target, code, body, want)
		}
	}
}
