package extauth

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"kengine.io/gateway/proxy/internal/caddytest"
	"kengine.io/gateway/proxy/internal/egress"
)

// asked is what the authorization server saw.
type asked struct {
	method, uri, host, body string
	contentLength           int64
	header                  http.Header
}

// authServer answers with `answer` and reports each request it got.
func authServer(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) (string, chan asked) {
	t.Helper()
	got := make(chan asked, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- asked{r.Method, r.RequestURI, r.Host, string(b), r.ContentLength, r.Header.Clone()}
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), got
}

func provisioned(t *testing.T, a *ExtAuth) *ExtAuth { return caddytest.Provisioned(t, a) }

// reached is what the next handler (route matching and the backend) saw, if it ran.
type reached struct {
	ran    bool
	header http.Header
	host   string
	body   string
}

func serve(t *testing.T, a *ExtAuth, req *http.Request) (*httptest.ResponseRecorder, *reached) {
	t.Helper()
	rec := httptest.NewRecorder()
	seen := &reached{}
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		b, _ := io.ReadAll(r.Body)
		*seen = reached{true, r.Header.Clone(), r.Host, string(b)}
		w.WriteHeader(http.StatusOK)
		return nil
	})
	if err := a.ServeHTTP(rec, req, next); err != nil {
		t.Fatal(err)
	}
	return rec, seen
}

func clientRequest(body string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "http://app.example.com/a%2Fb/c?q=1&r=two", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer token")
	req.Header.Set("X-Tenant", "t1")
	req.Header.Set("X-Secret", "not for the auth server")
	req.Header.Set("Content-Type", "application/json")
	return req
}

func TestAuthRequestCarriesOnlyTheRequiredAndAllowedHeadersAndNoBody(t *testing.T) {
	dial, got := authServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	a := provisioned(t, &ExtAuth{Dial: []string{dial}, PathPrefix: "/auth/", AllowedRequestHeaders: []string{"x-tenant", "Host"}})
	_, seen := serve(t, a, clientRequest(`{"a":1}`))
	s := <-got
	// The path as routing sees it: %2F decoded (see TestAuthServerAndBackendSeeTheRoutedPath).
	if s.method != http.MethodPost || s.uri != "/auth/a/b/c?q=1&r=two" || s.host != "app.example.com" {
		t.Fatalf("auth request %s %s Host %s", s.method, s.uri, s.host)
	}
	if s.header.Get("Authorization") != "Bearer token" || s.header.Get("X-Tenant") != "t1" {
		t.Fatalf("required or allowed header missing: %v", s.header)
	}
	if s.header.Get("X-Secret") != "" || s.header.Get("Content-Type") != "" {
		t.Fatalf("a header that was not allowed reached the auth server: %v", s.header)
	}
	if s.body != "" || s.contentLength != 0 {
		t.Fatalf("body forwarded without forwardBody: %q (%d)", s.body, s.contentLength)
	}
	if !seen.ran || seen.body != `{"a":1}` {
		t.Fatalf("the backend did not get the whole body: %+v", seen)
	}
}

func TestForwardBodyTruncatesToMaxSizeAndKeepsTheBodyWhole(t *testing.T) {
	dial, got := authServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	a := provisioned(t, &ExtAuth{Dial: []string{dial}, MaxBodyBytes: 4})
	_, seen := serve(t, a, clientRequest("0123456789"))
	s := <-got
	if s.body != "0123" || s.contentLength != 4 {
		t.Fatalf("auth server got %q (Content-Length %d), want the first 4 bytes", s.body, s.contentLength)
	}
	if seen.body != "0123456789" {
		t.Fatalf("backend got %q", seen.body)
	}
}

func TestRefusalIsTheAuthServersAnswerAndTheBackendIsNeverReached(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusFound, http.StatusNoContent, http.StatusInternalServerError} {
		dial, _ := authServer(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.Header().Set("Location", "/login")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, "denied")
		})
		a := provisioned(t, &ExtAuth{Dial: []string{dial}})
		rec, seen := serve(t, a, clientRequest(""))
		if seen.ran {
			t.Fatalf("status %d: the request went on", status)
		}
		wantBody := "denied"
		if status == http.StatusNoContent {
			wantBody = ""
		}
		if rec.Code != status || rec.Body.String() != wantBody || rec.Header().Get("WWW-Authenticate") != "Bearer" {
			t.Fatalf("status %d: client got %d %q %v", status, rec.Code, rec.Body.String(), rec.Header())
		}
	}
}

func TestGrantCopiesAllowedResponseHeadersButNeverHost(t *testing.T) {
	dial, _ := authServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-User", "alice")
		w.Header().Set("X-Other", "ignored")
		w.Header().Set("Host", "evil.example.com")
		w.WriteHeader(http.StatusOK)
	})
	a := provisioned(t, &ExtAuth{Dial: []string{dial}, AllowedResponseHeaders: []string{"x-user", "host", "X-Absent"}})
	req := clientRequest("")
	req.Header.Set("X-User", "forged by the client")
	_, seen := serve(t, a, req)
	if seen.header.Get("X-User") != "alice" || len(seen.header.Values("X-User")) != 1 {
		t.Fatalf("X-User = %v", seen.header.Values("X-User"))
	}
	if seen.header.Get("X-Other") != "" || seen.host != "app.example.com" || seen.header.Get("Host") != "" {
		t.Fatalf("unallowed header or Host changed: %v host %s", seen.header, seen.host)
	}
	if _, ok := seen.header["X-Absent"]; ok {
		t.Fatal("a header the answer did not have was added")
	}
}

func TestGrantWithoutAllowListCopiesEveryHeaderExceptHostAndTheAnswersOwn(t *testing.T) {
	dial, _ := authServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-User", "alice")
		w.Header().Set("X-Groups", "admins")
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Host", "evil.example.com")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "ok")
	})
	a := provisioned(t, &ExtAuth{Dial: []string{dial}})
	_, seen := serve(t, a, clientRequest(`{}`))
	if seen.header.Get("X-User") != "alice" || seen.header.Get("X-Groups") != "admins" {
		t.Fatalf("granted headers missing: %v", seen.header)
	}
	if seen.header.Get("Content-Type") != "application/json" || seen.host != "app.example.com" || seen.header.Get("Content-Length") != "" {
		t.Fatalf("the answer's own headers or Host reached the request: %v host %s", seen.header, seen.host)
	}
}

func TestUnreachableAuthServerRefusesWithStatusOnError(t *testing.T) {
	dial, _ := authServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	a := provisioned(t, &ExtAuth{Dial: []string{"127.0.0.1:1"}, Timeout: caddy.Duration(2 * time.Second)})
	rec, seen := serve(t, a, clientRequest(""))
	if seen.ran || rec.Code != http.StatusForbidden {
		t.Fatalf("unreachable: ran %v status %d", seen.ran, rec.Code)
	}
	slow := provisioned(t, &ExtAuth{Dial: []string{dial}, Timeout: caddy.Duration(time.Nanosecond), StatusOnError: 503})
	rec, seen = serve(t, slow, clientRequest(""))
	if seen.ran || rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("timed out: ran %v status %d", seen.ran, rec.Code)
	}
}

func TestNoEndpointsRefusesEveryRequest(t *testing.T) {
	a := provisioned(t, &ExtAuth{})
	rec, seen := serve(t, a, clientRequest(""))
	if seen.ran || rec.Code != http.StatusForbidden {
		t.Fatalf("no endpoints: ran %v status %d", seen.ran, rec.Code)
	}
}

func TestValidateRefusesBadValues(t *testing.T) {
	for _, a := range []ExtAuth{
		{Dial: []string{"x:1"}, MaxBodyBytes: -1},
		{Dial: []string{"x:1"}, StatusOnError: 200},
		{Dial: []string{"x:1"}, PathPrefix: "auth"},
	} {
		if err := a.Validate(); err == nil {
			t.Fatalf("%+v: accepted", a)
		}
	}
}

// The authorization server is asked the path routing matches on, and the request goes on
// carrying it (in canonical escaping), so the backend sees that path too.
func TestAuthServerAndBackendSeeTheRoutedPath(t *testing.T) {
	dial, got := authServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	a := provisioned(t, &ExtAuth{Dial: []string{dial}, PathPrefix: "/check"})
	for _, c := range []struct{ uri, want string }{
		{"/public/../admin", "/admin"},
		{"/public/%2e%2e/admin", "/admin"},
		{"/public/%2E%2E/admin", "/admin"},
		{"/public%2F..%2Fadmin", "/admin"},
		{"/public%2f%2e%2e%2fadmin", "/admin"},
		{"/public/.%2e/admin", "/admin"},
		{"/public/./../admin/", "/admin/"},
		{"//admin", "/admin"},
		{"/./admin", "/admin"},
		{"/public/..", "/"},
		{"/public/../../../admin", "/admin"},
		{"/a//b///c", "/a/b/c"},
		{"/%61dmin", "/admin"},
		{"/a%2Fb", "/a/b"},
		{"/a%20b/", "/a%20b/"},
		{"/a%252e%252e/b", "/a%252e%252e/b"},
		{"/public/x?q=/../admin", "/public/x?q=/../admin"},
		{"/public/%2e%2e/admin?q=1", "/admin?q=1"},
	} {
		req := httptest.NewRequest(http.MethodGet, "http://app.example.com/", nil)
		req.RequestURI = c.uri
		u, err := url.ParseRequestURI(c.uri)
		if err != nil {
			t.Fatal(err)
		}
		req.URL = u
		var backend string
		next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			backend = r.URL.RequestURI() + " " + r.RequestURI
			return nil
		})
		if err := a.ServeHTTP(httptest.NewRecorder(), req, next); err != nil {
			t.Fatal(err)
		}
		if s := <-got; s.uri != "/check"+c.want {
			t.Errorf("%s: auth server asked %s, want /check%s", c.uri, s.uri, c.want)
		}
		if backend != c.want+" "+c.want {
			t.Errorf("%s: the request went on as %q, want %s", c.uri, backend, c.want)
		}
	}
}

// A header the authorization server may grant comes only from it: the client's copy is gone
// when the answer does not set it. With no list, every answer header is granted and client
// headers the answer does not set stay (the documented behaviour).
func TestClientCopiesOfGrantableHeadersAreRemoved(t *testing.T) {
	dial, _ := authServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Groups", "users")
		w.WriteHeader(http.StatusOK)
	})
	a := provisioned(t, &ExtAuth{Dial: []string{dial}, AllowedResponseHeaders: []string{"X-User", "x-groups"}})
	req := clientRequest("")
	req.Header.Set("X-User", "admin")
	req.Header.Add("x-user", "root")
	req.Header.Set("X-Groups", "admins")
	req.Header.Set("X-Other", "kept")
	_, seen := serve(t, a, req)
	if _, ok := seen.header["X-User"]; ok || seen.header.Get("X-Groups") != "users" || seen.header.Get("X-Other") != "kept" {
		t.Fatalf("backend saw %v", seen.header)
	}
	all := provisioned(t, &ExtAuth{Dial: []string{dial}})
	req = clientRequest("")
	req.Header.Set("X-User", "admin")
	req.Header.Set("X-Groups", "admins")
	_, seen = serve(t, all, req)
	if seen.header.Get("X-User") != "admin" || seen.header.Get("X-Groups") != "users" {
		t.Fatalf("without a list: backend saw %v", seen.header)
	}
}

// A client that does not send the forwarded part of its body within body_timeout gets 408 from
// a real server; the authorization server and the backend are never reached.
func TestTricklingBodyGets408(t *testing.T) {
	dial, got := authServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	a := provisioned(t, &ExtAuth{Dial: []string{dial}, MaxBodyBytes: 1024, BodyTimeout: caddy.Duration(50 * time.Millisecond)})
	var backendRan atomic.Bool
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { backendRan.Store(true); return nil })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := a.ServeHTTP(w, r, next); err != nil {
			t.Error(err)
		}
	}))
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// 10 of the 2048 announced bytes, then nothing.
	_, _ = io.WriteString(conn, "POST /upload HTTP/1.1\r\nHost: app.example.com\r\nContent-Length: 2048\r\n\r\n0123456789")
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusRequestTimeout || !res.Close {
		t.Fatalf("status %d, close %v", res.StatusCode, res.Close)
	}
	if backendRan.Load() || len(got) != 0 {
		t.Fatal("a request without its body reached the authorization server or the backend")
	}
}

// With egress_guard, an authorization server on loopback is refused: status_on_error, and the
// server sees no connection.
func TestEgressGuardRefusesTheAuthServerOnLoopback(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := net.SplitHostPort(addr)
	for _, dial := range []string{addr, "localhost:" + port, "0x7f.1:" + port, "[::ffff:127.0.0.1]:" + port} {
		a := provisioned(t, &ExtAuth{Dial: []string{dial}, EgressGuard: &egress.Config{}, StatusOnError: http.StatusServiceUnavailable})
		rec, seen := serve(t, a, clientRequest(""))
		if seen.ran || rec.Code != http.StatusServiceUnavailable {
			t.Errorf("%s: ran %v, status %d", dial, seen.ran, rec.Code)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("the loopback authorization server accepted %d connections", n)
	}
	open := provisioned(t, &ExtAuth{Dial: []string{addr}})
	if rec, seen := serve(t, open, clientRequest("")); !seen.ran || rec.Code != http.StatusOK || conns.Load() == 0 {
		t.Fatalf("without the guard: ran %v, status %d", seen.ran, rec.Code)
	}
}

func TestMaxBodyBytesCeiling(t *testing.T) {
	if err := (&ExtAuth{MaxBodyBytes: MaxBodyBytesCeiling}).Validate(); err != nil {
		t.Fatalf("16 MiB: %v", err)
	}
	if err := (&ExtAuth{MaxBodyBytes: MaxBodyBytesCeiling + 1}).Validate(); err == nil || !strings.Contains(err.Error(), "16 MiB") {
		t.Fatalf("16 MiB + 1: %v", err)
	}
	if err := (&ExtAuth{BodyTimeout: -1}).Validate(); err == nil {
		t.Fatal("negative body_timeout accepted")
	}
}

// The process-wide budget: a request whose body would not fit is answered 503 before its body
// is read, and bytes held by finished requests are free again.
func TestBodyBudgetFullAnswers503(t *testing.T) {
	processBodyBytes.Reserve(ProcessMaxBodyBytes)
	defer processBodyBytes.Release(ProcessMaxBodyBytes)
	a := provisioned(t, &ExtAuth{Dial: []string{"127.0.0.1:1"}, MaxBodyBytes: 16})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("payload"))
	if err := a.ServeHTTP(rec, req, caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		t.Fatal("the request went on with the budget full")
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("got %d, want 503", rec.Code)
	}
	if rest, _ := io.ReadAll(req.Body); string(rest) != "payload" {
		t.Fatalf("the body was read: %q left", rest)
	}
}
