package extauth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func nginxAuth(t *testing.T, dial string, grant ...string) *ExtAuth {
	return provisioned(t, &ExtAuth{Dial: []string{dial}, Mode: ModeIngressNginx, Path: "/oauth2/auth?rd=x", Host: "auth.team.svc", AllowedResponseHeaders: grant})
}

func TestNginxModeAsksWithGETAtTheExactPathWithTheClientsHeadersAndNoBody(t *testing.T) {
	dial, got := authServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	req := clientRequest(`{"a":1}`)
	req.RemoteAddr = "192.0.2.7:4711"
	req.Header.Set("X-Forwarded-For", "10.0.0.1")
	req.Header.Set("X-Original-URL", "http://forged/")
	rec, seen := serve(t, nginxAuth(t, dial), req)
	if rec.Code != http.StatusOK || !seen.ran {
		t.Fatalf("a 2xx answer must let the request through: %d, ran=%v", rec.Code, seen.ran)
	}
	a := <-got
	if a.method != http.MethodGet || a.uri != "/oauth2/auth?rd=x" || a.host != "auth.team.svc" || a.body != "" || a.contentLength != 0 {
		t.Fatalf("authorization request: %+v", a)
	}
	want := map[string]string{
		"Authorization":           "Bearer token",
		"X-Tenant":                "t1",
		"X-Original-Url":          "http://app.example.com/a/b/c?q=1&r=two", // the routed path (cleaned)
		"X-Original-Method":       "POST",
		"X-Auth-Request-Redirect": "/a/b/c?q=1&r=two",
		"X-Forwarded-Host":        "app.example.com",
		"X-Forwarded-Proto":       "http",
		"X-Real-Ip":               "192.0.2.7",
		"X-Forwarded-For":         "192.0.2.7",
		"Content-Type":            "",
	}
	for name, v := range want {
		if got := strings.Join(a.header.Values(name), ","); got != v {
			t.Errorf("%s: got %q, want %q", name, got, v)
		}
	}
}

func TestNginxModeAnswers(t *testing.T) {
	for _, c := range []struct {
		answer, want int
		www          string
	}{
		{http.StatusUnauthorized, http.StatusUnauthorized, `Basic realm="x"`},
		{http.StatusForbidden, http.StatusForbidden, ""},
		{http.StatusNotFound, http.StatusInternalServerError, ""},
		{http.StatusFound, http.StatusInternalServerError, ""},
		{http.StatusBadGateway, http.StatusInternalServerError, ""},
	} {
		dial, _ := authServer(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("WWW-Authenticate", `Basic realm="x"`)
			w.Header().Set("X-Secret", "kept by the auth server")
			w.WriteHeader(c.answer)
			_, _ = w.Write([]byte("auth server body"))
		})
		rec, seen := serve(t, nginxAuth(t, dial), clientRequest(""))
		if seen.ran || rec.Code != c.want || rec.Header().Get("WWW-Authenticate") != c.www || rec.Header().Get("X-Secret") != "" || rec.Body.String() != "" {
			t.Errorf("answer %d: got %d %v %q (ran=%v)", c.answer, rec.Code, rec.Header(), rec.Body.String(), seen.ran)
		}
	}
}

func TestNginxModeGrantsOnlyTheListedHeadersReplacingTheClients(t *testing.T) {
	dial, _ := authServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-User", "alice")
		w.Header().Set("X-Email", "alice@example.com")
		w.WriteHeader(http.StatusOK)
	})
	req := clientRequest("")
	req.Header.Set("X-User", "admin")
	_, seen := serve(t, nginxAuth(t, dial, "X-User"), req)
	if !seen.ran || seen.header.Get("X-User") != "alice" || seen.header.Get("X-Email") != "" {
		t.Fatalf("granted: %v", seen.header)
	}
	_, seen = serve(t, nginxAuth(t, dial), clientRequest(""))
	if !seen.ran || seen.header.Get("X-User") != "" || seen.header.Get("X-Email") != "" {
		t.Fatalf("without a list nothing is granted: %v", seen.header)
	}
}

func TestNginxModeUnreachableIs500(t *testing.T) {
	rec, seen := serve(t, nginxAuth(t, "127.0.0.1:1"), clientRequest(""))
	if seen.ran || rec.Code != http.StatusInternalServerError {
		t.Fatalf("got %d ran=%v", rec.Code, seen.ran)
	}
	rec, seen = serve(t, provisioned(t, &ExtAuth{Mode: ModeIngressNginx, Path: "/"}), httptest.NewRequest(http.MethodGet, "http://a/", nil))
	if seen.ran || rec.Code != http.StatusInternalServerError {
		t.Fatalf("no endpoints: got %d ran=%v", rec.Code, seen.ran)
	}
}

func TestNginxModeValidate(t *testing.T) {
	for _, a := range []ExtAuth{
		{Mode: ModeIngressNginx, Path: "relative"},
		{Mode: ModeIngressNginx, Path: "/", PathPrefix: "/p"},
		{Mode: ModeIngressNginx, Path: "/", MaxBodyBytes: 10},
		{Mode: ModeIngressNginx, Path: "/", AllowedRequestHeaders: []string{"X"}},
		{Mode: ModeIngressNginx, Path: "/", Host: "a b"},
		{Mode: "envoy", Path: "/"},
		{Path: "/only-for-nginx"},
	} {
		if err := a.Validate(); err == nil {
			t.Errorf("%+v: want an error", a)
		}
	}
	if err := (&ExtAuth{Mode: ModeIngressNginx, Path: "/auth", Host: "auth.ns.svc:8080"}).Validate(); err != nil {
		t.Fatal(err)
	}
}
