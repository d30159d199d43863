package extauth

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"kengine.io/gateway/proxy/internal/caddytest"
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
	if s.method != http.MethodPost || s.uri != "/auth/a%2Fb/c?q=1&r=two" || s.host != "app.example.com" {
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
